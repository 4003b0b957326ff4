"""The `mcp` command's options (cli/mcp.py; docs/mcp.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from orchestrator.cli.options import config_option

MCP_EPILOG = """\
Servers are the [mcp.servers.NAME] tables of the config files (docs/mcp.md):

  [mcp.servers.github]
  command = "github-mcp-server"
  args = ["stdio"]
  env = { GITHUB_PERSONAL_ACCESS_TOKEN = "env:GITHUB_TOKEN" }

  [mcp.servers.docs]
  url = "https://docs.example.com/mcp"
  headers = { Authorization = "env:DOCS_AUTH" }

examples:
  orchestrator mcp list               start each server, list its tools and their size
  orchestrator mcp test github        start one server: ok, or one line saying why not
"""


def add_mcp_parser(commands: Any) -> None:
    mcp = commands.add_parser(
        "mcp",
        help="the MCP servers of the config: their tools, and whether they start",
        description="Look at the MCP servers the configuration gives the session's agents "
        "(needs the mcp extra: pip install 'orchestrator[mcp]'). A project's servers "
        "(in its .orchestrator/config.toml) are started only once you trust the project "
        "with them, as `run` asks.",
        epilog=MCP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = mcp.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    listing = actions.add_parser(
        "list",
        help="start every server and list its tools, each with its size in tokens",
        description="Start each configured server, list its tools as the model sees them "
        "(SERVER__TOOL), each with its flags (read-only, idempotent, from the server's "
        "annotations) and the tokens its definition costs in every request that offers "
        "it (estimated at 4 characters a token), then stop it. A server that does not "
        "start is one line saying why. Exit code 1 if any did not start.",
    )
    test = actions.add_parser(
        "test",
        help="start one server and list its tools: ok, or one line saying why not",
        description="Start server NAME, list its tools, stop it; print one line: how many "
        "tools and how long it took, or why it failed (not installed, did not start, "
        "exited, timed out). Exit code 1 if it failed.",
    )
    test.add_argument("name", metavar="NAME", help="the server, as [mcp.servers.NAME] names it")
    for parser in (listing, test):
        parser.add_argument(
            "-w",
            "--workspace",
            type=Path,
            default=None,
            metavar="DIR",
            help="the workspace whose .orchestrator/config.toml applies (default: the "
            "current directory)",
        )
        config_option(parser)
