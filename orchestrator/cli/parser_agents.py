"""The options of the commands that run agents (`run`, `plan`, `execute`, `resume`,
`chat`; `demo` takes the view's): the model, permissions, the sandbox, the engine, the
journal's durability, the session settings, the workspace and a plan's approval."""

from __future__ import annotations

import argparse
from pathlib import Path

from orchestrator.cli.options import (
    amount,
    command,
    config_option,
    count,
    frame_rate,
    positive,
    sessions_option,
)


def agent_options(parser: argparse.ArgumentParser, *, model_required_note: str) -> None:
    parser.add_argument("-m", "--model", default=None, help=model_required_note)
    parser.add_argument(
        "-y",
        "--yes",
        action="store_true",
        help="answer yes to every permission question (and revive tasks whose resume policy "
        "is ask); without it and without a terminal, those calls are refused and the run "
        "ends blocked unless its --verify commands pass",
    )
    parser.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="TOOL=DECISION",
        help="permission rule, e.g. shell=deny, write_file=allow or 'shell:pytest *=allow' "
        "(repeatable; journaled with the session); read-only tools are allowed and the "
        "others ask by default",
    )
    parser.add_argument(
        "--sandbox",
        choices=["off", "workspace", "strict"],
        default=None,
        help="where shell commands may write, read and connect: workspace (the default: "
        "writes only in the workspace, or a task's scope, and a scratch TMPDIR; no network; "
        "other processes out of sight), strict (reads too only in the workspace and the "
        "system's directories) or off; default: [shell] sandbox (docs/security.md); "
        "journaled with the session: a resume runs at the session's level unless given "
        "this flag (a looser one is said), whatever the config says then",
    )
    parser.add_argument(
        "--network",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="let sandboxed shell commands reach the network (--no-network: keep them off "
        "it); default: [shell] network, else off; journaled with the session as --sandbox is",
    )
    parser.add_argument("--json", action="store_true", help="print events as JSON lines")
    plain_option(parser)
    parser.add_argument(
        "--max-rounds",
        type=positive,
        default=None,
        metavar="N",
        help="the main agent's turn stops after N model calls, and the run fails, resumable "
        "(default: 50; on resume, the session's); a subagent's limit is its type's",
    )
    parser.add_argument(
        "--engine",
        choices=["local", "dbos"],
        default=None,
        help="where delegated tasks run: local (in this process, the default) or dbos (each "
        "task a durable DBOS workflow; needs pip install 'orchestrator[dbos]'); default: "
        "[engine] kind (docs/engine.md); journaled with the session: a resume without it "
        "runs on the session's engine",
    )
    parser.add_argument(
        "--database-url",
        default=None,
        metavar="URL",
        help="the dbos engine's database (sqlite:///PATH or postgresql://...); default: "
        "[engine] database_url, else a SQLite file in the session; journaled with its "
        "password hidden, so a resume of a session whose URL had one needs it again",
    )
    parser.add_argument(
        "--workers",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="with --engine dbos: run delegated tasks on `orchestrator worker` processes "
        "(any host that reaches the database and the workspace) instead of this one; "
        "needs --database-url or [engine] database_url; default: [engine] workers; "
        "journaled with the session",
    )
    parser.add_argument(
        "--durability",
        choices=["always", "batch", "off"],
        default="batch",
        help="journal fsync policy: always (each record), batch (group commit, default), off",
    )
    session_options(parser)
    config_option(parser)
    sessions_option(parser)


def plain_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--plain",
        action="store_true",
        help="at a terminal too, print the transcript alone, without the live view of the "
        "agents and tasks under it (as for a pipe; also ORCHESTRATOR_PLAIN=1 or NO_COLOR)",
    )
    parser.add_argument(
        "--fps",
        type=frame_rate,
        default=None,
        metavar="N",
        help="the live view's frames a second at most, from 1 to 60 (default: [view] fps, else 10)",
    )


def session_options(parser: argparse.ArgumentParser) -> None:
    """The flags that set `[session]` keys (cli_env.SESSION_FLAGS); each wins over every
    config file. None (not given) leaves the files' value."""
    group = parser.add_argument_group(
        "session settings",
        "Each wins over the [session] table of every config file; not given, the "
        "files' value applies, else the default named here (see docs/configuration.md; "
        "`orchestrator config show` prints what applies and why). They are journaled with "
        "the session: on resume, not given, the session's own value applies.",
    )
    group.add_argument(
        "--serial",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="the serial todo hand-off: completing a todo item starts the next unblocked one "
        "(--no-serial: off). It does not limit how many subagents run at once ([team] "
        "max_live does)",
    )
    group.add_argument(
        "--verify",
        action="append",
        type=command,
        default=None,
        metavar="CMD",
        help="a shell command, run in the workspace, that checks the work before the session "
        "may complete; a failure sends the main agent back to fix it, e.g. --verify "
        "'pytest -q' (repeatable; replaces the config's list)",
    )
    group.add_argument(
        "--max-auto-continues",
        type=count,
        default=None,
        metavar="N",
        help="send the main agent, its turn ended with work left or its verification "
        "failed, back to it at most N times (default: 10; 0: never); a subagent's limit is "
        "its type's",
    )
    group.add_argument(
        "--budget-rounds",
        type=positive,
        default=None,
        metavar="N",
        help="model calls of the whole session, every agent together (default: no limit; "
        "--max-rounds is the limit of one turn)",
    )
    group.add_argument(
        "--budget-tokens",
        type=positive,
        default=None,
        metavar="N",
        help="tokens of the whole session, every agent together (default: no limit)",
    )
    group.add_argument(
        "--budget-cost",
        type=amount,
        default=None,
        metavar="USD",
        help="US dollars the session may spend, from the config's [prices] (default: no limit)",
    )
    group.add_argument(
        "--budget-time",
        type=amount,
        default=None,
        metavar="SECONDS",
        help="wall-clock seconds one run may take (default: no limit)",
    )


def workspace_options(parser: argparse.ArgumentParser) -> None:
    place = parser.add_mutually_exclusive_group()
    place.add_argument(
        "-w",
        "--workspace",
        type=Path,
        default=None,
        help="directory the tools are confined to (default: the current directory)",
    )
    place.add_argument(
        "--session-workspace",
        action="store_true",
        help="work in a fresh workspace inside the session directory, so the session can "
        "be copied elsewhere and resumed",
    )


class _Approve(argparse.Action):
    """`--approve` (the plan versions there are, else the first) or `--approve all`."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        if values not in (None, "all"):
            raise argparse.ArgumentError(
                self,
                f"takes nothing or `all`, not {values!r} (give the goal or id before "
                "--approve, or --approve last)",
            )
        setattr(namespace, self.dest, "all" if values == "all" else "seen")


def approve_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--approve",
        action=_Approve,
        nargs="?",
        default=None,
        metavar="all",
        help="approve the plan without asking: the version(s) there are now (the first, "
        "for a new session), and a later version (a re-plan) only if it adds no task and "
        "no command (acceptance check) to what was approved; a version that does is asked "
        "about at a terminal, or the run stops blocked until `execute ID --approve` "
        "decides it. `--approve all` approves every version, unseen ones too. Journaled "
        "with the session: a resume keeps it. (--yes, which answers tool calls, never "
        "approves a plan.)",
    )
