"""The sessions an `orchestrator mcp serve` process runs for its clients: each started
(or resumed) as a task of the server's nursery, on trio, an ordinary session on disk
that the command line can resume; what each is waiting for (a tool call or a plan the
client must decide on); and the events a waiting client is told as progress.

The server does not say how a session is made or driven: a `Launcher` does (the command
line's, cli/mcp_serve.py, so a served session is made and resumed as `orchestrator run`
and `resume` make and resume one). The desk gives it `Hooks`: where the events go, who
approves a call or a plan (the client, through `decide`), and where the running `Team`
is handed (for `send_message` and `answer_question`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import msgspec
import trio

from orchestrator.errors import OrchestratorError
from orchestrator.serve.served import Asked, Decision, Served, ServedSink, call_decision, decision
from orchestrator.serve.views import Data, plan_id, plan_of, request_of, status_of
from orchestrator.session.listing import list_sessions
from orchestrator.session.replay import load_state
from orchestrator.session.status import current_status
from orchestrator.state.events import EventSink
from orchestrator.state.fold import SessionState
from orchestrator.state.manifest import read_manifest
from orchestrator.state.plans import PlanVersion
from orchestrator.team.asking import ApprovalRequest, HostApprover, pending_requests
from orchestrator.team.drive import RunResult
from orchestrator.team.plan_host import PlanApprover, PlanVerdict
from orchestrator.team.runtime import Team
from orchestrator.tools.permissions import Answer, Denied

Report = Callable[[int, str], Awaitable[None]]
"""Tells a waiting client one line of progress: (how many so far, the line)."""


class ServeError(OrchestratorError):
    """What a client asked cannot be done (no such session, it is not running, no such
    question or decision): the message says why, and the client reads it."""


@dataclass(frozen=True)
class Hooks:
    """What the desk gives a launcher's drive: the session's event sink, its approver of
    calls and of plans, and the hook that hands over the running team."""

    ui: EventSink
    approve: HostApprover
    approve_plan: PlanApprover
    on_team: Callable[[Team], Awaitable[None]]


class Launcher(Protocol):
    """How the server makes and runs sessions."""

    @property
    def root(self) -> Path:
        """Where the sessions are kept."""
        ...

    def create(self, goal: str, *, plan: bool) -> str:
        """A new session for `goal` (planned first when `plan`), not yet run: its id.
        Blocking (it reads the config and the agent files): called in a thread."""
        ...

    async def drive(
        self,
        session_id: str,
        hooks: Hooks,
        *,
        message: str = "",
        approvals: Mapping[str, bool | Denied] | None = None,
    ) -> RunResult:
        """Run (or resume) the session until it ends; `message` is said to the main
        agent (or answers the oldest open question), `approvals` decide parked calls."""
        ...


class Desk:
    """The served sessions; every public method is one tool of the server (serve/app.py)
    and returns what the client reads, or raises `ServeError`."""

    def __init__(self, launcher: Launcher, nursery: trio.Nursery) -> None:
        self.launcher = launcher
        self._nursery = nursery
        self._served: dict[str, Served] = {}
        # Decisions given for a session that was not running, for its approvers to find
        # when the resumed run asks (a plan, or a call asked again after a restart).
        self._presets: dict[str, dict[str, Decision]] = {}

    async def start(self, goal: str, *, plan: bool) -> Data:
        if not goal.strip():
            raise ServeError("the goal is empty: say what the team should achieve")
        session_id = await trio.to_thread.run_sync(partial(self.launcher.create, goal, plan=plan))
        self._run(session_id)
        return {"session_id": session_id, "status": "running", "planned_first": plan}

    async def status(self, session_id: str) -> Data:
        data = await self._status(session_id)
        self._shown(session_id, data)
        return data

    async def _status(self, session_id: str) -> Data:
        served = self._served.get(session_id)
        if served is not None and served.running and served.team is not None:
            state = served.team.state
            # What the client is asked now: each call and plan as its approver waits.
            plan = plan_of(state)
            decisions = [
                plan if a.shown["kind"] == "plan" and plan is not None else a.shown
                for a in served.asked.values()
            ]
            goal = await trio.to_thread.run_sync(self._goal, session_id)
            return status_of(
                state,
                session_id=session_id,
                goal=goal,
                status="running",
                decisions=decisions,
                running=True,
            )
        data = await trio.to_thread.run_sync(self._on_disk, session_id)
        if served is not None and served.running:  # opening: not yet folded here
            data |= {"status": "running", "running": True}
            data.pop("output", None)
        if served is not None and not served.running:
            data |= self._ending(served)
        return data

    async def wait(self, session_id: str, seconds: float, report: Report) -> Data:
        """Until the session ends, something the client has not been shown asks it (a
        question, a call or a plan to decide: at once, when one asked before this wait),
        or `seconds` pass. Each progress line not told yet is `report`ed (those made
        between two waits too, so none is lost)."""
        served = self._served.get(session_id)
        if served is None:
            return {**await self.status(session_id), "waited": "not running"}
        known = served.shown
        why = "timeout"
        with trio.move_on_after(seconds):
            while True:
                change = served.change()
                for number, line in served.since(served.reported):
                    served.reported = number
                    await report(number, line)
                if not served.running:
                    why = "ended"
                    break
                if _asks(await self._status(session_id)) - known:
                    why = "asked"
                    break
                await change.wait()
        return {**await self.status(session_id), "waited": why}

    def _shown(self, session_id: str, data: Data) -> None:
        """The client is answered with `data`: what asks it there is shown."""
        served = self._served.get(session_id)
        if served is not None:
            served.shown = _asks(data)

    async def message(self, session_id: str, text: str, task: str) -> Data:
        team = self._team(session_id)
        if team is None:
            if task:
                raise ServeError(
                    f"session {session_id} is not running: only the main agent can be told "
                    "something as it resumes (send_message without a task)"
                )
            self._resume(session_id, message=text)
            return {"session_id": session_id, "status": "running", "resumed": True}
        try:
            mail = await (team.send(task, text) if task else team.say(text))
        except ValueError as exc:
            raise ServeError(str(exc)) from None
        return {"session_id": session_id, "message_id": mail.message_id, "to": task or "main"}

    async def answer(self, session_id: str, question_id: str, text: str) -> Data:
        team = self._team(session_id)
        if team is not None:
            try:
                mail = await team.answer(question_id, text)
            except ValueError as exc:
                raise ServeError(str(exc)) from None
            return {
                "session_id": session_id,
                "answered": question_id,
                "message_id": mail.message_id,
            }
        data = await self._status(session_id)
        open_ids = [q["id"] for q in data["questions"]]
        if question_id not in open_ids:
            raise ServeError(f"{question_id!r} is no open question of session {session_id}")
        if open_ids[0] != question_id:
            raise ServeError(
                f"session {session_id} is not running, and a resume answers its oldest "
                f"question first: {open_ids[0]!r}"
            )
        self._resume(session_id, message=text)
        return {"session_id": session_id, "answered": question_id, "resumed": True}

    async def decide(self, session_id: str, request_id: str, approve: bool, reason: str) -> Data:
        served = self._served.get(session_id)
        asked = served.asked.get(request_id) if served is not None and served.running else None
        if asked is not None:
            asked.answer = decision(asked.shown["kind"], approve, reason)
            asked.answered.set()
            return {"session_id": session_id, "decided": request_id, "approved": approve}
        if served is not None and served.running:
            raise ServeError(f"nothing of session {session_id} waits for a decision {request_id!r}")
        state = await trio.to_thread.run_sync(self._state, session_id)
        parked = {r.id for r in pending_requests(state)}
        pending = state.plans.pending
        if request_id in parked:
            self._resume(session_id, approvals={request_id: call_decision(approve, reason)})
        elif pending is not None and plan_id(pending.version) == request_id:
            self._presets.setdefault(session_id, {})[request_id] = decision("plan", approve, reason)
            self._resume(session_id)
        else:
            raise ServeError(f"nothing of session {session_id} waits for a decision {request_id!r}")
        return {
            "session_id": session_id,
            "decided": request_id,
            "approved": approve,
            "resumed": True,
        }

    async def result(self, session_id: str) -> Data:
        data = await self._status(session_id)
        if data["running"]:
            return {"session_id": session_id, "status": "running", "running": True}
        keys = ("session_id", "goal", "status", "output", "detail", "advice", "usage", "cost")
        return {key: data[key] for key in keys if key in data}

    async def cancel(self, session_id: str) -> Data:
        served = self._served.get(session_id)
        if served is None or not served.running:
            raise ServeError(f"session {session_id} is not running in this server")
        served.scope.cancel()
        return {"session_id": session_id, "cancelled": True}

    async def resume(self, session_id: str, message: str) -> Data:
        await trio.to_thread.run_sync(self._goal, session_id)  # SessionNotFound, first
        self._resume(session_id, message=message)
        return {"session_id": session_id, "status": "running", "resumed": True}

    async def sessions(self, limit: int) -> Data:
        found = await trio.to_thread.run_sync(list_sessions, self.launcher.root)
        rows = []
        for info in found[:limit]:
            served = self._served.get(info.id)
            running = served is not None and served.running
            status = "running" if running else info.status
            row: Data = {"session_id": info.id, "status": status, "goal": info.goal}
            rows.append(row | {"created": str(info.created), "running": running})
        return {"sessions": rows, "more": max(len(found) - limit, 0)}

    # -- running

    def _resume(
        self,
        session_id: str,
        *,
        message: str = "",
        approvals: Mapping[str, bool | Denied] | None = None,
    ) -> None:
        served = self._served.get(session_id)
        if served is not None and served.running:
            raise ServeError(f"session {session_id} is running already")
        self._run(session_id, message=message, approvals=approvals)

    def _run(
        self,
        session_id: str,
        *,
        message: str = "",
        approvals: Mapping[str, bool | Denied] | None = None,
    ) -> None:
        served = Served(session_id)
        self._served[session_id] = served
        self._nursery.start_soon(self._drive, served, message, approvals)

    async def _drive(
        self,
        served: Served,
        message: str,
        approvals: Mapping[str, bool | Denied] | None,
    ) -> None:
        hooks = Hooks(
            ui=ServedSink(served),
            approve=partial(self._approve, served),
            approve_plan=partial(self._approve_plan, served),
            on_team=served.attach,
        )
        try:
            with served.scope:
                served.result = await self.launcher.drive(
                    served.session_id, hooks, message=message, approvals=approvals
                )
        except Exception as exc:  # the session is left failed and resumable; the client reads why
            served.error = f"{type(exc).__name__}: {exc}"
        finally:
            served.running = False
            served.team = None
            served.changed()

    async def _approve(self, served: Served, request: ApprovalRequest) -> Answer:
        request_id = request.id or f"{request.agent}:{request.call.id}"
        preset = self._presets.get(served.session_id, {}).pop(request_id, None)
        if preset is not None and not isinstance(preset, PlanVerdict):
            return preset
        answer = await self._ask(served, Asked(request_id, request_of(request, request_id)))
        assert not isinstance(answer, PlanVerdict)
        return answer

    async def _approve_plan(self, served: Served, version: PlanVersion) -> PlanVerdict | None:
        request_id = plan_id(version.version)
        preset = self._presets.get(served.session_id, {}).pop(request_id, None)
        if isinstance(preset, PlanVerdict):
            return preset
        answer = await self._ask(served, Asked(request_id, {"id": request_id, "kind": "plan"}))
        assert isinstance(answer, PlanVerdict)
        return answer

    async def _ask(self, served: Served, asked: Asked) -> Decision:
        """Wait for the client's decision on `asked` (`decide`)."""
        served.asked[asked.id] = asked
        served.changed()
        try:
            await asked.answered.wait()
        finally:
            del served.asked[asked.id]
            served.changed()
        assert asked.answer is not None
        return asked.answer

    # -- reading

    def _team(self, session_id: str) -> Team | None:
        served = self._served.get(session_id)
        if served is not None and served.running:
            if served.team is None:
                raise ServeError(f"session {session_id} is starting: try again in a moment")
            return served.team
        return None

    def _directory(self, session_id: str) -> Path:
        if not session_id or "/" in session_id or session_id.startswith("."):
            raise ServeError(f"no session {session_id!r}")
        return self.launcher.root / session_id

    def _goal(self, session_id: str) -> str:
        return read_manifest(self._directory(session_id)).goal

    def _state(self, session_id: str) -> SessionState:
        return load_state(self._directory(session_id), warn=lambda _: None)

    def _on_disk(self, session_id: str) -> Data:
        directory = self._directory(session_id)
        manifest = read_manifest(directory)
        state = load_state(directory, warn=lambda _: None)
        status = current_status(directory, {**msgspec.to_builtins(manifest)})
        # What a resume would ask the client about: the parked calls, a plan undecided.
        decisions = [request_of(r, r.id) for r in pending_requests(state)]
        plan = plan_of(state)
        return status_of(
            state,
            session_id=session_id,
            goal=manifest.goal,
            status=status,
            decisions=[*decisions, *([plan] if plan is not None else [])],
            running=False,
        )

    def _ending(self, served: Served) -> Data:
        """How the server's last run of the session ended."""
        result = served.result
        if result is None:
            return {"error": served.error} if served.error else {}
        data: dict[str, Any] = {"status": result.status, "output": result.output}
        data |= {"usage": msgspec.to_builtins(result.usage), "cost": result.cost}
        if result.detail:
            data["detail"] = result.detail
        if result.advice:
            data["advice"] = result.advice
        return data


def _asks(data: Data) -> frozenset[str]:
    """The ids of the questions and decisions a status holds."""
    return frozenset(q["id"] for q in data["questions"]) | {d["id"] for d in data["decisions"]}
