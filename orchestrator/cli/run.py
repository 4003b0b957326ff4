"""Running agents from the command line: `run`, `plan`, `execute` and `resume` (and
`demo`, in `cli/demo.py`, through `run_kept`)."""

from __future__ import annotations

import argparse
import functools
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import msgspec
import trio

from orchestrator.cli.engine import chosen_engine, runner_for
from orchestrator.cli.env import SESSION_FLAGS, effective_config, sessions_root
from orchestrator.cli.guards import guards
from orchestrator.cli.out import People, command, session_line
from orchestrator.cli.parser import (
    EXIT_BLOCKED,
    EXIT_BUDGET,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
)
from orchestrator.cli.plan_prompt import plan_approver
from orchestrator.cli.prompt import Hold, approvers, no_hold, refusal_notice, refused_lines
from orchestrator.cli.roles import RoleModels, agent_definitions, ask_trust, model_windows
from orchestrator.cli.screen import screen_for
from orchestrator.cli.storage import kept_on_full_disk
from orchestrator.cli.summary import next_steps, spent, summary
from orchestrator.config import Config
from orchestrator.errors import ConfigError
from orchestrator.layout import PLAN_MD
from orchestrator.loop.plan import Plan, PlanError, check, parse_plan_json
from orchestrator.loop.plan_markdown import parse_markdown, render
from orchestrator.models.http import make_client
from orchestrator.models.resolve import resolve_model
from orchestrator.session import shown
from orchestrator.session.listing import latest_session_id
from orchestrator.session.live import LiveSession, create_session, open_session
from orchestrator.session.shown import NONE, TASK_HEADER, table, task_rows
from orchestrator.session.status import current_status
from orchestrator.state.events import EventSink
from orchestrator.state.manifest import read_manifest
from orchestrator.state.settings import SessionSettings
from orchestrator.store import Durability, session_dir
from orchestrator.team.definitions import Definitions
from orchestrator.team.drive import RunResult, RunSettings, drive
from orchestrator.text import label
from orchestrator.tools import (
    PermissionPolicy,
    deny_all,
    workspace_tools,
)
from orchestrator.tools.permissions import parse_rules

EXIT_CODES = {"blocked": EXIT_BLOCKED, "budget_exhausted": EXIT_BUDGET}


def default_workspace() -> Path:
    """The current directory, unless it is `/` or the home directory itself: with no
    `--workspace`, a run there would put every file of the machine or of the user in
    reach of the agent's tools by accident."""
    cwd = Path.cwd()
    where = {Path("/"): "the root directory", Path.home().resolve(): "your home directory"}
    what = where.get(cwd.resolve())
    if what is not None:
        raise ConfigError(
            f"refusing to use {cwd} ({what}, the current directory) as the workspace; "
            f"choose one with -w DIR (-w {cwd} if you do mean it), or pass "
            "--session-workspace for a fresh one inside the session"
        )
    return cwd


def session_settings(config: Config, args: argparse.Namespace) -> SessionSettings:
    """The settings a new session runs with: the layered config (its [session] table with
    the session flags over it, [team], [compaction], the main agent's [agents.main]) and
    `--max-rounds` and `--allow`. The one place where configuration and flags become
    settings."""
    main = config.agent("main")
    compaction = config.compaction.model_dump()
    values = {
        **config.session.model_dump(),  # the [session] keys are settings of the same names
        **config.team.model_dump(),  # and so are the [team] keys (None: not set)
        # and the [compaction] keys, but `at`, which is `compact_at` beside the others
        "compact_at": compaction.pop("at"),
        **compaction,
        "max_rounds": args.max_rounds,
        "max_tokens": main.max_tokens,
        "temperature": main.temperature,
        "allow": tuple(args.allow or ()),
        "plan": True if getattr(args, "plan", False) else None,
    }
    return SessionSettings(**{key: value for key, value in values.items() if value is not None})


def overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The settings a `resume` gives explicitly (its session flags, `--max-rounds`,
    `--allow`), by setting name: they replace the journaled ones."""
    given = {key: getattr(args, dest) for dest, _, key in SESSION_FLAGS}
    given["max_rounds"] = args.max_rounds
    given["allow"] = tuple(args.allow) if args.allow else None
    if given.get("verify") is not None:
        given["verify"] = tuple(given["verify"])
    return {key: value for key, value in given.items() if value is not None}


def _ask_resume(
    yes: bool, hold: Hold = no_hold, read: Callable[[], str] | None = None
) -> Callable[[str], Awaitable[bool]] | None:
    """Whether to revive a task whose resume policy is `ask`: yes with `--yes`, asked at
    a terminal, else nobody is asked (it stays stopped)."""
    if not yes and not sys.stdin.isatty():
        return None

    async def ask(question: str) -> bool:
        if yes:
            return True
        with hold("", ""):
            # One line: the question names a task by its (model-written) description.
            print(label(question, 300), file=sys.stderr)
            print("Revive it? [y/N]: ", end="", file=sys.stderr, flush=True)
            line = await trio.to_thread.run_sync(read or sys.stdin.readline, abandon_on_cancel=True)
        return line.strip().lower() in ("y", "yes")

    return ask


def _policy(rules: list[str]) -> PermissionPolicy:
    try:
        return PermissionPolicy(rules=parse_rules(rules))
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc


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
    ):
        workspace = live.manifest.workspace_path(directory)
        screen = screen_for(args, live, config, plan_only=plan_only, people=people)
        settings = await run_settings(
            live,
            args,
            config,
            http,
            definitions,
            changes,
            ui=screen.sink,
            hold=screen.hold,
            say=say,
        )
        async with screen.shown():  # its last frame stays, above the summary
            result = await _drive_until_terminated(live, settings)
        tasks = live.state.tasks.dump()
        refused = refused_lines(live.state.refused)
        pending = live.state.plans.pending
        cost = spent(live.state.usage_by_model, config.prices)
    seconds = time.monotonic() - began
    if plan_only and pending is not None and result is not None:
        if not args.json:
            print(render(pending.plan), end="", flush=True)
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
        seconds=seconds,
    )


async def run_settings(
    live: LiveSession,
    args: argparse.Namespace,
    config: Config,
    http: httpx.AsyncClient,
    definitions: Definitions | None,
    changes: dict[str, Any] | None,
    *,
    ui: EventSink,
    say: Callable[[str], None],
    hold: Hold = no_hold,
    read: Callable[[], str] | None = None,
) -> RunSettings:
    """What a command runs `live` with: its model and its roles' (`args`, else the
    session's), the agent types (`definitions`, else the workspace's), the guards, who
    approves (asked at the terminal through `hold` and `read`, the next line of
    standard input when None), the session's settings with `changes`, and `ui`; its
    notes (no sandbox here, calls that will be refused) are `say`'s."""
    directory = live.directory
    spec = args.model or live.manifest.model_spec(directory)
    guarded = guards(config, args, say=say)
    workspace = live.manifest.workspace_path(directory)
    if definitions is None:
        definitions = await trio.to_thread.run_sync(
            functools.partial(agent_definitions, workspace, interactive=not args.yes)
        )
    approve, approve_for = approvers(args.yes, guarded.sandbox.describe(), hold, read)
    tools = workspace_tools(guarded.env, guarded.sandbox)
    if approve is deny_all:
        rules = _session_for(live, config, args, changes or {}) or live.state.settings
        policy = _policy(list(rules.allow if rules is not None else ()))
        notice = refusal_notice(tools, policy, live.state.grants)
        if notice:
            say(notice)
    models = RoleModels(
        main=spec, cli=args.model, config=config, definitions=definitions, http=http
    )
    return RunSettings(
        model=models("main"),
        models=models,
        definitions=definitions,
        approve_for=approve_for or (lambda agent, who: approve),
        tools=tools,
        redact=guarded.redact,
        ui=ui,
        policy=PermissionPolicy(),
        session=_session_for(live, config, args, changes or {}),
        prices=dict(config.prices),
        windows=model_windows(config),
        ask_resume=_ask_resume(args.yes, hold, read),
        message=getattr(args, "message", None) or "",
        runner=runner_for(args, config, directory),
        **_plan_settings(args, hold, read),
    )


