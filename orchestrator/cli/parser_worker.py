"""The `worker` and `engine` commands' options (cli/worker.py; docs/engine.md)."""

from __future__ import annotations

import argparse
from typing import Any

from orchestrator.cli.options import config_option


def _positive(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, not {text}")
    return value


def add_worker_parser(commands: Any) -> None:
    worker = commands.add_parser(
        "worker",
        help="run delegated tasks of sessions on the dbos engine (needs the dbos extra)",
        description="Take the delegated tasks that sessions started with `--engine dbos "
        "--workers` put on the engine's queue, and run them here, until Ctrl+C. Run as many "
        "workers as you like, on this host or others, all on the same database; each "
        "task's workspace must be a path every worker reaches (a shared file system). "
        "Models, API keys, the sandbox and the environment policy are this worker's own "
        "(its config and environment). A worker silent for --silent seconds has its tasks "
        "taken over by another. A worker takes only tasks of sessions of its own version.",
    )
    worker.add_argument(
        "--database-url",
        default=None,
        metavar="URL",
        help="the engine's database, as the sessions use it (postgresql://... or "
        "sqlite:///PATH); default: [engine] database_url",
    )
    worker.add_argument(
        "--concurrency",
        type=int,
        default=8,
        metavar="N",
        help="at most N tasks at once in this worker (default: 8)",
    )
    worker.add_argument(
        "--beat",
        type=_positive,
        default=5.0,
        metavar="SECONDS",
        help="how often it tells the database it is alive (default: 5)",
    )
    worker.add_argument(
        "--silent",
        type=_positive,
        default=30.0,
        metavar="SECONDS",
        help="another worker silent this long is taken for dead, and its tasks run again "
        "elsewhere (default: 30)",
    )
    worker.add_argument(
        "--sandbox",
        choices=["off", "workspace", "strict"],  # run's, with the same meaning
        default=None,
        help="where the shell commands of the tasks run here may write, read and connect: "
        "workspace (writes only in the task's workspace or scope and a scratch TMPDIR; no "
        "network; other processes out of sight), strict (reads too only in the workspace "
        "and the system's directories) or off; default: this worker's [shell] sandbox, "
        "else workspace (docs/security.md)",
    )
    worker.add_argument(
        "-y",
        "--yes",
        action="store_true",
        help="approve here every call the permission policy would ask about; without it, "
        "such a call is put to the task's session, whose approver (the person at its "
        "terminal, or its --yes) answers it while the call waits",
    )
    worker.add_argument(
        "--status-every",
        type=_positive,
        default=60.0,
        metavar="SECONDS",
        help="how often it prints what it runs (its tasks, their sessions and age) and its "
        "last beat; also printed at once on SIGUSR1 (kill -USR1 PID) (default: 60)",
    )
    config_option(worker)


def add_engine_parser(commands: Any) -> None:
    engine = commands.add_parser(
        "engine",
        help="what the dbos engine's database says: workers and queued tasks",
        description="Look at the engine's database (needs the dbos extra).",
    )
    actions = engine.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    status = actions.add_parser(
        "status",
        help="the workers, their last beat, and each session's queued and running tasks",
        description="List the workers that ever served the engine's database (alive, "
        "silent for over a minute, or stopped), when each last beat, and per session the "
        "tasks waiting on the queue and those running, on which worker and for how long. "
        "It only reads: nothing is started or changed.",
    )
    status.add_argument(
        "--database-url",
        default=None,
        metavar="URL",
        help="the engine's database (postgresql://... or sqlite:///PATH); default: "
        "[engine] database_url",
    )
    status.add_argument("--json", action="store_true", help="print one JSON object")
    config_option(status)
