"""The `worker` command's options (cli/worker.py; docs/engine.md)."""

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
    config_option(worker)
