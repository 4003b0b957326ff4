"""Tool-call ids as each API takes them back (`models/call_ids.py`)."""

from __future__ import annotations

from orchestrator.models.call_ids import ANTHROPIC, OPENAI, CallIds, wire_id


def test_call_ids_each_api_takes_are_sent_as_they_are_and_others_mapped_the_same_way() -> None:
    for rule in (ANTHROPIC, OPENAI):
        assert wire_id("toolu_01A-b", rule) == "toolu_01A-b"
        mapped = wire_id("x" * 80, rule)
        assert mapped == wire_id("x" * 80, rule) != wire_id("x" * 81, rule)
        assert ANTHROPIC.fullmatch(mapped)
        assert OPENAI.fullmatch(mapped)
    assert wire_id("functions.read_file:0", OPENAI) == "functions.read_file:0"
    assert wire_id("functions.read_file:0", ANTHROPIC).startswith("call_")
    assert wire_id("", OPENAI).startswith("call_")


def test_a_repeated_call_id_is_made_unique_and_its_result_follows_the_latest_call() -> None:
    ids = CallIds(ANTHROPIC)
    assert ids.call("call_0") == "call_0"
    assert ids.result("call_0") == "call_0"
    assert ids.call("call_0") == "call_0_2"
    assert ids.result("call_0") == "call_0_2"
    assert ids.call("call_0_2") == "call_0_2_2"  # a real id that a suffix took already
    assert ids.result("never_called") == "never_called"
