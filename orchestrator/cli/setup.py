"""What a run of the command line is made of, checked before anything runs: a new
session's model, config, sandbox and agent files (`new_session`); the session's settings
from the config and the flags (`session_settings`, `overrides`); and what `drive` is
given for a session (`run_settings`: models, tools, approvers asking at the terminal).
`run`, `resume`, `execute`, `plan`, `demo` and `chat` share them.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import msgspec
import trio

from orchestrator.cli.engine import chosen_engine, database_change, engine_settings, runner_for
from orchestrator.cli.env import SESSION_FLAGS, effective_config, sessions_root
from orchestrator.cli.guards import guards, new_shell_settings, shell_settings
from orchestrator.cli.mcp import approved_for, with_mcp
from orchestrator.cli.mcp_prompt import terminal_asks
from orchestrator.cli.out import session_line
from orchestrator.cli.plan_prompt import plan_approver
from orchestrator.cli.prompt import Asking, Hold, approvers, no_hold, refusal_notice
from orchestrator.cli.roles import RoleModels, agent_definitions, ask_trust, model_windows
from orchestrator.cli.settings import plan_limits
from orchestrator.config import Config
from orchestrator.errors import ConfigError
from orchestrator.mcp import McpTools
from orchestrator.models.resolve import resolve_model
from orchestrator.session.creation import create_session
from orchestrator.session.live import LiveSession
from orchestrator.state.events import EventSink
from orchestrator.state.settings import SessionSettings
from orchestrator.team.definitions import Definitions
from orchestrator.team.hook_runs import Hook
from orchestrator.team.settings import RunSettings
from orchestrator.text import label
from orchestrator.tools import (
    PermissionPolicy,
    deny_all,
    workspace_tools,
)
from orchestrator.tools.permissions import Denied, parse_rules


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
    the session flags over it, [team], [compaction]) and `--max-rounds` and `--allow`, and
    the engine (`--engine`, `--database-url`, [engine]), the sandbox (`--sandbox`,
    `--network`, [shell]) and the plan's approval (`--approve`). The one place where
    configuration and flags become settings. (A role's `max_tokens` and `temperature`,
    under `[agents.ROLE]`, are its model's: `RoleModels`.)"""
    compaction = config.compaction.model_dump()
    values = {
        **config.session.model_dump(),  # the [session] keys are settings of the same names
        **config.team.model_dump(),  # and so are the [team] keys (None: not set)
        **config.tools.model_dump(),  # and the [tools] keys
        # and the [compaction] keys, but `at`, which is `compact_at` beside the others
        "compact_at": compaction.pop("at"),
        **compaction,
        "max_rounds": args.max_rounds,
        "allow": tuple(args.allow or ()),
        "plan": True if getattr(args, "plan", False) else None,
        **engine_settings(args, config),
        **new_shell_settings(config, args),
        **approval(args, versions=0),
    }
    return SessionSettings(**{key: value for key, value in values.items() if value is not None})


def approval(args: argparse.Namespace, *, versions: int) -> dict[str, Any]:
    """The plan approval `--approve` gives in advance, as settings (none without it), for
    a session with `versions` plan versions so far: `--approve all` every version;
    `--approve` the versions there are (the person could see them: `plan.md`, `sessions
    show`), or the first when there is none yet, and any later one that adds no task and
    no command to them (team/planning.py's `in_advance`)."""
    given = getattr(args, "approve", None)
    if not given:
        return {}
    scope = "all" if given == "all" else "seen"
    return {"approve": scope, "approve_through": max(versions, 1)}


def overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The settings a `resume` gives explicitly (its session flags, `--max-rounds`,
    `--allow`, `--engine`, `--workers`), by setting name: they replace the journaled ones. (The
    database of a session on dbos is `run_settings`'s: it depends on the engine.)"""
    given = {key: getattr(args, dest) for dest, _, key in SESSION_FLAGS}
    given["max_rounds"] = args.max_rounds
    given["allow"] = tuple(args.allow) if args.allow else None
    given["engine"] = getattr(args, "engine", None)
    given["engine_workers"] = getattr(args, "workers", None)
    if given.get("verify") is not None:
        given["verify"] = tuple(given["verify"])
    return {key: value for key, value in given.items() if value is not None}


def _ask_resume(
    yes: bool, asking: Asking, read: Callable[[], str] | None = None
) -> Callable[[str], Awaitable[bool]] | None:
    """Whether to revive a task whose resume policy is `ask`: yes with `--yes`, asked at
    a terminal, else nobody is asked (it stays stopped)."""
    if not yes and not sys.stdin.isatty():
        return None

    async def ask(question: str) -> bool:
        if yes:
            return True
        async with asking("", ""):
            # One line: the question names a task by its (model-written) description.
            print(label(question, 300), file=sys.stderr)
            print("Revive it? [y/N]: ", end="", file=sys.stderr, flush=True)
            line = await trio.to_thread.run_sync(read or sys.stdin.readline, abandon_on_cancel=True)
        return line.strip().lower() in ("y", "yes")

    return ask


def check_rules(rules: list[str]) -> PermissionPolicy:
    """The `--allow` rules as a policy, or a usage error naming the bad one."""
    try:
        return PermissionPolicy(rules=parse_rules(rules))
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc


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
    mcp: McpTools | None = None,
    trace_parent: Callable[[str], str] | None = None,
) -> RunSettings:
    """What a command runs `live` with: its model and its roles' (`args`, else the
    session's), the agent types (`definitions`, else the workspace's), the guards, who
    approves (asked at the terminal through `hold` and `read`, the next line of
    standard input when None; one question at a time with the plan's, the MCP servers'
    and a revival's: `prompt.Asking`), the session's settings with `changes`, and `ui`; its
    notes (no sandbox here, calls that will be refused) are `say`'s. `mcp`: the tools of
    the config's MCP servers, opened by the caller for the session's time (cli/mcp.py).
    `trace_parent`: a traced run's `TRACEPARENT` of a call (tracing/run.py)."""
    directory = live.directory
    session = _session_for(live, config, args, changes or {}, say)
    running = session or live.state.settings
    assert running is not None  # (a session without settings gets a new session's)
    spec = args.model or live.manifest.model_spec(directory)
    # `plan` runs the planner alone, whose tools only read (no shell, nothing written):
    # what a run that writes is told about its shell and its refused calls is untrue of it.
    planning_only = bool(getattr(args, "plan_only", False))
    guarded = guards(config, args, say=None if planning_only else say, settings=running)
    workspace = live.manifest.workspace_path(directory)
    if definitions is None:
        definitions = await trio.to_thread.run_sync(
            functools.partial(agent_definitions, workspace, interactive=not args.yes)
        )
    asking = Asking(hold)  # the terminal's questions, one at a time, whoever asks
    approve, approve_for = approvers(args.yes, guarded.sandbox.describe(), asking, read)
    env = dataclasses.replace(guarded.env, trace_parent=trace_parent)
    tools = workspace_tools(env, guarded.sandbox)
    redact = guarded.redact
    if mcp is not None:
        mcp = await mcp.pinned(live, approved_for(workspace, os.environ), trace_parent)
        tools, definitions, redact = with_mcp(mcp, tools, definitions, redact, os.environ)
    if approve is deny_all and not planning_only:
        policy = check_rules(list(running.allow))
        notice = refusal_notice(tools, policy, live.state.grants)
        if notice:
            say(notice)
    models = RoleModels(
        main=spec, cli=args.model, config=config, definitions=definitions, http=http
    )
    if mcp is not None:  # what the servers ask: the person here (completions: the agents')
        ask, confirm = terminal_asks(asking, read)
        mcp.answering(live, ask, by="person", confirm=confirm)
    return RunSettings(
        model=models("main"),
        models=models,
        definitions=definitions,
        approve_for=approve_for or (lambda agent, who: approve),
        person_approves=approve_for is not None,  # (the terminal's)
        tools=tools,
        redact=redact,
        ui=ui,
        policy=PermissionPolicy(),
        session=session,
        prices=dict(config.prices),
        windows=model_windows(config, models),
        ask_resume=_ask_resume(args.yes, asking, read),
        message=getattr(args, "message", None) or "",
        approvals=call_decisions(args),
        runner=runner_for(
            running,
            args,
            config,
            directory,
            model=spec,
            workspace=workspace,
            trace_parent=trace_parent,
        ),
        plan_limits=plan_limits(config),
        hooks=tuple(Hook.of(hook) for hook in config.hooks),
        **_plan_settings(args, asking, read),
    )


def call_decisions(args: argparse.Namespace) -> dict[str, bool | Denied]:
    """`resume --approve-call ID` and `--deny-call ID --reason TEXT`, by call id
    (`RunSettings.approvals`)."""
    reason = getattr(args, "reason", "") or ""
    decisions: dict[str, bool | Denied] = {
        key: Denied(reason) if reason else False for key in getattr(args, "deny_call", None) or ()
    }
    decisions.update({key: True for key in getattr(args, "approve_call", None) or ()})
    return decisions


def _plan_settings(
    args: argparse.Namespace, asking: Asking, read: Callable[[], str] | None = None
) -> dict[str, Any]:
    """The plan part of a run's settings, from its command: `run --plan`, `plan`,
    `execute` (its plan file already read into `args.seed_plan`), and who is asked about
    a version `--approve` does not cover (`--approve` itself is a session setting)."""
    interactive = not args.json and sys.stdin.isatty()
    return {
        "plan": bool(getattr(args, "plan", False)),
        "plan_only": bool(getattr(args, "plan_only", False)),
        "approve_plan": plan_approver(interactive=interactive, asking=asking, read=read),
        "seed_plan": getattr(args, "seed_plan", None),
    }


def _session_for(
    live: LiveSession,
    config: Config,
    args: argparse.Namespace,
    changes: dict[str, Any],
    say: Callable[[str], None],
) -> SessionSettings | None:
    """What `drive` is given: nothing when the journal's settings stand unchanged; for a
    session with none yet, those a new one would get (`changes` come from `args`, which
    `session_settings` reads already). A session on dbos is given the database the
    command names (`database_change`); the sandbox and network are the journal's but
    for a flag (`shell_settings`, which says a loosening); `--approve` covers the plan
    versions there are (`approval`)."""
    journaled = live.state.settings
    versions = len(live.state.plans.versions)
    if journaled is None:
        return session_settings(config, args).but(**approval(args, versions=versions))
    changes = {
        **changes,
        **database_change(journaled.but(**changes), args, config),
        **shell_settings(journaled, config, args, say),
        **approval(args, versions=versions),
    }
    chosen = journaled.but(**changes)
    return chosen if chosen != journaled else None


def run_config(args: argparse.Namespace, workspace: Path | None) -> Config:
    """The layered config of a run (cli_env.effective_config); a project config that
    would widen anything is asked about as its agent definitions are (`_definitions`),
    and never with --json, whose output a program reads."""
    interactive = not args.yes and not args.json and sys.stdin.isatty()
    config, _ = effective_config(
        args, os.environ, workspace, ask=ask_trust if interactive else None
    )
    return config


class NewSession(msgspec.Struct, frozen=True):
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
    check_rules(args.allow)  # a usage error first, before anything is looked up
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