def _ended(
    session_id: str,
    result: RunResult | None,
    tasks: list[dict[str, Any]],
    refused: list[str],
    *,
    say: Callable[[str], None],
    args: argparse.Namespace,
    places: list[tuple[str, Path]],
    spent: str,
    seconds: float,
) -> int:
    """Say how the run ended (the task tree, the refused calls, then the summary: how it
    ended, where the results are, what it cost, what to do next) and give its exit code."""
    if tasks:
        say("tasks:")
        state = result.status if result is not None else "stopped"
        rows = task_rows(tasks, now_ms=time.time() * 1000)
        for line in table((*TASK_HEADER, "WHAT"), [_main_row(state, result), *rows]):
            say(line)
    for line in refused:
        say(line)
    if result is None:
        status, detail, code = "interrupted", "terminated by a signal", EXIT_TERMINATED
        steps = [f"continue it with: {command('resume', session_id, args)}"]
    else:
        status, detail, steps = result.status, result.detail, next_steps(result, session_id, args)
        code = EXIT_OK if status == "completed" else EXIT_CODES.get(status, EXIT_FAILED)
    ending = summary(
        session_id, status, detail, places=places, spent=spent, seconds=seconds, steps=steps
    )
    for line in ending:
        say(line)
    return code


def _main_row(state: str, result: RunResult | None) -> list[str]:
    """The session's row of the final tree: how long since it was created, and the
    tokens and cost of all its model calls."""
    if result is None or result.session_dir is None:
        return ["main", state, NONE, "the session"]
    created = datetime.fromisoformat(read_manifest(result.session_dir).created)
    spent = f"{shown.tokens(result.usage.total_tokens)} tokens · {shown.cost(result.cost)}"
    took = shown.duration(time.time() - created.timestamp())
    return ["main", state, took, f"the session · {spent}"]


def _plan_settings(
    args: argparse.Namespace, hold: Hold = no_hold, read: Callable[[], str] | None = None
) -> dict[str, Any]:
    """The plan part of a run's settings, from its command: `run --plan`, `plan`,
    `execute` (its plan file already read into `args.seed_plan`), `--approve`."""
    interactive = not args.json and sys.stdin.isatty()
    approve = getattr(args, "approve", False)
    return {
        "plan": bool(getattr(args, "plan", False)),
        "plan_only": bool(getattr(args, "plan_only", False)),
        "approve_plan": plan_approver(
            approve=approve, interactive=interactive, hold=hold, read=read
        ),
        "seed_plan": getattr(args, "seed_plan", None),
    }


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
        steps = [f"continue it with: {command('resume', session_id, args)}"]
        places = [("session", session_dir(root, session_id))]
        for line in summary(session_id, "interrupted", "Ctrl+C", places=places, steps=steps):
            people.say(line)
        return EXIT_INTERRUPTED


def _session_for(
    live: LiveSession, config: Config, args: argparse.Namespace, changes: dict[str, Any]
) -> SessionSettings | None:
    """What `drive` is given: nothing when the journal's settings stand unchanged; for a
    session with none yet, those a new one would get (`changes` come from `args`, which
    `session_settings` reads already)."""
    journaled = live.state.settings
    if journaled is None:
        return session_settings(config, args)
    return journaled.but(**changes) if changes else None


async def _drive_until_terminated(live: LiveSession, settings: RunSettings) -> RunResult | None:
    """`drive`, stopped cleanly by SIGTERM as by Ctrl+C: running tools are cancelled (their
    process groups killed) and the session is marked interrupted. None if terminated."""
    result: RunResult | None = None
    try:
        async with trio.open_nursery() as nursery:

            async def run() -> None:
                nonlocal result
                result = await drive(live, settings)
                nursery.cancel_scope.cancel()

            async def watch() -> None:
                # SIGHUP (the terminal closed) stops a run like SIGTERM does.
                with trio.open_signal_receiver(signal.SIGTERM, signal.SIGHUP) as signals:
                    async for _ in signals:
                        nursery.cancel_scope.cancel()
                        return

            nursery.start_soon(watch)
            nursery.start_soon(run)
    except BaseExceptionGroup as group:
        # Ctrl+C or an error in `run` arrives grouped by the nursery; callers expect it bare.
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
    return result


