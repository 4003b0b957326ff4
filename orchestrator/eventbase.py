"""The base of every event and journal record, below the modules that define them
(`events.py` for the conversation, `tasks.py`, `mailbox.py`), so each concept can own its
records while `events.py` gathers them into the unions."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

_FRAME_ALIASES = {"kind": "k", "agent": "a"}


def _frame_alias(name: str) -> str:
    """In a journal line, `kind` and `agent` are the frame's `k` and `a`."""
    return _FRAME_ALIASES.get(name, name)


class EventBase(BaseModel):
    """An event: `kind` (its tag), `agent` (whose it is); persistent ones are records."""

    model_config = ConfigDict(frozen=True, alias_generator=_frame_alias, populate_by_name=True)

    persist: ClassVar[bool] = True
    agent: str

    def record(self) -> Any:
        """What the journal keeps of this event, or None when it keeps nothing."""
        return self if self.persist else None

    def journal_body(self) -> dict[str, Any]:
        """The record's own fields for its journal line; defaults are left out."""
        return self.model_dump(mode="json", exclude_defaults=True, exclude={"kind", "agent"})


class FoldError(ValueError):
    """A record that does not fit the state it is folded into (names an unknown call,
    agent, task or message). The session layer reports it as corruption at its seq."""
