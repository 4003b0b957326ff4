"""The `mcp` command's options (cli/mcp.py; docs/mcp.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from orchestrator.cli.options import config_option
from orchestrator.cli.parser_agents import agent_options, approve_option, workspace_options

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
  orchestrator mcp approve github     approve its tools as they are now, for this project
  orchestrator mcp serve -m openai:gpt-4.1 -w .     the team as an MCP server (stdio)
"""

SERVE_DESCRIPTION = """\
Serve the orchestrator to another agent (Claude Code, Codex, Cursor, any MCP client)
over stdio, or over streamable HTTP on a loopback address with a token (--http). The
client starts sessions with a goal (plan first or not), watches their status and task
tree, waits with progress notifications, answers their questions, decides on the tool
calls the permission rules ask about and on plans, sends messages, reads the result.

Sessions run in this process as `orchestrator run` runs them (this command's model,
workspace, config and flags) and are ordinary sessions on disk: `orchestrator resume
ID` goes on with one after the server stops (a stop records the running ones
interrupted). Nothing is asked at a terminal: the client decides (with --yes, every
call is allowed). Lines for a person go to standard error (standard output is the
protocol's over stdio)."""

SERVE_EPILOG = """\
The client's tools: start_session (goal, plan_first), wait_session (until it ends or
asks something, with progress notifications), session_status (the task tree, open
questions, what waits for a decision), answer_question, decide (a tool call or a plan),
send_message, session_result, cancel_session, resume_session, list_sessions.

In a client's config (docs/mcp.md has each in full):
  Claude Code:  claude mcp add orchestrator -- orchestrator mcp serve -m MODEL -w /path/to/project
  Codex:        [mcp_servers.orchestrator] in ~/.codex/config.toml,
                command = "orchestrator", args = ["mcp", "serve", "-m", "MODEL", "-w", "/path"]
  Cursor:       "orchestrator": {"command": "orchestrator", "args": ["mcp", "serve", ...]}
                under "mcpServers" in .cursor/mcp.json

examples:
  orchestrator mcp serve -m anthropic:claude-sonnet-4-5 -w .
      stdio, for a client that starts the server itself
  ORCHESTRATOR_MCP_TOKEN=secret orchestrator mcp serve --http --port 8765 -m MODEL -w .
      streamable HTTP at http://127.0.0.1:8765/mcp; requests carry
      "Authorization: Bearer secret" (without the variable, a token is made and printed)
  orchestrator mcp serve -m MODEL -w . --allow 'shell:pytest *=allow' --allow edit_file=allow
      the client is asked only about what the rules leave to ask
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
    approve = actions.add_parser(
        "approve",
        help="approve a server's tools as they are now, for this project",
        description="Start server NAME, list its tools and approve their definitions as "
        "they are now for the project (the workspace): a session that pinned an older "
        "definition of one of them, and refused its calls since it changed, calls it "
        "again and pins the new one (docs/mcp.md, Pinned definitions).",
    )
    approve.add_argument("name", metavar="NAME", help="the server, as [mcp.servers.NAME] names it")
    _add_serve(actions)
    for parser in (listing, test, approve):
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


def _add_serve(actions: Any) -> None:
    serve = actions.add_parser(
        "serve",
        help="the team as an MCP server: other agents start sessions and steer them",
        description=SERVE_DESCRIPTION,
        epilog=SERVE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    agent_options(
        serve,
        model_required_note="the model of the sessions it starts, e.g. openai:gpt-4.1, "
        "anthropic:claude-sonnet-4-5, scripted:script.json (default: $ORCHESTRATOR_MODEL, "
        "else the config's)",
    )
    workspace_options(serve)
    approve_option(serve)
    serve.add_argument(
        "--http",
        action="store_true",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio; every request "
        "must carry Authorization: Bearer TOKEN, the token from $ORCHESTRATOR_MCP_TOKEN "
        "(without it, one is made and printed)",
    )
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="with --http: a loopback address to listen on (127.0.0.1, ::1, localhost; "
        "default: 127.0.0.1); any other is refused",
    )
    serve.add_argument(
        "--port",
        type=int,
        default=8765,
        help="with --http: the port (default: 8765; 0: a free one, printed)",
    )
