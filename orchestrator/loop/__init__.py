"""The loop's judgement, pure over the values it is given: todo lists and the assessment
after a turn. Imports nothing from `state/`, `session/` or `team/`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator._face import lazy

if TYPE_CHECKING:
    from orchestrator.loop.assessment import (
        Assessment,
        Budgets,
        Situation,
        assess,
        continuation_note,
    )
    from orchestrator.loop.todos import TodoItem, TodoList

_HOMES = {
    "Assessment": "assessment",
    "Budgets": "assessment",
    "Situation": "assessment",
    "TodoItem": "todos",
    "TodoList": "todos",
    "assess": "assessment",
    "continuation_note": "assessment",
}

__all__ = [
    "Assessment",
    "Budgets",
    "Situation",
    "TodoItem",
    "TodoList",
    "assess",
    "continuation_note",
]

__getattr__, __dir__ = lazy(__name__, _HOMES)
