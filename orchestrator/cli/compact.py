"""`orchestrator sessions compact ID [--agent A | all] [--model SPEC]`: compact agents'
contexts by hand, on a stopped session.

The session is opened as `resume` opens it (its lock refuses a session in use), and its
team is built as a run builds it, with no agent running: the team's compactor makes the
checkpoint exactly as a running session would at a round boundary (`reason` `by_hand`),
its summary written by the `compactor` role's model (`[agents.compactor] model`, else the
session's; `--model` instead). The next `resume` goes on from the checkpoint.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import trio

from orchestrator.cli.env import effective_config
from orchestrator.cli.out import command
from orchestrator.cli.roles import RoleModels, agent_definitions, ask_trust, model_windows, note
from orchestrator.config import Config
from orchestrator.errors import ConfigError, NothingToCompact, SessionError
from orchestrator.loop.compaction import ContextCompacted
from orchestrator.models.base import COMPACTOR, Model
from orchestrator.models.http import make_client
from orchestrator.models.resolve import key_variables, resolve_model
from orchestrator.redaction import Redactor
from orchestrator.session.live import LiveSession, open_session
from orchestrator.state.events import Event, FanOut, Notice
from orchestrator.state.fold import SessionState
from orchestrator.state.manifest import read_manifest
from orchestrator.state.scrub import Scrubbed
from orchestrator.state.settings import SessionSettings
from orchestrator.store import session_dir
from orchestrator.team.drive import seat_of
from orchestrator.team.hook_runs import Hook
from orchestrator.team.hook_told import told
from orchestrator.team.port import TaskPort
from orchestrator.team.runtime import Team
from orchestrator.team.settings import RunSettings
from orchestrator.text import label
from orchestrator.tools import ToolRegistry

ALL = "all"
"""`--agent all`: every agent that has a context."""


def compact(args: argparse.Namespace, root: Path) -> int:
    """Compact the chosen agents of session `args.session_id`; print a line (or, with
    `--json`, an object) per agent."""
    directory = session_dir(root, args.session_id)
    manifest = read_manifest(directory)  # a session, or SessionNotFound (exit 2)
    workspace = manifest.workspace_path(directory)
    interactive = not args.json and sys.stdin.isatty()
    config, _ = effective_config(
        args, os.environ, workspace, ask=ask_trust if interactive else None
    )
    records = trio.run(_compact, root, args, config, interactive)
    for record in records:
        if isinstance(record, NothingToCompact):
            agent, why = record.args
            if args.json:
                print(orjson.dumps({"agent": agent, "nothing_to_compact": why}).decode())
            else:
                print(f"{label(agent, 40)}: nothing to compact: {why}")
        elif args.json:
            print(orjson.dumps(summary(record)).decode())
        else:
            print(compacted_line(record))
    note(
        f"session {args.session_id}: a resume goes on from the checkpoint "
        f"({command('resume', args.session_id, args)})"
    )
    return 0


async def _compact(
    root: Path, args: argparse.Namespace, config: Config, interactive: bool
) -> list[ContextCompacted | NothingToCompact]:
    async with open_session(root, args.session_id, warn=note) as live, make_client() as http:
        agents = chosen_agents(live.state, args.agent, args.session_id)
        workspace = live.manifest.workspace_path(live.directory)
        definitions = await trio.to_thread.run_sync(
            functools.partial(agent_definitions, workspace, interactive=interactive)
        )
        roles = RoleModels(
            main=live.manifest.model_spec(live.directory),
            cli=None,
            config=config,
            definitions=definitions,
            http=http,
        )
        models: Callable[[str], Model] = roles
        if args.model:
            writer = resolve_model(
                args.model, env=os.environ, http=http, config=config, role=COMPACTOR
            )
            models = _with_writer(roles, writer)
        redact = Redactor.for_environment(key_variables(env=os.environ, config=config), os.environ)
        run = RunSettings(
            model=models("main"),
            models=models,
            tools=ToolRegistry(),
            definitions=definitions,
            redact=redact,
            windows=model_windows(config, roles),
            hooks=tuple(Hook.of(hook) for hook in config.hooks),  # (pre_ and post_compact)
        )
        seat = seat_of(live, live.state.settings or SessionSettings())
        team = Team(live, _sink(live, redact), run, seat, _NoRunner())
        records: list[ContextCompacted | NothingToCompact] = []
        for agent in agents:
            try:
                record = await team.compactor.compact(live.state.agents[agent], "by_hand")
            except NothingToCompact as exc:
                records.append(NothingToCompact(agent, str(exc)))
                continue
            assert record is not None  # (the team has no nursery: nothing in the background)
            records.append(record)
            said = told(record, live.state)  # post_compact, told now (no team runs to)
            if said is not None:
                await team.hooks.tell(*said)
        return records


def chosen_agents(state: SessionState, agent: str, session_id: str) -> list[str]:
    """The agents `--agent` names (`all`: every one with a context), each checked: it has
    a context, and none of its calls is open (a compaction at a round boundary only)."""
    if agent == ALL:
        agents = [a for a, context in state.agents.items() if context.messages]
        if not agents:
            raise ConfigError(f"session {session_id} has no agent with a context yet")
    elif agent in state.agents and state.agents[agent].messages:
        agents = [agent]
    else:
        known = ", ".join(a for a, context in state.agents.items() if context.messages)
        raise ConfigError(
            f"session {session_id} has no agent {label(agent, 60)!r} with a context "
            f"(its agents: {known or 'none yet'})"
        )
    busy = [a for a in agents if state.agents[a].open_calls]
    if busy:
        which = ", ".join(busy)
        raise SessionError(
            f"session {session_id}: {which} {'has' if len(busy) == 1 else 'have'} a tool call "
            "that was never answered (cut off when the session stopped); a context is "
            f"compacted between rounds only: resume it first (orchestrator resume "
            f"{session_id}), then compact"
        )
    return agents


def _with_writer(roles: Callable[[str], Model], writer: Model) -> Callable[[str], Model]:
    """`roles`, but `writer` for the summaries (the `compactor` role)."""
    return lambda role: writer if role == COMPACTOR else roles(role)


def _sink(live: LiveSession, redact: Redactor) -> Scrubbed:
    """Into the session (journaled and folded), secrets out, notices to the terminal."""
    return Scrubbed(FanOut([live, _Notices()]), redact)


class _Notices:
    """A compaction's notices (the breaker paused), on stderr."""

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        if isinstance(event, Notice):
            note(f"note: {event.message}")


class _NoRunner:
    """Where a stopped session's tasks run while it is compacted: nowhere."""

    def start(self, task_id: str, port: TaskPort) -> None:
        raise AssertionError(f"task {task_id} started while its session is compacted")

    def cancel(self, task_id: str) -> None:
        return None


def summary(record: ContextCompacted) -> dict[str, Any]:
    """A compaction as `--json` prints it (its messages left out: `sessions show
    --transcript` has them)."""
    return record.figures()


def compacted_line(record: ContextCompacted) -> str:
    """`main: 12,480 → 2,310 tokens, summary by openai:gpt-4.1-mini, 14 tool outputs
    pruned`: the tokens before and after, the method, what was pruned and dropped."""
    model = label(record.model, 60)
    method = {
        "pruned": "pruned",
        "summary": f"summary by {model}",
        "fallback": f"fallback (the summary by {model} failed)",
        "truncated": "truncated (summarised, its oldest turns dropped)",
    }[record.method]
    line = (
        f"{label(record.agent, 40)}: {record.before:,} → {record.after:,} tokens, {method}, "
        f"{_count(record.pruned, 'tool output')} pruned"
    )
    if record.dropped:
        line += f", {_count(record.dropped, 'message')} dropped"
    return line


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")
