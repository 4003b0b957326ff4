"""`orchestrator mcp serve`: the team as an MCP server (docs/mcp.md, orchestrator/serve/).
Sessions are made and run here as `run` and `resume` make and run them (the config, the
model, the agent files, the workspace tools, the config's MCP servers, the session
flags), but asked nothing at a terminal: the client approves calls and plans
(`decide`), and standard output is the protocol's (stdio), so every line for a person
goes to standard error."""

from __future__ import annotations

import argparse
import copy
import dataclasses
import secrets
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING

import trio

from orchestrator.cli import collector
from orchestrator.cli.env import sessions_root
from orchestrator.cli.mcp import opened_for_run
from orchestrator.cli.setup import (
    NewSession,
    check_rules,
    default_workspace,
    new_session,
    overrides,
    run_config,
    run_settings,
)
from orchestrator.models.http import make_client
from orchestrator.session.live import open_session
from orchestrator.state.manifest import read_manifest
from orchestrator.store import Durability, session_dir
from orchestrator.team.drive import RunResult, drive
from orchestrator.text import visible
from orchestrator.tools.permissions import Denied

if TYPE_CHECKING:  # serve/ (and the SDK) are imported only when serving
    from orchestrator.serve import Hooks

TOKEN_VARIABLE = "ORCHESTRATOR_MCP_TOKEN"
NOBODY_ASKED = "no terminal and no --yes"  # cli/prompt.py's `refusal_notice`


def serve(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """Serve until the client leaves (stdio) or the process is stopped (HTTP)."""
    from orchestrator.serve import check_loopback, serve_http, serve_stdio

    check_rules(args.allow)
    if args.http:
        check_loopback(args.host)  # before anything is read or made
    launcher = CliLauncher(args)
    if not args.http:
        trio.run(_until_stopped, partial(serve_stdio, launcher))
        return 0
    token = environ.get(TOKEN_VARIABLE, "")
    if not token:
        token = secrets.token_urlsafe(24)
        _say(f"token (none in {TOKEN_VARIABLE}, so one made for this run): {token}")

    def ready(url: str) -> None:
        _say(f"serving MCP at {url} (streamable HTTP; send Authorization: Bearer TOKEN)")

    work = partial(serve_http, launcher, host=args.host, port=args.port, token=token, ready=ready)
    trio.run(_until_stopped, work)
    return 0


class CliLauncher:
    """Makes and drives served sessions the command line's way (serve/desk.py's
    `Launcher`)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self._args = args
        self.root = sessions_root(args)
        self._workspace = (
            None if args.session_workspace else (args.workspace or default_workspace())
        )
        # Everything a new session needs that can be wrong, checked now, before a client
        # asks for one: the config, the model, the sandbox, the agent files.
        new_session(args, model=args.model, workspace=self._workspace)
        self._made: dict[str, tuple[NewSession, argparse.Namespace]] = {}

    def create(self, goal: str, *, plan: bool) -> str:
        args = copy.copy(self._args)
        args.plan = plan
        new = new_session(args, model=args.model, workspace=self._workspace)
        session_id = new.create(goal, say=_say, source="mcp serve")
        self._made[session_id] = (new, args)
        return session_id

    async def drive(
        self,
        session_id: str,
        hooks: Hooks,
        *,
        message: str = "",
        approvals: Mapping[str, bool | Denied] | None = None,
    ) -> RunResult:
        made = self._made.pop(session_id, None)
        args = copy.copy(made[1] if made is not None else self._args)
        args.message = message
        directory = session_dir(self.root, session_id)
        if made is not None:  # its first run: as `run` runs a session it just made
            config, definitions, changes = made[0].config, made[0].definitions, None
        else:  # as `resume` does: the journal's settings, but for the flags given
            workspace = read_manifest(directory).workspace_path(directory)
            config = await trio.to_thread.run_sync(run_config, args, workspace)
            definitions, changes = None, overrides(args)
        async with (
            open_session(
                self.root, session_id, durability=Durability(args.durability), warn=_say
            ) as live,
            make_client() as http,
            opened_for_run(config, _say, live.state.mcp) as mcp,  # stopped with the session
        ):
            settings = await run_settings(
                live, args, config, http, definitions, changes, ui=hooks.ui, say=_noted, mcp=mcp
            )
            settings = dataclasses.replace(
                settings,
                # The client decides what the rules ask about (--yes: every call is allowed).
                approve=hooks.approve,
                approve_for=settings.approve_for if args.yes else None,
                approve_plan=hooks.approve_plan,
                on_team=hooks.on_team,
                ask_resume=settings.ask_resume if args.yes else None,
                approvals={**settings.approvals, **(approvals or {})},
            )
            collector.settle()
            return await drive(live, settings)


async def _until_stopped(work: Callable[[], Awaitable[None]]) -> None:
    """`work()`, stopped by Ctrl+C, SIGTERM or SIGHUP: the sessions it runs are then
    recorded interrupted, resumable."""
    async with trio.open_nursery() as nursery:

        async def watch(*, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
            with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as got:
                task_status.started()
                async for _ in got:
                    nursery.cancel_scope.cancel()
                    return

        async def run() -> None:
            await work()
            nursery.cancel_scope.cancel()

        await nursery.start(watch)
        nursery.start_soon(run)


def _noted(text: str) -> None:
    """A run's notes, but the one that says nobody is there to approve: the client is."""
    if not text.startswith(NOBODY_ASKED):
        _say(text)


def _say(text: str) -> None:
    print(visible(text), file=sys.stderr, flush=True)
