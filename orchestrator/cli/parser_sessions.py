"""The grammar of `orchestrator sessions ACTION`: list, show, compact, verify, repair,
delete."""

from __future__ import annotations

import argparse
from typing import Any

from orchestrator.cli.options import config_option, count, sessions_option


def add_sessions_parser(commands: Any) -> None:
    sessions = commands.add_parser(
        "sessions",
        help="list, show, compact, verify or repair sessions",
        description="Look at the sessions under the sessions root.",
    )
    actions = sessions.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    listing = actions.add_parser(
        "list",
        help="sessions, newest first",
        description="One line per session: id, created, status, size, goal. A session "
        "marked 'running' whose process is gone shows as 'stopped (resumable)'.",
    )
    listing.add_argument("--json", action="store_true", help="print one JSON object per session")
    sessions_option(listing)
    _session_action(
        actions,
        "delete",
        "delete a session",
        "Delete session ID: its directory, journal, snapshot and, for a "
        "--session-workspace session, its workspace. A session in use is refused.",
    )
    show = _session_action(
        actions,
        "show",
        "what a session holds",
        "Goal, status (and why it failed or stopped), model, workspace, agents with message "
        "counts, token usage, cache share and cost (from the price table in the config, if "
        "any), and the last journal records.",
    )
    config_option(show)
    show.add_argument("--json", action="store_true", help="print one JSON object")
    show.add_argument("--events", type=count, default=10, metavar="N", help="last N records")
    show.add_argument(
        "--transcript",
        action="store_true",
        help="print each agent's conversation instead: every message of its live context "
        "(since its last compaction), every tool call with its full arguments, every result "
        "in full",
    )
    show.add_argument(
        "--full",
        action="store_true",
        help="with --transcript: the whole history from the journal, every message before "
        "each compaction too, and where each checkpoint started the context again",
    )
    compact = _session_action(
        actions,
        "compact",
        "compact an agent's context by hand (a stopped session)",
        "Compact the context of an agent of session ID now, as a running session does when "
        "a context nears its model's window: old tool outputs are pruned, the older part is "
        "summarised by the compactor role's model ([agents.compactor] model, else the "
        "session's), and the context starts again from a journaled checkpoint carrying the "
        "summary, the anchors (goal, todos, tasks, mail, files) and the last turns. A "
        "session in use is refused, and so is an agent with a tool call left unanswered "
        "(resume the session first). Prints, per agent, its tokens before and after, how "
        "it was compacted and how many tool outputs were pruned; the next resume goes on "
        "from the checkpoint, and `sessions show ID --transcript --full` still shows "
        "everything before it.",
    )
    compact.add_argument(
        "--agent",
        default="main",
        metavar="AGENT",
        help="the agent to compact: main (the default), a task id (t1), or all (every agent "
        "with a context)",
    )
    compact.add_argument(
        "-m",
        "--model",
        default=None,
        metavar="SPEC",
        help="the model that writes the summary, instead of [agents.compactor] model or the "
        "session's own",
    )
    compact.add_argument(
        "--json", action="store_true", help="print one JSON object per agent compacted"
    )
    config_option(compact)
    _session_action(
        actions,
        "repair",
        "cut a corrupt journal back to its last good batch",
        "Copy the journal aside (nothing is deleted), then truncate it in place to the last "
        "good batch before the first corrupt record, or before the first record this version "
        "cannot read; if the session had got further than its journal now goes, accept that "
        "loss explicitly. Takes the session's lock.",
    )
    _session_action(
        actions,
        "verify",
        "check every record of a session",
        "Read the whole journal: every record's frame, checksum and schema, that it folds "
        "into the state, and that the snapshot agrees. Resume reads only what it needs; this "
        "reads everything. Exit status 1 when a problem is found.",
    )


def _session_action(
    actions: Any, name: str, summary: str, description: str
) -> argparse.ArgumentParser:
    """A `sessions` action on one session: ID, and where sessions live."""
    parser: argparse.ArgumentParser = actions.add_parser(
        name, help=summary, description=description
    )
    parser.add_argument("session_id", metavar="ID")
    sessions_option(parser)
    return parser