def run_config(args: argparse.Namespace, workspace: Path | None) -> Config:
    """The layered config of a run (cli_env.effective_config); a project config that
    would widen anything is asked about as its agent definitions are (`_definitions`),
    and never with --json, whose output a program reads."""
    interactive = not args.yes and not args.json and sys.stdin.isatty()
    config, _ = effective_config(
        args, os.environ, workspace, ask=ask_trust if interactive else None
    )
    return config


@dataclass(frozen=True)
class NewSession:
    """What a new session is made from, checked before it exists (`new_session`)."""

    args: argparse.Namespace
    workspace: Path | None
    config: Config
    spec: str
    root: Path
    definitions: Definitions
    redact: Callable[[str], str]

    def create(self, goal: str, *, say: Callable[[str], None], source: str = "run") -> str:
        """The session, made on disk with `goal`; its id, said first (only the questions
        about trust come before it, as they must: they decide whether a session is made
        at all)."""
        session_id, _ = create_session(
            self.root,
            goal=self.redact(goal),  # the first text the session keeps: no secret in it
            model=self.spec,
            workspace=self.workspace,
            settings=session_settings(self.config, self.args),
            source=source,
        )
        say(session_line(session_id, self.root, self.args, resuming=False))
        return session_id


def new_session(
    args: argparse.Namespace, *, model: str | None, workspace: Path | None
) -> NewSession:
    """Everything a new session needs that can be wrong, checked before it exists: the
    permission rules, the workspace, the config, the model, the sandbox, the agent
    files (refused ones leave nothing behind)."""
    _policy(args.allow)  # a usage error first, before anything is looked up
    if workspace is not None and not workspace.is_dir():
        raise ConfigError(f"workspace {workspace} is not a directory")
    config = run_config(args, workspace)
    spec = config.model_for("main", cli_model=model or os.environ.get("ORCHESTRATOR_MODEL"))
    # Fail fast, before a session exists.
    resolve_model(spec, env=os.environ, config=config, role="main")
    assert spec is not None
    session_settings(config, args)  # settings out of their bounds: refused now
    chosen_engine(args, config)  # an engine that is not installed: refused now
    redact = guards(config, args).redact  # a required sandbox that is missing refuses
    definitions = agent_definitions(workspace, interactive=not args.yes)
    return NewSession(args, workspace, config, spec, sessions_root(args), definitions, redact)


def start(args: argparse.Namespace, *, goal: str, model: str | None, workspace: Path | None) -> int:
    new = new_session(args, model=model, workspace=workspace)
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
        plan = read_plan_file(target)
        check(plan)  # a PlanError naming every error, before a session exists
        args.seed_plan = plan
        args.plan = True  # journaled with the session: a kill before the plan is journaled
        workspace = None if args.session_workspace else (args.workspace or default_workspace())
        return start(args, goal=plan.goal, model=args.model, workspace=workspace)
    if args.workspace is not None or args.session_workspace:
        raise ConfigError(
            f"{args.target} is no file, so it is taken for a session id, whose workspace is "
            "its own: drop -w/--session-workspace (or give the path of a plan file)"
        )
    args.session_id, args.last, args.message = args.target, False, None
    return resume(args)


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
    _policy(args.allow)
    root = sessions_root(args)
    if args.last == bool(args.session_id):
        raise ConfigError("give a session ID or --last (not both)")
    session_id = latest_session_id(root) if args.last else args.session_id
    directory = session_dir(root, session_id)
    manifest = read_manifest(directory)
    # The journal's status, which a kill may have left the manifest without.
    status = current_status(directory, {**msgspec.to_builtins(manifest)})
    people = People.of(args)
    if status == "completed" and not args.message:
        people.say(
            f"session {session_id} already finished (completed); nothing to do (give "
            "--message to follow up)"
        )
        return EXIT_OK
    people.say(session_line(session_id, root, args, resuming=True))
    config = run_config(args, manifest.workspace_path(directory))
    chosen_engine(args, config)
    # The session's journaled settings, but for what this command gives explicitly.
    return run_kept(root, session_id, args, config, overrides(args), people=people)
