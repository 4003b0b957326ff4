"""What each provider checks of a conversation before it answers, as a server would: the
rules beyond the shape of the request (which `sdk_types` checks), stated from the
providers' own error messages. Each function returns the faults it finds, so a test
asserts `== []` and a failure names every one.

`own` is what the receiving model made itself: the thinking signatures (and redacted
data) of Anthropic, the encrypted content of the Responses API's reasoning items. Any
other reasoning in the request is another model's, which that provider refuses (a
signature it did not make) or cannot read."""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

ANTHROPIC_ID = re.compile(r"[a-zA-Z0-9_-]+")  # "tool_use.id: String should match pattern"
OPENAI_ID = re.compile(r".{1,40}")  # "string too long ... maximum length 40"


def anthropic_faults(body: dict[str, Any], own: Collection[str] = ()) -> list[str]:
    faults: list[str] = []
    turns = body["messages"]
    seen: set[str] = set()
    calls: list[str] = []  # the tool_use ids of the assistant turn before
    for i, turn in enumerate(turns):
        role, blocks = turn["role"], turn["content"]
        if role not in ("user", "assistant"):
            faults.append(f"messages.{i}: role {role!r}")
        if i and turns[i - 1]["role"] == role:
            faults.append(f"messages.{i}: two {role} turns in a row")
        if not blocks:
            faults.append(f"messages.{i}: no content")
        for j, block in enumerate(blocks):
            faults += _block_faults(f"messages.{i}.content.{j}", block, own, seen)
        if role == "user":
            results = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
            leading = [b.get("tool_use_id") for b in blocks[: len(results)]]
            if results != leading:
                faults.append(f"messages.{i}: tool_result blocks must come first")
            if sorted(results) != sorted(calls):
                faults.append(f"messages.{i}: results {results} answer calls {calls}")
        calls = [b["id"] for b in blocks if b["type"] == "tool_use"] if role == "assistant" else []
    if turns and turns[0]["role"] != "user":
        faults.append("messages.0: the first turn must be the user's")
    if "thinking" in body:
        last = next((t["content"] for t in reversed(turns) if t["role"] == "assistant"), [])
        starts = last[0]["type"] if last else ""
        if any(b["type"] == "tool_use" for b in last) and starts not in _THINKING:
            faults.append("a final `assistant` message must start with a thinking block")
    return faults


_THINKING = ("thinking", "redacted_thinking")


def _block_faults(
    where: str, block: dict[str, Any], own: Collection[str], seen: set[str]
) -> list[str]:
    faults = []
    match block["type"]:
        case "text" if not block["text"].strip():
            faults.append(f"{where}: text content blocks must contain non-whitespace text")
        case "thinking" if block.get("signature") not in own:
            faults.append(f"{where}: Invalid `signature` in `thinking` block")
        case "redacted_thinking" if block.get("data") not in own:
            faults.append(f"{where}: redacted thinking this model did not make")
        case "tool_use":
            if not ANTHROPIC_ID.fullmatch(block["id"]):
                faults.append(f"{where}.id: {block['id']!r} does not match the pattern")
            if block["id"] in seen:
                faults.append(f"{where}: `tool_use` ids must be unique")
            seen.add(block["id"])
    return faults


def chat_faults(body: dict[str, Any]) -> list[str]:
    faults: list[str] = []
    seen: set[str] = set()
    open_calls: set[str] = set()
    for i, message in enumerate(body["messages"]):
        role = message["role"]
        extra = set(message) - {"role", "content", "tool_calls", "tool_call_id"}
        if extra:
            faults.append(f"messages[{i}]: fields {sorted(extra)} (reasoning is not taken back)")
        if role == "system" and any(m["role"] != "system" for m in body["messages"][:i]):
            faults.append(f"messages[{i}]: a system message after the conversation began")
        if role == "tool":
            if message["tool_call_id"] not in open_calls:
                faults.append(
                    f"messages[{i}]: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'"
                )
            open_calls.discard(message["tool_call_id"])
            continue
        if open_calls:
            faults.append(f"messages[{i}]: calls {sorted(open_calls)} were not answered")
        open_calls = set()
        for call in message.get("tool_calls") or ():
            if not OPENAI_ID.fullmatch(call["id"]):
                faults.append(f"messages[{i}].tool_calls: id {call['id']!r} is invalid")
            if call["id"] in seen:
                faults.append(f"messages[{i}].tool_calls: id {call['id']!r} used twice")
            seen.add(call["id"])
            open_calls.add(call["id"])
    if open_calls:
        faults.append(f"calls {sorted(open_calls)} were not answered")
    return faults


def responses_faults(body: dict[str, Any], own: Collection[str] = ()) -> list[str]:
    faults: list[str] = []
    calls: set[str] = set()
    answered: set[str] = set()
    for i, item in enumerate(body["input"]):
        kind = item.get("type", "message")
        if kind == "reasoning" and item.get("encrypted_content") not in own:
            faults.append(f"input[{i}]: a reasoning item this model did not make")
        if kind == "function_call":
            if not OPENAI_ID.fullmatch(item["call_id"]):
                faults.append(f"input[{i}]: call_id {item['call_id']!r} is invalid")
            if item["call_id"] in calls:
                faults.append(f"input[{i}]: call_id {item['call_id']!r} used twice")
            calls.add(item["call_id"])
        if kind == "function_call_output":
            if item["call_id"] not in calls:
                faults.append(f"input[{i}]: No tool call found for {item['call_id']!r}")
            answered.add(item["call_id"])
        before = body["input"][:i]
        if (
            kind == "message"
            and item["role"] == "system"
            and any(b.get("role") != "system" for b in before)
        ):
            faults.append(f"input[{i}]: a system message after the conversation began")
    if calls - answered:
        faults.append(f"No tool output found for {sorted(calls - answered)}")
    return faults
