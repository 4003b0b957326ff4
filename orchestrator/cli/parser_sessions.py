"""The grammar of `orchestrator sessions ACTION`: list, show, watch, compact, points,
fork, rewind, export, import, verify, repair, delete."""

from __future__ import annotations

import argparse
from typing import Any

from orchestrator.cli.options import Commands, config_option, count, sessions_option


def add_sessions_parser(commands: Any, only: str | None = None) -> None:
    """`sessions` and its actions; with `only`, that action's options alone (`Commands`:
    the others have their names and help, all that `sessions --help` and a wrong action
    show)."""
    sessions = commands.add_parser(
        "sessions",
        help="list, show, watch, compact, verify or repair sessions; fork or rewind one",
        description="Look at the sessions under the sessions root.",
    )
    actions = Commands.add_to(sessions, only, dest="action", metavar="ACTION")
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
        last=False,  # a deletion names its session
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
    show.add_argument(
        "--database-url",
        default=None,
        metavar="URL",
        help="for a session whose tasks ran on workers: the engine's database, where their "
        "transcripts and usage are (default: [engine] database_url, else the session's "
        "journaled one, which needs this flag when its password was hidden)",
    )
    _add_watch(actions)
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
    _add_time_travel(actions)
    _session_action(
        actions,
        "verify",
        "check every record of a session",
        "Read the whole journal: every record's frame, checksum and schema, that it folds "
        "into the state, and that the snapshot agrees. Resume reads only what it needs; this "
        "reads everything. Exit status 1 when a problem is found.",
    )


WATCH_DESCRIPTION = """\
Show session ID as `run` shows it, from its journal: the live view at a terminal, else
the transcript's lines. A session running in another process is followed (what it did so
far at once, then each step as it is written) until it ends, or until Ctrl+C, which stops
the watching, not the session. A finished session (or one whose process is gone) is
replayed at --speed. A watch only reads: it never takes the session's lock, and writes
nothing. The tasks of a session on workers (--engine dbos --workers) are read from the
engine's database, merged with the journal by the time each record was written.
"""

WATCH_EXAMPLES = """\
examples:
  orchestrator sessions watch --last          follow the newest session (run elsewhere)
  orchestrator sessions watch ID --speed 50   replay a finished session, 50x faster
  orchestrator sessions watch ID --instant    a finished session's end at once
  orchestrator sessions watch ID --plain      the transcript's lines, not the live view
  orchestrator sessions watch ID --json | jq -c 'select(.kind == "task_changed")'

Exit status 0 however the session ended (the last line says how), and on Ctrl+C.
"""


def _add_watch(actions: Any) -> None:
    watch = actions.add_parser(
        "watch",
        help="follow a running session, or replay a finished one",
        description=WATCH_DESCRIPTION,
        epilog=WATCH_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    watch.add_argument("session_id", metavar="ID", nargs="?", help="the session to watch")
    watch.add_argument("--last", action="store_true", help="watch the newest session")
    watch.add_argument(
        "--speed",
        type=_speed,
        default=10.0,
        metavar="X",
        help="replay a finished session X times faster than it happened (default 10; no "
        "wait between two steps is longer than 2 s; 0: no waiting)",
    )
    watch.add_argument(
        "--instant",
        action="store_true",
        help="replay with no waiting: the end at once (--speed 0)",
    )
    watch.add_argument(
        "--plain",
        action="store_true",
        help="the transcript's lines, not the live view (also ORCHESTRATOR_PLAIN=1, "
        "NO_COLOR, or no terminal)",
    )
    watch.add_argument(
        "--json",
        action="store_true",
        help="print the events as JSON lines, in `run --json`'s shape, each with the seq "
        "and time of its journal record",
    )
    watch.add_argument(
        "--database-url",
        default=None,
        metavar="URL",
        help="for a session whose tasks run on workers: the engine's database, where their "
        "turns and calls are read from (default: [engine] database_url, else the session's "
        "journaled one, which needs this flag when its password was hidden)",
    )
    config_option(watch)
    sessions_option(watch)


def _add_time_travel(actions: Any) -> None:
    """`points`, `fork`, `rewind`, `export` and `import` (docs/time-travel.md)."""
    points = _session_action(
        actions,
        "points",
        "the points of a session to go back to",
        "One line per point a person would go back to: the goal and each message you sent, "
        "each plan version and decision, each task's delegation and end, each compaction, "
        "each workspace checkpoint, each run's end; with its seq (the POINT of fork and "
        "rewind), time and a summary.",
    )
    points.add_argument("--json", action="store_true", help="print one JSON object per point")
    fork = _session_action(
        actions,
        "fork",
        "a new session from a point of this one",
        "Make a new session whose journal is session ID's up to POINT (its tasks as they "
        "stood, running ones revived as after a crash, the mail as it stood), recorded as "
        "forked from (ID, POINT). Session ID is never changed. Then resume the fork, with "
        "--message to take another path.",
    )
    fork.add_argument("--at", type=count, required=True, metavar="POINT", help="a point's seq")
    fork.add_argument(
        "--workspace",
        choices=("copy", "here", "none"),
        default="copy",
        help="copy (the default): the point's workspace checkpoint restored into a new "
        "directory inside the fork; here: restored into the session's workspace, after a "
        "checkpoint of it as it is (so the restore can be undone); none: files left alone",
    )
    rewind = _session_action(
        actions,
        "rewind",
        "go back to a point, the workspace's files too",
        "Fork session ID at POINT with its workspace restored here (fork --workspace here): "
        "the conversation, tasks, mail, todos and the workspace's files as they were there, "
        "including what shell commands changed. Says what the restore changed; the path "
        "left stays session ID, the fork's parent.",
    )
    export = _session_action(
        actions,
        "export",
        "a session as one file: a readable transcript, or a portable bundle",
        "--format md: a readable transcript of every agent, the task tree and the plan "
        "(secrets were redacted before they were journaled). --format json: a bundle of the "
        "manifest, journal, snapshot and workspace checkpoints that `sessions import` "
        "takes; the workspace's files only with --with-files.",
    )
    export.add_argument("--format", choices=("md", "json"), default="md")
    export.add_argument(
        "-o", "--output", default=None, metavar="FILE", help="write it to FILE (default: stdout)"
    )
    export.add_argument(
        "--with-files",
        action="store_true",
        help="json: the workspace's files too. They are not redacted: a .env that .gitignore "
        "does not name is in them",
    )
    importing = actions.add_parser(
        "import",
        help="register a session from a bundle (sessions export --format json)",
        description="Check the bundle's journal as `sessions verify` does, then register "
        "the session under its own id, or a new one when that is taken.",
    )
    importing.add_argument("file", metavar="FILE", help="the bundle")
    sessions_option(importing)
    rewind.add_argument(
        "--to",
        type=count,
        default=None,
        metavar="POINT",
        help="a point's seq (default: the start of the session's last run)",
    )


def _speed(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be 0 or more: {text}")
    return value


def _session_action(
    actions: Any, name: str, summary: str, description: str, *, last: bool = True
) -> argparse.ArgumentParser:
    """A `sessions` action on one session: ID (or `--last`, unless `last` is False), and
    where sessions live."""
    parser: argparse.ArgumentParser = actions.add_parser(
        name, help=summary, description=description
    )
    if last:
        parser.add_argument(
            "session_id", metavar="ID", nargs="?", help="a session id, or its start (unique)"
        )
        parser.add_argument("--last", action="store_true", help="the newest session")
    else:
        parser.add_argument("session_id", metavar="ID", help="a session id, or its start (unique)")
    sessions_option(parser)
    return parser
