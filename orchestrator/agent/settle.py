"""The open calls of an agent's last reply settled after a crash, before its model is
asked again."""

from __future__ import annotations

import dataclasses
from typing import assert_never

from orchestrator.agent.calls import run_calls, tool_result
from orchestrator.agent.deps import TurnDeps
from orchestrator.agent.parsing import Ready, Refused, parse_call
from orchestrator.errors import ToolFailed, WorkspaceEscape
from orchestrator.messages import ToolCall, ToolResult
from orchestrator.state.context import AgentContext
from orchestrator.state.events import ToolCallFinished
from orchestrator.tools.base import ToolOutput

INTERRUPTED = (
    "interrupted: the session stopped while this call was running, so it may or may not "
    "have taken effect. Check the workspace before you repeat it."
)


async def settle_pending_calls(agent: AgentContext, deps: TurnDeps) -> bool:
    """Give every call of the last reply a result before the model is asked again: a call
    whose side effect started and never finished is settled by its tool when the
    workspace tells how it went (`Tool.recover`), else reported `interrupted`; any other
    call (idempotent, or never started) is dispatched now, as it would have been.
    A call parked for a person's decision runs once it is decided, with it; undecided,
    it stays parked (with the calls after it: `TurnDeps.journaled`).
    Returns whether a call run now ended the agent's turn (an `ask_decision`, say)."""
    rerun = []
    for ref, call in agent.pending_calls():
        if ref in agent.effects:
            settled = await _recover(ref, call, deps)
            result = (
                ToolResult(
                    call_id=call.id, name=call.name, status="interrupted", content=INTERRUPTED
                )
                if settled is None
                else tool_result(call, settled.status, settled.content, settled.changed)
            )
            await deps.events.emit(ToolCallFinished(agent=agent.id, ref=ref, result=result))
        else:
            rerun.append((ref, call))
    if not rerun:
        return False
    _, ends_turn, _ = await run_calls(agent, rerun, deps)
    return ends_turn


async def _recover(ref: str, call: ToolCall, deps: TurnDeps) -> ToolOutput | None:
    """Let the tool of a cut-off call stop and clean up what it left running or half
    done, and settle the call if it can tell how it went (`Tool.recover`); None when it
    cannot (best effort: a failure here must not stop the resume)."""
    parsed = parse_call(call, deps.tools)
    match parsed:
        case Ready(tool, args):
            pass
        case Refused():
            return None
        case _:
            assert_never(parsed)
    try:
        return await tool.recover(args, dataclasses.replace(deps.context, call=ref))
    except (ToolFailed, WorkspaceEscape) as exc:
        return ToolOutput.error(str(exc))
    except Exception:
        return None
