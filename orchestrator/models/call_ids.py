"""Tool-call ids as a provider takes them back.

A context may hold ids another provider made, and each API has its own rule: Anthropic
refuses a `tool_use` id outside `[a-zA-Z0-9_-]` (a chat server may send Kimi's
`functions.read_file:0`) and one used twice in a request (a local server may number its
calls afresh each reply); OpenAI refuses an id longer than 40 characters (vLLM's are
46). So each encoder sends ids through one `CallIds` with its API's rule (`ANTHROPIC`,
`OPENAI`), fed the context in order: an id the rule takes goes as it is, any other as
`call_` and 24 hex digits of its SHA-256 (which every rule takes); an id already sent
for an earlier call gets a suffix (`_2`, `_3`, ...); a result goes with the id sent for
the latest call it answers (the context puts each result after its call). The same
context always maps the same way, so a cached wire form and a fresh one agree, and
nothing needs storing.
"""

from __future__ import annotations

import hashlib
import re

ANTHROPIC = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""Ids the Messages API takes (its pattern; at most 64 characters, as its tool names)."""

OPENAI = re.compile(r".{1,40}", re.DOTALL)
"""Ids OpenAI's APIs take: up to 40 characters. Others are kept, so that a server whose
chat template writes its own ids into the prompt (Kimi's) gets them back unchanged."""


def wire_id(call_id: str, rule: re.Pattern[str]) -> str:
    """`call_id` if `rule` takes it, else a name made from it that every rule takes."""
    if rule.fullmatch(call_id):
        return call_id
    return "call_" + hashlib.sha256(call_id.encode()).hexdigest()[:24]


class CallIds:
    """The ids one request sends under `rule`, made as its context is translated."""

    __slots__ = ("_latest", "_rule", "_sent")

    def __init__(self, rule: re.Pattern[str]) -> None:
        self._rule = rule
        self._sent: set[str] = set()
        self._latest: dict[str, str] = {}  # a call's own id -> the id sent for it

    def call(self, call_id: str) -> str:
        """The id to send for a call, unique in the request."""
        sent = wire_id(call_id, self._rule)
        n = 1
        while sent in self._sent:
            n += 1
            sent = wire_id(f"{call_id}_{n}", self._rule)
        self._sent.add(sent)
        self._latest[call_id] = sent
        return sent

    def result(self, call_id: str) -> str:
        """The id to send for a result: that of the latest call it answers."""
        return self._latest.get(call_id) or wire_id(call_id, self._rule)
