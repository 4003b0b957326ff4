"""Hooks' decisions (docs/hooks.md): the `hook_decided` record, journaled whenever a hook
changed what happened, and its fold, so that a resumed session replays the decision
instead of asking the hook again.

What each action does:

- `refuse` (`pre_tool`): the call `ref` does not run; its result is `text`, the reason.
- `change` (`pre_tool`): the call `ref` runs with `arguments` (JSON) instead of its own.
- `ask` (`pre_tool`): the call `ref` is asked about, whatever the permission rules say.
- `note` (`post_tool`): `text` is added to the result of the call `ref`.
- `anchor` (`pre_compact`): `text` is kept among the anchors of `agent`'s compaction
  number `ref`.
- `continue` (`stop`): `agent` does not end its turn yet; `text` enters its context as a
  user message with this record (so the record is the continuation: nothing to replay).

`Hooked` is the fold: the decisions whose effect is not journaled yet (a call's result
ends those of its ref, a compaction those of its agent's anchors), and how many times in
a row a `stop` hook sent each agent back since its owner last spoke (the bound).
"""

from collections.abc import Callable
from typing import Any, Literal

import msgspec

from orchestrator.eventbase import EventBase

HookAction = Literal["refuse", "change", "ask", "note", "anchor", "continue"]


class HookDecided(EventBase, frozen=True, tag="hook_decided"):
    """Record: a hook's decision at `event` for `agent` that changed what happened (see
    the module's doc for each `action`). `hook` names the hook (its command, or the
    function's name) for people."""

    event: str
    action: HookAction
    ref: str = ""
    text: str = ""
    arguments: str = ""
    ask: bool = False  # with `change`: the changed call is asked about too
    hook: str = ""


HookRecords = HookDecided


def decision_key(agent: str, event: str, ref: str) -> str:
    return f"{agent}:{event}:{ref}"


class Decided(msgspec.Struct, frozen=True):
    """A decision as the fold keeps it, until its effect is journaled."""

    action: HookAction
    text: str = ""
    arguments: str = ""
    ask: bool = False


class Hooked(msgspec.Struct):
    """The hooks' decisions not acted on yet, by `decision_key`, and the `stop` hook's
    continuations in a row by agent."""

    decided: dict[str, Decided] = msgspec.field(default_factory=dict)
    sent_back: dict[str, int] = msgspec.field(default_factory=dict)

    def of(self, agent: str, event: str, ref: str) -> Decided | None:
        return self.decided.get(decision_key(agent, event, ref))

    def call_done(self, agent: str, ref: str) -> None:
        """The call has its result: its hooks' decisions took effect."""
        if self.decided:
            for event in ("pre_tool", "post_tool"):
                self.decided.pop(decision_key(agent, event, ref), None)

    def compacted(self, agent: str) -> None:
        """A checkpoint of `agent` was made: its anchors' hook text is in it."""
        if self.decided:
            prefix = decision_key(agent, "pre_compact", "")
            for key in [k for k in self.decided if k.startswith(prefix)]:
                del self.decided[key]

    def spoke(self, agent: str) -> None:
        """`agent`'s owner wrote to it: the bound on `stop` continuations starts again."""
        self.sent_back.pop(agent, None)


def _decided(hooked: Hooked, seq: int, record: HookDecided) -> None:
    if record.action == "continue":
        hooked.sent_back[record.agent] = hooked.sent_back.get(record.agent, 0) + 1
        return
    key = decision_key(record.agent, record.event, record.ref)
    hooked.decided[key] = Decided(record.action, record.text, record.arguments, record.ask)


HOOK_FOLDS: dict[type, Callable[[Hooked, int, Any], None]] = {HookDecided: _decided}
