"""Real MCP servers (server_app.py, written with the SDK) started under trio: over stdio
and streamable HTTP on 127.0.0.1, their tools listed as `SERVER__TOOL` with flags from
their annotations, called, their progress reported; and each way a server fails is one
line naming it, while the other servers go on."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import pytest
import trio

from orchestrator.errors import ConfigError, ToolFailed
from orchestrator.mcp import McpServer, McpTools, open_servers
from orchestrator.mcp.connection import sdk
from orchestrator.state.events import Event, ToolProgress
from orchestrator.tools import ToolContext, Workspace
from tests.mcp.conftest import APP, stdio_server


class Events:
    def __init__(self) -> None:
        self.seen: list[Event] = []
        self.progress = trio.Event()

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        self.seen.append(event)
        if isinstance(event, ToolProgress):
            self.progress.set()


def context(tmp_path: Path, events: Events | None = None) -> ToolContext:
    return ToolContext(workspace=Workspace(tmp_path), events=events)


async def call(opened: McpTools, name: str, ctx: ToolContext, **arguments: object) -> str:
    tool = next(t for t in opened.tools if t.name == name)
    output = await tool.run(tool.args_model.model_validate(arguments), ctx)
    return f"{output.status}: {output.content}"


async def test_a_stdio_servers_tools_are_named_and_flagged_from_its_annotations(
    tmp_path: Path,
) -> None:
    async with open_servers([stdio_server("docs")]) as opened:
        assert opened.failed == ()
        tools = {tool.name: tool for tool in opened.tools}
        assert sorted(tools) == [
            "docs__ask",
            "docs__big",
            "docs__cancelled_calls",
            "docs__crash",
            "docs__env",
            "docs__fail",
            "docs__fetch",
            "docs__hold",
            "docs__post_comment",
            "docs__rewrite",
            "docs__roots",
            "docs__sample",
            "docs__search",
            "docs__slow",
            "docs__spawn",
        ]
        search, post = tools["docs__search"], tools["docs__post_comment"]
        assert (search.read_only, search.idempotent) == (True, True)
        assert (post.read_only, post.idempotent, post.info.destructive) == (False, False, True)
        spec = tools["docs__fetch"].spec()
        assert spec.description == "Fetch a page of the docs."
        assert spec.parameters["required"] == ["page"]
        assert await call(opened, "docs__search", context(tmp_path), query="trio") == (
            "ok: docs found: trio"
        )
        assert await call(opened, "docs__fail", context(tmp_path)) == (
            "error: Error executing tool fail"
        )


async def test_a_tool_takes_only_the_arguments_of_its_schema(tmp_path: Path) -> None:
    async with open_servers([stdio_server("docs", tools=["fetch"])]) as opened:
        (fetch,) = opened.tools
        accepted = fetch.args_model.model_validate({"page": "a", "lines": 3})
        assert accepted.model_dump(by_alias=True, exclude_unset=True) == {"page": "a", "lines": 3}
        with pytest.raises(ValueError, match="page"):
            fetch.args_model.model_validate({"lines": 3})
        with pytest.raises(ValueError, match="extra"):
            fetch.args_model.model_validate({"page": "a", "pages": 3})


async def test_a_streamable_http_server_on_loopback(http_url: str, tmp_path: Path) -> None:
    server = McpServer.http("web", http_url, tools=["search", "fetch"])
    async with open_servers([server]) as opened:
        assert [tool.name for tool in opened.tools] == ["web__search", "web__fetch"]
        assert await call(opened, "web__search", context(tmp_path), query="q") == (
            "ok: web found: q"
        )


async def test_progress_reaches_the_calls_context_and_a_cancel_reaches_the_server(
    tmp_path: Path,
) -> None:
    events = Events()
    async with open_servers([stdio_server("docs")]) as opened:
        async with trio.open_nursery() as nursery:
            slow = functools.partial(call, seconds=60)
            nursery.start_soon(slow, opened, "docs__slow", context(tmp_path, events))
            await events.progress.wait()
            nursery.cancel_scope.cancel()
        (progress,) = events.seen
        assert isinstance(progress, ToolProgress)
        assert (progress.message, progress.percent) == ("started", 50.0)
        assert await call(opened, "docs__cancelled_calls", context(tmp_path)) == "ok: 1"


async def test_env_references_are_read_when_the_server_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCS_TOKEN", "s3cret-value")
    monkeypatch.setenv("OTHER_SECRET", "not-for-servers")
    server = stdio_server("docs", env={"TOKEN": "env:DOCS_TOKEN"})
    assert server.secrets() == ("DOCS_TOKEN",)
    assert "s3cret" not in repr(server)
    async with open_servers([server]) as opened:
        ctx = context(tmp_path)
        assert await call(opened, "docs__env", ctx, variable="TOKEN") == "ok: s3cret-value"
        # The SDK passes on a few variables (HOME, PATH, ...), never the rest.
        assert await call(opened, "docs__env", ctx, variable="OTHER_SECRET") == "ok: (unset)"
    monkeypatch.delenv("DOCS_TOKEN")
    with pytest.raises(
        ConfigError, match="'docs': TOKEN names the environment variable DOCS_TOKEN"
    ):
        async with open_servers([server]):
            pass


async def test_a_server_that_does_not_start_is_one_line_and_the_others_go_on(
    tmp_path: Path,
) -> None:
    missing = McpServer.stdio("gone", str(tmp_path / "no-such-program"))
    exits = McpServer.stdio(
        "quits", sys.executable, ["-c", "import sys; sys.exit('cannot read my config')"]
    )
    async with open_servers([missing, stdio_server("docs"), exits]) as opened:
        assert {tool.server for tool in opened.tools} == {"docs"}
        gone, quits = opened.failed
        assert gone.startswith("MCP server 'gone' did not start (")
        assert "no-such-program" in gone
        assert quits.startswith("MCP server 'quits' did not start (")
        assert quits.endswith("its stderr said: cannot read my config")
        assert "\n" not in gone + quits


async def test_a_server_that_exits_mid_call_is_a_tool_error_naming_it_and_starts_again_once(
    tmp_path: Path,
) -> None:
    async with open_servers([stdio_server("docs")]) as opened:
        with pytest.raises(ToolFailed) as first:
            await call(opened, "docs__crash", context(tmp_path))
        assert str(first.value).startswith("MCP server 'docs' failed calling crash: ")
        assert str(first.value).endswith("; it was started again (once a session): call again")
        assert await call(opened, "docs__search", context(tmp_path), query="q") == (
            "ok: docs found: q"
        )
        with pytest.raises(ToolFailed) as second:
            await call(opened, "docs__crash", context(tmp_path))
        assert str(second.value).endswith("; it is not started again (it was once this session)")
        with pytest.raises(ToolFailed, match=r"^MCP server 'docs' failed calling search: "):
            await call(opened, "docs__search", context(tmp_path), query="q")


async def test_a_server_whose_script_changed_is_not_started_again(tmp_path: Path) -> None:
    script = tmp_path / "server_app.py"
    script.write_bytes(APP.read_bytes())
    server = McpServer.stdio("docs", sys.executable, ["server_app.py", "stdio"], cwd=str(tmp_path))
    async with open_servers([server]) as opened:
        with script.open("a") as file:
            file.write("# an agent was here\n")
        with pytest.raises(ToolFailed) as crashed:
            await call(opened, "docs__crash", context(tmp_path))
        assert str(crashed.value).endswith(
            "; MCP server 'docs' exited and is not started again: server_app.py, which it "
            "runs, changed since the session started it"
        )


async def test_without_a_session_elicitation_and_sampling_are_refused_and_its_tool_reads_so(
    tmp_path: Path,
) -> None:
    # No session answers (`orchestrator mcp list`'s servers), and the server may not
    # sample: the call that asks fails, in one line the model reads.
    async with open_servers([stdio_server("docs")]) as opened:
        with pytest.raises(ToolFailed) as asked:
            await call(opened, "docs__ask", context(tmp_path), question="Which?")
        with pytest.raises(ToolFailed) as sampled:
            await call(opened, "docs__sample", context(tmp_path), prompt="Hi")
        assert await call(opened, "docs__search", context(tmp_path), query="q") == (
            "ok: docs found: q"
        )
    assert str(asked.value) == (
        "MCP server 'docs' failed calling ask: the client has nobody to ask (no session's "
        "call is running)"
    )
    assert str(sampled.value) == (
        "MCP server 'docs' failed calling sample: sampling is not allowed for MCP server "
        "'docs' (`sampling = true` in [mcp.servers.docs] allows it)"
    )


async def test_a_slow_call_times_out_and_oversized_output_is_refused(tmp_path: Path) -> None:
    server = stdio_server("docs", timeout=2.0, max_output=1000)
    async with open_servers([server]) as opened:
        with pytest.raises(ToolFailed, match=r"^MCP server 'docs' timed out calling slow"):
            await call(opened, "docs__slow", context(tmp_path), seconds=60)
        with pytest.raises(
            ToolFailed, match="big returned 5000 characters, over its limit of 1000"
        ):
            await call(opened, "docs__big", context(tmp_path))
        # The server is still there for the next call.
        assert await call(opened, "docs__search", context(tmp_path), query="q") == (
            "ok: docs found: q"
        )


def test_without_the_sdk_a_configured_server_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)
    with pytest.raises(ConfigError, match=r"pip install 'orchestrator\[mcp\]'"):
        sdk()
