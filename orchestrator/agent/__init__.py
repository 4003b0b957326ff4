"""The turn loop, shared by the main agent and every subagent: model ⇄ tools until the
model answers without calling a tool (`run_turn`); the calls of one reply run and
settled (`run_tool_calls`, `settle_pending_calls` after a crash).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator._face import lazy

if TYPE_CHECKING:
    from orchestrator.agent.turn import (
        RoundHooks,
        TurnDeps,
        TurnOutcome,
        run_tool_calls,
        run_turn,
        settle_pending_calls,
    )

_HOMES = {
    "RoundHooks": "turn",
    "TurnDeps": "turn",
    "TurnOutcome": "turn",
    "run_tool_calls": "turn",
    "run_turn": "turn",
    "settle_pending_calls": "turn",
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
