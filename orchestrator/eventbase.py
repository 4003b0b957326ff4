"""The base of every event and journal record, below the modules that define them
(`events.py` for the conversation, `tasks.py`, `mailbox.py`), so each concept can own its
records while `events.py` gathers them into the unions."""

from typing import Any, ClassVar

import msgspec

from orchestrator.errors import OrchestratorError
from orchestrator.messages import Value


class EventBase(Value, frozen=True, kw_only=True, tag_field="k"):
    """An event: `kind` (its tag), `agent` (whose it is); persistent ones are records.

    Each subclass names its kind as its tag (`class TurnStarted(EventBase, tag=...)`). A
    journal line carries the frame's `k` (the kind) and `a` (the agent) beside the
    record's own fields, so a line decodes straight into its record."""

    persist: ClassVar[bool] = True
    agent: str = msgspec.field(name="a")

    @property
    def kind(self) -> str:
        tag = self.__struct_config__.tag
        assert isinstance(tag, str)
        return tag

    def record(self) -> Any:
        """What the journal keeps of this event, or None when it keeps nothing."""
        return self if self.persist else None

    def journal_body(self) -> dict[str, Any]:
        """The record's own fields for its journal line; defaults are left out."""
        body: dict[str, Any] = msgspec.to_builtins(self)
        del body["k"], body["a"]
        return body


class FoldError(OrchestratorError, ValueError):
    """A record that does not fit the state it is folded into (names an unknown call,
    agent, task or message). The session layer reports it as corruption at its seq."""
