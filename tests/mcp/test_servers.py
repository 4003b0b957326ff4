"""What a server is before it runs: `[mcp.servers.NAME]` validated strictly, `env:NAME`
references kept as references (and named for redaction), the names the model sees,
agent types' `mcp:SERVER/GLOB` entries, and the rules `mcp:SERVER/TOOL=DECISION`."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.config import parse_config
from orchestrator.errors import ConfigError
from orchestrator.mcp import McpServer, McpTools, parse_selector, tool_name
from orchestrator.messages import ToolCall
from orchestrator.team.agent_files import load_definitions
from orchestrator.tools.base import WORKSPACE_TOOLS
from orchestrator.tools.permissions import PermissionPolicy, parse_rules

CONFIG = """
[mcp.servers.github]
command = "github-mcp"
args = ["stdio"]
env = { GITHUB_TOKEN = "env:GH_TOKEN" }

[mcp.servers.docs]
url = "https://docs.example/mcp"
headers = { Authorization = "env:DOCS_AUTH", X-Team = "core" }
tools = ["search*"]
timeout = 5
sampling = true
pin_check = 0
"""


def test_servers_in_config_become_server_objects_holding_references() -> None:
    config = parse_config(CONFIG)
    github = McpServer.of_config("github", config.mcp.servers["github"])
    docs = McpServer.of_config("docs", config.mcp.servers["docs"])
    assert (github.transport, github.where, github.secrets()) == (
        "stdio",
        "github-mcp stdio",
        ("GH_TOKEN",),
    )
    assert (docs.transport, docs.secrets(), docs.timeout) == ("http", ("DOCS_AUTH",), 5.0)
    assert (docs.sampling, github.sampling) == (True, False)  # refused unless allowed
    assert (docs.pin_check, github.pin_check) == (0.0, 60.0)  # 0: listed before each call
    assert docs.takes("search_all")
    assert not docs.takes("delete")
    assert repr(docs) == (
        "McpServer('docs', url='https://docs.example/mcp', "
        "headers={'Authorization': 'env:DOCS_AUTH', 'X-Team': '…'})"
    )
    resolved = docs.resolved(docs.headers, {"DOCS_AUTH": "Bearer abc"})
    assert resolved == {"Authorization": "Bearer abc", "X-Team": "core"}


@pytest.mark.parametrize(
    ("toml", "problem"),
    [
        ('command = "x"\nurl = "http://h/mcp"', "give either command"),
        ("timeout = 5", "give either command"),
        ('url = "http://h/mcp"\nargs = ["a"]', "args: only for a command"),
        ('command = "x"\nheaders = { A = "b" }', "headers: only for a url"),
        ('url = "ftp://h"', "is not an http:// or https:// address"),
        ('command = "x"\nenv = { T = "env:" }', "names no environment variable"),
        ('command = "x"\ntimeout = 0', "mcp.servers.s.timeout: Input should be greater than 0"),
        ('command = "x"\npin_check = -1', "mcp.servers.s.pin_check: Input should be greater"),
        ('command = "x"\nport = 1', "mcp.servers.s.port: Extra inputs are not permitted"),
    ],
)
def test_a_server_table_is_validated_strictly(toml: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        parse_config(f"[mcp.servers.s]\n{toml}\n")


def test_a_server_name_must_make_tool_names() -> None:
    with pytest.raises(ConfigError, match="'a__b' is not a server name"):
        parse_config('[mcp.servers.a__b]\ncommand = "x"\n')
    with pytest.raises(ConfigError, match="is not an MCP server name"):
        McpServer.stdio("has space", "x")
    assert tool_name("docs", "search") == "docs__search"
    with pytest.raises(ConfigError, match=r"cannot be offered to a model as 'docs__a\.b'"):
        tool_name("docs", "a.b")
    with pytest.raises(ConfigError, match="cannot be offered"):
        tool_name("docs", "x" * 60)


def test_an_agent_types_entries_name_servers_tools_by_glob() -> None:
    docs = McpServer.stdio("docs", "x")
    assert docs.allow("search*", "fetch") == ("mcp:docs/search*", "mcp:docs/fetch")
    assert docs.allow() == ("mcp:docs/*",)
    assert parse_selector("read_file") is None
    assert parse_selector("mcp:docs/search*") == ("docs", "search*")
    with pytest.raises(ConfigError, match="is not mcp:SERVER/TOOL"):
        parse_selector("mcp:docs")
    opened = McpTools((docs,), ())
    assert opened.names(["read_file", "mcp:docs/*"]) == ("read_file",)  # none listed
    with pytest.raises(ConfigError, match="names the MCP server 'web'"):
        opened.names(["mcp:web/*"])


def call(name: str) -> ToolCall:
    return ToolCall(id="1", name=name, arguments="{}")


def test_rules_name_an_mcp_servers_tools() -> None:
    rules = parse_rules(["mcp:docs/*=allow", "mcp:docs/post_comment=ask", "mcp:web/x=deny"])
    policy = PermissionPolicy(rules)
    decide = lambda name, read_only=False: policy.decide(call(name), read_only=read_only)  # noqa: E731
    assert decide("docs__search") == "allow"
    assert decide("docs__post_comment") == "ask"  # the last of equals wins
    assert decide("web__x", read_only=True) == "deny"
    assert decide("web__y") == "ask"  # no rule: the default for a tool that writes
    assert decide("docs") == "ask"
    for bad in ("mcp:docs=ask", "mcp:/x=ask", "mcp:d*/x=ask"):
        with pytest.raises(ValueError, match="an MCP rule is mcp:SERVER/TOOL=DECISION"):
            parse_rules([bad])
    with pytest.raises(ValueError, match="only shell rules take a pattern"):
        parse_rules(["grep:x=ask"])


def test_an_agent_file_names_mcp_tools_by_server_and_glob(tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "researcher.toml").write_text(
        'name = "researcher"\nprompt = "Find out."\ntools = ["read_file", "mcp:docs/search*"]\n'
    )
    definitions = load_definitions(
        project_dir=None, user_dir=tmp_path, trust=None, ask=None, known_tools=WORKSPACE_TOOLS
    )
    assert definitions.get("researcher").tools == ("read_file", "mcp:docs/search*")
    (agents / "researcher.toml").write_text('name = "researcher"\nprompt = "P"\ntools = ["web"]\n')
    with pytest.raises(ConfigError, match="unknown tool 'web'"):
        load_definitions(
            project_dir=None, user_dir=tmp_path, trust=None, ask=None, known_tools=WORKSPACE_TOOLS
        )
