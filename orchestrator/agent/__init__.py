"""The turn loop, shared by the main agent and every subagent: model ⇄ tools until the
model answers without calling a tool (`run_turn`); the calls of one reply run and
settled (`run_tool_calls`, `settle_pending_calls` after a crash).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator._face import lazy

if TYPE_CHECKING:
    from orchestrator.agent.calls import run_tool_calls
    from orchestrator.agent.deps import RoundHooks, TurnDeps
    from orchestrator.agent.settle import settle_pending_calls
    from orchestrator.agent.turn import TurnOutcome, run_turn

_HOMES = {
    "RoundHooks": "deps",
    "TurnDeps": "deps",
    "TurnOutcome": "turn",
    "run_tool_calls": "calls",
    "run_turn": "turn",
    "settle_pending_calls": "settle",
}

__all__ = [
    "RoundHooks",
    "TurnDeps",
    "TurnOutcome",
    "run_tool_calls",
    "run_turn",
    "settle_pending_calls",
]

__getattr__, __dir__ = lazy(__name__, _HOMES)
