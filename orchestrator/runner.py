"""Drive a session's main agent from wherever its journal left it: a fresh start, the
middle of a turn cut off by a crash, or a finished session."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

import trio

from orchestrator.agent import TurnDeps, run_tool_calls, run_turn
from orchestrator.context import AgentContext
from orchestrator.errors import (
    ConfigError,
    ContextTooLong,
    ModelError,
    ProviderAuthError,
    ProviderBadRequest,
    ProviderRateLimited,
    ScriptError,
)
from orchestrator.events import (
    AgentStarted,
    EventSink,
    FanOut,
    SessionStatusChanged,
    ToolCallFinished,
    TurnEnded,
)
from orchestrator.manifest import SessionStatus
from orchestrator.messages import AssistantMessage, SystemMessage, ToolResult, UserMessage
from orchestrator.models.base import Model
from orchestrator.prompts import single_agent_prompt
from orchestrator.session import LiveSession
from orchestrator.tools import Approver, PermissionPolicy, ToolContext, ToolRegistry, Workspace
from orchestrator.tools.base import call_marker
from orchestrator.tools.shell import kill_marked

MAIN = "main"

INTERRUPTED = (
    "interrupted: the session stopped while this call was running, so it may or may not "
    "have taken effect. Check the workspace before you repeat it."
)


@dataclass
class RunSettings:
    model: Model
    tools: ToolRegistry
    ui: EventSink
    policy: PermissionPolicy
    approve: Approver
    max_rounds: int = 50
    max_tokens: int | None = None
    temperature: float | None = None
    redact: Callable[[str], str] = str  # see TurnDeps.redact


@dataclass(frozen=True)
class RunResult:
    status: SessionStatus
    detail: str = ""
    # What the person should do next, when a plain resume would only fail the same way.
    advice: str = ""
    resume_helps: bool = True


def _model_failure(exc: ModelError, redact: Callable[[str], str]) -> RunResult:
    detail = redact(f"model call failed: {exc}")
    match exc:
        case ProviderAuthError():
            return RunResult("failed", detail, "check the key (orchestrator models), then resume")
        case ProviderRateLimited(retry_after=wait) if wait:
            return RunResult("failed", detail, f"wait {_duration(wait)}, then resume")
        case ContextTooLong():
            return RunResult(
                "failed",
                detail,
                "the conversation no longer fits this model's context; resuming would send "
                "it again (compaction is not built yet): resume with a model that has a "
                "larger context (--model)",
                resume_helps=False,
            )
        case ScriptError() | ProviderBadRequest():
            return RunResult("failed", detail, resume_helps=False)
        case _:
            return RunResult("failed", detail)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


async def drive(live: LiveSession, settings: RunSettings) -> RunResult:
    """Run (or go on running) the main agent until its turn ends; record the status."""
    sink = FanOut([live, settings.ui])
    if live.state.status == "completed":
        return RunResult("completed", "already finished")
    try:
        result = await _drive(live, settings, sink)
    except ModelError as exc:
        result = _model_failure(exc, settings.redact)
    except BaseException as exc:
        stopped = _only_stops(exc)
        status = (
            RunResult("interrupted", "stopped by the user")
            if stopped
            else RunResult("failed", settings.redact(f"{type(exc).__name__}: {exc}"))
        )
        # Best effort: the journal itself may be what failed; the original error matters more.
        with (
            trio.CancelScope(shield=True),
            trio.move_on_after(10),
            contextlib.suppress(Exception),
        ):
            await _record_status(live, sink, status)
        raise
    await _record_status(live, sink, result)
    return result


def _only_stops(exc: BaseException) -> bool:
    """True for Ctrl+C or a cancellation, bare or grouped by nurseries."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_only_stops(inner) for inner in exc.exceptions)
    return isinstance(exc, KeyboardInterrupt | trio.Cancelled)


async def _record_status(live: LiveSession, sink: EventSink, result: RunResult) -> None:
    await sink.emit(
        SessionStatusChanged(agent=MAIN, status=result.status, detail=result.detail),
        durable=True,
    )
    await live.set_status(result.status)


async def _drive(live: LiveSession, settings: RunSettings, sink: EventSink) -> RunResult:
    root = live.manifest.workspace_path(live.directory)
    if not await trio.Path(root).is_dir():
        raise ConfigError(f"the session's workspace {root} does not exist (moved or deleted?)")
    workspace = Workspace(root)
    if MAIN not in live.state.agents:
        messages = (
            SystemMessage(content=single_agent_prompt(settings.tools.names())),
            UserMessage(content=live.manifest.goal),
        )
        await sink.emit(AgentStarted(agent=MAIN, role="main", messages=messages))
    await sink.emit(SessionStatusChanged(agent=MAIN, status="running"), durable=True)
    await live.set_status("running")  # `sessions list` shows it running, or stopped if killed
    agent = live.state.agents[MAIN]
    deps = TurnDeps(
        model=settings.model,
        tools=settings.tools,
        context=ToolContext(workspace=workspace, agent=MAIN, session=live.id),
        events=sink,
        policy=settings.policy,
        approve=settings.approve,
        grants=lambda: live.state.grants,
        max_rounds=settings.max_rounds,
        max_tokens=settings.max_tokens,
        temperature=settings.temperature,
        redact=settings.redact,
    )
    await _settle_pending_calls(agent, deps)
    last = agent.messages[-1]
    if isinstance(last, AssistantMessage) and not last.tool_calls:
        # The final reply was journaled but the crash came before the turn's end was.
        if agent.turn_open:
            await sink.emit(TurnEnded(agent=MAIN, reason="completed", rounds=0), durable=True)
        return RunResult("completed")
    outcome = await run_turn(agent, deps)
    if outcome.reason == "completed":
        return RunResult("completed")
    return RunResult("failed", f"stopped: {outcome.reason} after {outcome.rounds} rounds")


async def _settle_pending_calls(agent: AgentContext, deps: TurnDeps) -> None:
    """Give every call of the last reply a result before the model is asked again: a call
    whose side effect started and never finished is reported `interrupted`; any other
    call (idempotent, or never started) is dispatched now, as it would have been."""
    rerun = []
    for ref, call in agent.pending_calls():
        if ref in agent.effects:
            # What the call started may still be running (orchestrator was killed, its
            # command was not): stop it before anything else happens in the workspace.
            marker = call_marker(deps.context.session, agent.id, ref)
            await trio.to_thread.run_sync(kill_marked, marker)
            result = ToolResult(
                call_id=call.id, name=call.name, status="interrupted", content=INTERRUPTED
            )
            await deps.events.emit(ToolCallFinished(agent=agent.id, ref=ref, result=result))
        else:
            rerun.append((ref, call))
    if rerun:
        await run_tool_calls(agent, rerun, deps)
