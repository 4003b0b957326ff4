"""What a message weighs in the token estimates (`chars`)."""

from __future__ import annotations

from orchestrator.messages import AssistantMessage, Thinking


def test_a_reply_s_thinking_counts_by_its_text_not_its_signature() -> None:
    plain = AssistantMessage(text="ok")
    thought = AssistantMessage(
        text="ok", thinking=(Thinking(text="x" * 400, signature="s" * 5000),)
    )
    assert thought.chars() - plain.chars() == 400
