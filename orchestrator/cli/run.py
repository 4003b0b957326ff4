"""Running agents from the command line: `run`, `plan`, `execute` and `resume` (and
`demo`, in `cli/demo.py`, through `run_kept`)."""

from __future__ import annotations

import argparse
import functools
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import msgspec
import trio

from orchestrator.cli import collector
from orchestrator.cli.engine import check_resumed_engine
from orchestrator.cli.env import sessions_root
from orchestrator.cli.mcp import opened_for_run
from orchestrator.cli.out import People, command, session_line
from orchestrator.cli.parser import (
    EXIT_BLOCKED,
    EXIT_BUDGET,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
)
from orchestrator.cli.prompt import refused_lines
from orchestrator.cli.screen import screen_for
from orchestrator.cli.settings import plan_limits
from orchestrator.cli.setup import (
    check_rules,
    default_workspace,
    new_session,
    overrides,
    run_config,
    run_settings,
)
from orchestrator.cli.storage import kept_on_full_disk
from orchestrator.cli.summary import next_steps, spent, spent_cells, summary
from orchestrator.config import Config
from orchestrator.errors import ConfigError
from orchestrator.layout import PLAN_MD
from orchestrator.loop.plan import Plan, PlanError, check, parse_plan_json
from orchestrator.loop.plan_markdown import parse_markdown, render
from orchestrator.models.http import make_client
from orchestrator.session import shown
from orchestrator.session.listing import find_session
from orchestrator.session.live import LiveSession, open_session
from orchestrator.session.runs import Span, read_runs, total
from orchestrator.session.shown import NONE, TASK_HEADER, table, task_rows
from orchestrator.session.status import current_status
from orchestrator.state.events import FanOut
from orchestrator.state.manifest import read_manifest
from orchestrator.store import Durability, session_dir
from orchestrator.team.definitions import Definitions
from orchestrator.team.drive import RunResult, drive
from orchestrator.team.settings import RunSettings
from orchestrator.text import label, visible
from orchestrator.tracing import telemetry_from, traced

EXIT_CODES = {"blocked": EXIT_BLOCKED, "budget_exhausted": EXIT_BUDGET}


async def _run_session(
    root: Path,
    session_id: str,
    args: argparse.Namespace,
    config: Config,
    changes: dict[str, Any] | None = None,
    definitions: Definitions | None = None,
    people: People | None = None,
) -> int:
    """Run the session with its journaled settings, `changes` made to them; a session
    with none yet (older formats) gets them from `config` and `args`, as a new one. The
    agent types are `definitions`, else loaded from the session's workspace. Its lines
    for people go to `people`, the summary last."""
    began = time.monotonic()
    directory = session_dir(root, session_id)
    plan_only = bool(getattr(args, "plan_only", False))
    people = people or People.of(args, plan_only=plan_only)
    say = people.say
    durability = Durability(args.durability)
    async with (
        open_session(root, session_id, durability=durability, warn=say) as live,
        make_client() as http,
        opened_for_run(config, say, live.state.mcp) as mcp,  # stopped with the session
        traced(live, telemetry_from(config.telemetry, os.environ), config.prices) as tracing,
    ):
        workspace = live.manifest.workspace_path(directory)
        screen = screen_for(args, live, config, plan_only=plan_only, people=people)
        ui = screen.sink if tracing is None else FanOut([screen.sink, tracing.sink])
        settings = await run_settings(
            live,
            args,
            config,
            http,
            definitions,
            changes,
            ui=ui,
            hold=screen.hold,
            say=say,
            mcp=mcp,
            trace_parent=None if tracing is None else tracing.trace_parent,
        )
        screen.know_models(settings)
        async with screen.shown():  # its last frame stays, above the summary
            result = await _drive_until_stopped(live, settings)
        tasks = live.state.tasks.dump()
        refused = refused_lines(live.state.refused)
        pending = live.state.plans.pending
        cost = spent(live.state.usage_by_model, config.prices)
        used = spent_cells(live.state.usage_by_model, config.prices)
    seconds = time.monotonic() - began
    if plan_only and pending is not None and isinstance(result, RunResult):
        if not args.json:
            # A model's text: its control characters shown, never acting on a terminal.
            print(visible(render(pending.plan)), end="", flush=True)
        build = f"build it with: {command('execute', session_id, args)} --approve"
        places = [("plan", directory / PLAN_MD), ("session", directory)]
        waits = f"plan v{pending.version} awaits approval"
        ending = summary(
            session_id, "planned", waits, places=places, spent=cost, seconds=seconds, steps=[build]
        )
        for line in ending:
            say(line)
        return EXIT_OK
    places = [("workspace", workspace), ("session", directory)]
    return _ended(
        session_id,
        result,
        tasks,
        refused,
        say=say,
        args=args,
        places=places,
        spent=cost,
        used=used,
        seconds=seconds,
    )


