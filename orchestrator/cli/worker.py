"""`orchestrator worker`: run the delegated tasks that sessions on the dbos engine put on
its queue, here (docs/engine.md). Models, keys, the sandbox and the environment policy
are this process's own: its config and environment, never the database's."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import os
import signal
import sys
import tomllib
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

import httpx
import trio

from orchestrator.cli import collector
from orchestrator.cli.env import PROJECT_CONFIG, config_files, config_layers, user_config_dir
from orchestrator.cli.guards import Guards, guards
from orchestrator.cli.mcp import configured, with_mcp
from orchestrator.cli.roles import RoleModels, agent_definitions, model_windows
from orchestrator.config import Config
from orchestrator.engine.choice import require_dbos
from orchestrator.errors import ConfigError, bare
from orchestrator.mcp import open_servers
from orchestrator.stamps import ByStamps
from orchestrator.state.events import Event, ToolCallStarted
from orchestrator.state.fold import SessionState
from orchestrator.state.tasks import TaskChanged
from orchestrator.team.agent_files import DefinitionsCache
from orchestrator.team.hook_runs import Hook
from orchestrator.team.settings import RunSettings
from orchestrator.text import visible
from orchestrator.tools import EnvPolicy, approve_all, workspace_tools
from orchestrator.tracing import telemetry_from

T = TypeVar("T")

if TYPE_CHECKING:
    from orchestrator.engine.store import Run
    from orchestrator.engine.task_session import TaskSession
    from orchestrator.tracing.task import TaskTracing


def serve(args: argparse.Namespace, config: Config) -> int:
    """Serve until Ctrl+C (a clean stop: the worker's tasks go on elsewhere)."""
    require_dbos()
    url = args.database_url or config.engine.database_url
    if not url:
        raise ConfigError(
            "a worker needs the engine's database: --database-url URL or [engine] "
            "database_url (the URL the sessions use)"
        )
    # Ctrl+C (SIGINT) stops a worker whatever its parent left: a process started with
    # SIGINT ignored or blocked (by a supervisor, a test runner's worker) would go on.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        try:
            trio.run(_serve, args, config, url)
        except* KeyboardInterrupt:
            print("worker stopped", flush=True)
            sys.stderr.flush()
            # Threads of tasks it ran hold on, so that DBOS records no outcome for them
            # (their workflows are taken over elsewhere): the process ends without them.
            os._exit(0)
    except BaseExceptionGroup as group:
        raise bare(group) from None  # (a refusal said in one line, as any command's)
    return 0


async def _serve(args: argparse.Namespace, config: Config, url: str) -> None:
    from orchestrator.engine.worker import Worker

    # Read once for all its tasks: its guards (its config and environment), and each
    # workspace's agent types, again only when their files change.
    # (made at the first task, as before: a refusal, a sandbox required and missing, is
    # each task's failure, not the worker's)
    guarded = functools.cache(functools.partial(guards, config, args))
    tracer = _tracer(config)
    trace = functools.partial(command_trace, traced=tracer is not None)
    cache = DefinitionsCache(
        functools.partial(agent_definitions, interactive=False), user_config_dir(os.environ)
    )
    hooks = ProjectHooks()
    async with httpx.AsyncClient(timeout=httpx.Timeout(600.0, connect=30.0)) as http:

        async def settings_for(run: Run, state: SessionState, traceparent: str) -> RunSettings:
            env = dataclasses.replace(guarded().env, trace_parent=trace(run.task, traceparent))
            return await task_settings(
                args, config, http, run.workspace, run.model, guarded(), cache, env, hooks
            )

        log = WorkerLog()
        worker = Worker(
            url,
            settings_for,
            concurrency=args.concurrency,
            beat=args.beat,
            silent=args.silent,
            ask_session=not args.yes,
            say=log.say,
            ui=log,
            status_every=args.status_every,
            trace=tracer,
            open_for=functools.partial(with_servers, config, log.say),
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(log.keep_flushing)
            try:
                await nursery.start(worker.serve)
                collector.settle(collect=True)  # (its modules, DBOS launched)
                await trio.sleep_forever()
            finally:
                log.flush()  # (the process may end at once: Ctrl+C)
                if tracer is not None:
                    await tracer.close()


def _tracer(config: Config) -> TaskTracing | None:
    """How this worker traces the tasks of traced sessions: with its own telemetry
    (`[telemetry]`, `OTEL_*`; docs/tracing.md) and prices, one exporter for all its
    tasks; None when it is off."""
    telemetry = telemetry_from(config.telemetry, os.environ)
    if telemetry is None:
        return None
    from orchestrator.tracing.run import exporter_class
    from orchestrator.tracing.task import TaskTracing

    exporter_class()  # (without the otel extra: a ConfigError now, not a task's failure)

    return TaskTracing(telemetry, dict(config.prices))


def command_trace(key: str, traceparent: str, *, traced: bool) -> Callable[[str], str] | None:
    """The `TRACEPARENT` of task `key`'s calls' commands (`<session id>/<task id>`), by
    call ref: the call's own span when this worker traces the task (its key
    `call:TASK/REF`, tracing/spans.py), else the delegating call's (`traceparent`, its
    workflow's), so that a command's spans join the session's trace either way; None
    when the session is not traced."""
    from orchestrator.tracing import traceparent as traceparent_of
    from orchestrator.tracing.task import trace_of

    trace_id = trace_of(traceparent) if traceparent else None
    if trace_id is None:
        return None
    if not traced:
        return lambda ref: traceparent
    task = key.rpartition("/")[2]
    return lambda ref: traceparent_of(trace_id, f"call:{task}/{ref}")


class WorkerLog:
    """What the worker's tasks do, one line each to standard output: the calls they start
    (journaled when the line is printed; a read-only call's start may be queued still for
    the task's writer) and the states they reach. The lines are written out as the loop
    yields (`keep_flushing`), those of one pass in one write: a write each (stdout is
    often unbuffered: `PYTHONUNBUFFERED`) cost a task about as much as the rest of its
    lines' making. The worker's own lines (`say`) go out at once, after those before."""

    def __init__(self) -> None:
        self._lines: list[str] = []  # printed, not yet written out
        self._printed = trio.Event()

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        match event:
            case ToolCallStarted(agent=agent, call=call, ref=ref):
                self._print(visible(f"task {agent}: call {call.name} ({ref})"))
            case TaskChanged(task=task, state=state, reason=reason):
                self._print(visible(f"task {task}: {state}{f' ({reason})' if reason else ''}"))

    def say(self, line: str) -> None:
        self._lines.append(line)
        self.flush()

    def _print(self, line: str) -> None:
        self._lines.append(line)
        self._printed.set()

    def flush(self) -> None:
        """Write out the lines printed so far."""
        if self._lines:
            lines, self._lines = self._lines, []
            sys.stdout.write("".join(f"{line}\n" for line in lines))
            sys.stdout.flush()

    async def keep_flushing(self) -> None:
        """Write out the lines printed, once a pass of the loop, until cancelled."""
        while True:
            await self._printed.wait()
            self._printed = trio.Event()
            self.flush()


@contextlib.asynccontextmanager
async def with_servers(
    config: Config,
    say: Callable[[str], None],
    run: Run,
    session: TaskSession,
    settings: RunSettings,
) -> AsyncIterator[RunSettings]:
    """`settings` with the worker's MCP servers (its config's `[mcp.servers]`) started for
    the time of a task's loop, their tools added as a session adds them: pinned in the
    task's journal (a resumed task's started at their first call), a server that does
    not start said in one line (`say`). A server's question finds nobody to ask (the task stops
    blocked on it, as a headless session does); its sampling, the agent's model."""
    servers = configured(config)
    if not servers:  # (the SDK not imported)
        yield settings
        return
    async with open_servers(servers, os.environ, session.state.mcp) as opened:
        for line in opened.failed:
            say(visible(f"task {run.task}: {line}"))
        pinned = await opened.pinned(session)
        tools, definitions, redact = with_mcp(
            pinned, settings.tools, settings.definitions, settings.redact, os.environ
        )
        pinned.answering(session, None, by="worker")
        yield dataclasses.replace(settings, tools=tools, definitions=definitions, redact=redact)


async def task_settings(
    args: argparse.Namespace,
    config: Config,
    http: httpx.AsyncClient,
    workspace: str,
    model: str,
    guarded: Guards,
    cache: DefinitionsCache,
    env: EnvPolicy | None = None,
    hooks: ProjectHooks | None = None,
) -> RunSettings:
    """What the team of a remote task runs with here: the session's model spec (from
    the database), this worker's keys, agent types (the workspace's), tools and guards; a
    call the policy asks about is approved here (`--yes`), else put to the session
    (engine/approvals.py, set by the worker). `env`: the shell's environment policy, when
    not the guards' own (a traced task's, which sets its commands' `TRACEPARENT`).
    `hooks`: each workspace's hooks, as read before."""
    root = Path(workspace)
    definitions = cache.known(root)
    if definitions is None:  # (read again: in a thread)
        definitions = await trio.to_thread.run_sync(cache.get, root)
    models = RoleModels(main=model, cli=None, config=config, definitions=definitions, http=http)
    return RunSettings(
        model=models("main"),
        models=models,
        definitions=definitions,
        tools=workspace_tools(env or guarded.env, guarded.sandbox),
        redact=guarded.redact,
        prices=dict(config.prices),
        windows=model_windows(config, models),
        approve=approve_all if args.yes else None,
        hooks=await (hooks or ProjectHooks()).of(args, config, root),
    )


def workspace_hooks(args: argparse.Namespace, config: Config, root: Path) -> tuple[Hook, ...]:
    """The hooks a task's turns run with here (docs/hooks.md): this worker's config's,
    or the project's (`.orchestrator/config.toml` in the task's workspace) when this
    worker's user trusts the project with them (never asked: a worker has no terminal).
    None without a `[[hooks]]` in either: the project's file is only glanced at then."""
    if not config.hooks and not _has_hooks(root / PROJECT_CONFIG):
        return ()
    layered = config_layers(args, os.environ, root, ask=None, untrusted="ignore")
    return tuple(Hook.of(hook) for hook in layered.config.hooks)


class ProjectHooks:
    """The hooks of a worker's tasks, by workspace (`workspace_hooks`), read again only
    when a file they come from changed: whether the project's config names any at all
    (`named`: a worker's every task asks), and the hooks themselves (`loaded`: its
    config's layers and the trust store, when there are hooks)."""

    def __init__(self) -> None:
        self.named: ByStat[bool] = ByStat()
        self.loaded: ByStat[tuple[Hook, ...]] = ByStat()

    async def of(self, args: argparse.Namespace, config: Config, root: Path) -> tuple[Hook, ...]:
        project = root / PROJECT_CONFIG
        if not config.hooks:
            named = functools.partial(_has_hooks, project)
            if not await self.named.get(project, [project], named):
                return ()
        files = config_files(args, os.environ, root)
        return await self.loaded.get(
            root, files, functools.partial(workspace_hooks, args, config, root)
        )


class ByStat(Generic[T]):
    """Values made from files in a thread (`stamps.ByStamps`: made again only when one of
    the files' stat changed, or changed lately)."""

    def __init__(self) -> None:
        self._kept: ByStamps[Path, T] = ByStamps()

    @property
    def reads(self) -> int:
        """How many times a value was made."""
        return self._kept.made

    async def get(self, key: Path, paths: Sequence[Path], make: Callable[[], T]) -> T:
        stamps, value = self._kept.look(key, paths)  # (stats: on trio's thread)
        if value is not None:
            return value
        return self._kept.keep(key, stamps, await trio.to_thread.run_sync(make))


def _has_hooks(path: Path) -> bool:
    try:
        with path.open("rb") as file:
            return "hooks" in tomllib.load(file)
    except FileNotFoundError:
        return False
    except (OSError, tomllib.TOMLDecodeError):
        return True  # (the full load says what is wrong with it)