def _ended(
    session_id: str,
    result: RunResult | Stopped,
    tasks: list[dict[str, Any]],
    refused: list[str],
    *,
    say: Callable[[str], None],
    args: argparse.Namespace,
    places: list[tuple[str, Path]],
    spent: str = "",
    used: tuple[str, str] | None = None,
    seconds: float | None = None,
) -> int:
    """Say how the run ended, or why it stopped (the task tree, the refused calls, then
    the summary: how it ended, where the results are, what it cost, what to do next) and
    give its exit code. `used`: the session's tokens and cost, for the tree's main row."""
    if isinstance(result, RunResult):
        status, detail, steps = result.status, result.detail, next_steps(result, session_id, args)
        code = EXIT_OK if status == "completed" else EXIT_CODES.get(status, EXIT_FAILED)
    else:
        status, detail, code = "interrupted", result, STOPPED[result]
        steps = [f"continue it with: {command('resume', session_id, args)}"]
    if tasks:
        say("tasks:")
        directory = dict(places)["session"]
        runs = read_runs(directory)
        rows = task_rows(tasks, now_ms=time.time() * 1000, runs=runs)
        main = _main_row(status, runs, used)
        for line in table((*TASK_HEADER, "WHAT"), [main, *rows]):
            say(line)
    for line in refused:
        say(line)
    ending = summary(
        session_id, status, detail, places=places, spent=spent, seconds=seconds, steps=steps
    )
    for line in ending:
        say(line)
    return code


def _main_row(state: str, runs: list[Span], used: tuple[str, str] | None) -> list[str]:
    """The session's row of the final tree: how long its runs took together, and the
    tokens and cost of all its model calls."""
    if used is None:
        return ["main", state, NONE, "the session"]
    took = shown.duration(total(runs))
    return ["main", state, took, f"the session · {used[0]} tokens · {used[1]}"]


def run_kept(
    root: Path,
    session_id: str,
    args: argparse.Namespace,
    config: Config,
    changes: dict[str, Any] | None = None,
    *,
    definitions: Definitions | None = None,
    hint: argparse.Namespace | None = None,
    people: People | None = None,
) -> int:
    """`_run_session`, a disk that refuses a write said in one line (exit 5), Ctrl+C in
    the summary's (exit 130)."""
    people = people or People.of(args)
    run = functools.partial(
        trio.run, _run_session, root, session_id, args, config, changes, definitions, people
    )
    try:
        return kept_on_full_disk(run, session_id, hint or args)
    except KeyboardInterrupt:
        # Before the run began, or as it was summed up: said with what is known without
        # reading the session again.
        places = [("session", session_dir(root, session_id))]
        return _ended(session_id, CTRL_C, [], [], say=people.say, args=args, places=places)


Stopped = Literal["Ctrl+C", "terminated by a signal"]
CTRL_C: Stopped = "Ctrl+C"
STOPPED: dict[Stopped, int] = {CTRL_C: EXIT_INTERRUPTED, "terminated by a signal": EXIT_TERMINATED}


async def _drive_until_stopped(live: LiveSession, settings: RunSettings) -> RunResult | Stopped:
    """`drive`, stopped cleanly by Ctrl+C, SIGTERM or SIGHUP: running tools are cancelled
    (their process groups killed) and the session is marked interrupted; then what
    stopped it, which the summary says as it says how a run ended. Ctrl+C is heard as a
    signal here, not raised as a KeyboardInterrupt in whichever task runs at that moment
    (the live view's, say), so the run always ends through this one door. A second
    Ctrl+C while the run winds down is a KeyboardInterrupt again (`run_kept`)."""
    result: RunResult | Stopped = "terminated by a signal"
    try:
        async with trio.open_nursery() as nursery:

            async def run() -> None:
                nonlocal result
                collector.settle()  # (set up: what the run made so far lives as long)
                result = await drive(live, settings)
                nursery.cancel_scope.cancel()

            async def watch(
                *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
            ) -> None:
                nonlocal result
                # SIGHUP (the terminal closed) stops a run like SIGTERM does.
                stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
                with trio.open_signal_receiver(*stops) as signals:
                    task_status.started()
                    async for number in signals:
                        result = CTRL_C if number == signal.SIGINT else "terminated by a signal"
                        nursery.cancel_scope.cancel()
                        return

            await nursery.start(watch)
            nursery.start_soon(run)
    except BaseExceptionGroup as group:
        # An error in `run` arrives grouped by the nursery; callers expect it bare.
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
    return result


def start(args: argparse.Namespace, *, goal: str, model: str | None, workspace: Path | None) -> int:
    new = new_session(args, model=model, workspace=workspace)
    if getattr(args, "seed_plan", None) is not None:
        # A PlanError naming every error (by the config's [plan] limits) before a session exists.
        check(args.seed_plan, plan_limits(new.config))
    people = People.of(args, plan_only=bool(getattr(args, "plan_only", False)))
    session_id = new.create(goal, say=people.say)
    return run_kept(
        new.root, session_id, args, new.config, definitions=new.definitions, people=people
    )


def execute(args: argparse.Namespace) -> int:
    """`execute PLAN-FILE|ID`: an existing path is a plan file, which starts a session
    with it; anything else is the id of a session whose plan waits for a decision."""
    target = Path(args.target)
    if target.exists():
        args.seed_plan = read_plan_file(target)  # checked once the config is read
        args.plan = True  # journaled with the session: a kill before the plan is journaled
        workspace = None if args.session_workspace else (args.workspace or default_workspace())
        return start(args, goal=args.seed_plan.goal, model=args.model, workspace=workspace)
    if args.workspace is not None or args.session_workspace:
        raise ConfigError(
            f"{args.target} is no file, so it is taken for a session id, whose workspace is "
            "its own: drop -w/--session-workspace (or give the path of a plan file)"
        )
    args.session_id, args.last, args.message = args.target, False, None
    return resume(args)


def picked_by_last(session_id: str, created: str, goal: str) -> str:
    """Which session `--last` took: its id, when it was created and its goal."""
    return (
        f"--last: session {label(session_id, 80)}, created {shown.moment(created)}: "
        f"{shown.one_line(goal, 80)}"
    )


def read_plan_file(path: Path) -> Plan:
    """A plan from `plan.json` or a markdown plan (by its first character: `{` is JSON),
    or a `PlanError` naming the file and the line or field."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read the plan file {path}: {exc.strerror or exc}") from exc
    try:
        if data.lstrip().startswith(b"{"):
            return parse_plan_json(data, source=str(path))
        return parse_markdown(data.decode(), source=str(path))
    except UnicodeDecodeError as exc:
        raise PlanError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc


def resume(args: argparse.Namespace) -> int:
    check_rules(args.allow)
    root = sessions_root(args)
    session_id = find_session(root, args.session_id, last=args.last)
    directory = session_dir(root, session_id)
    manifest = read_manifest(directory)
    # The journal's status, which a kill may have left the manifest without.
    status = current_status(directory, {**msgspec.to_builtins(manifest)})
    people = People.of(args)
    if args.last:  # the newest may not be the one meant (a kill before its session existed)
        people.say(picked_by_last(session_id, manifest.created, manifest.goal))
    if status == "completed" and not args.message:
        people.say(
            f"session {session_id} already finished (completed); nothing to do (give "
            "--message to follow up)"
        )
        return EXIT_OK
    people.say(session_line(session_id, root, args, resuming=True))
    config = run_config(args, manifest.workspace_path(directory))
    check_resumed_engine(args)  # an engine that is not installed: refused now
    # The session's journaled settings, but for what this command gives explicitly.
    return run_kept(root, session_id, args, config, overrides(args), people=people)
