"""`orchestrator run --model openai-responses:...` as a subprocess against a loopback server
speaking the Responses event stream: the reasoning item of a tool round is journaled with
the reply and sent back, unchanged, on the agent's next request."""

from __future__ import annotations

from pathlib import Path

import orjson
from provider_server import LoopbackServer, Reply
from responses_events import Stream, reasoning_item, usage

from tests.scenes import orchestrator_on_trio, run_flags

FAKE_KEY = "sk-e2e-FAKE-KEY-responses-0123456789"


async def test_a_tool_round_keeps_its_reasoning_across_turns(
    server: LoopbackServer, tmp_path: Path
) -> None:
    thought = reasoning_item(1, summary="Write the file, then say so.")
    server.add(
        Reply.sse(
            Stream()
            .created()
            .reasoning(thought)
            .call("call_w", "write_file", '{"path": "notes.txt", ', '"content": "hi\\n"}')
            .completed(usage(1200, 90, cached=1024, reasoning=64))
            .events
        ),
        Reply.sse(Stream().created().text("Wrote ", "notes.txt.").completed(usage(1400, 5)).events),
    )
    workspace, sessions = tmp_path / "ws", tmp_path / "sessions"
    workspace.mkdir()
    result = await orchestrator_on_trio(
        "run", "Write notes.txt", "--model", f"openai-responses:gpt-test@{server.url}/v1",
        *run_flags(workspace, sessions),
        OPENAI_API_KEY=FAKE_KEY,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()
    assert (workspace / "notes.txt").read_text() == "hi\n"
    assert "Wrote notes.txt." in result.stdout.decode()

    kept = thought.model_dump(exclude_none=True)
    first, second = (r.json() for r in server.requests)
    assert first["store"] is False
    assert first["prompt_cache_key"]
    replayed = second["input"][len(first["input"]) :]
    assert replayed[0] == kept
    assert replayed[1]["type"] == "function_call"
    assert replayed[2]["type"] == "function_call_output"
    assert replayed[2]["call_id"] == "call_w"

    (journal,) = sessions.rglob("journal.jsonl")
    text = journal.read_bytes()
    assert FAKE_KEY.encode() not in text
    records = [orjson.loads(line) for line in text.splitlines()]
    (tool_round,) = [
        r["message"]
        for r in records
        if r["k"] == "assistant_replied" and r["message"].get("tool_calls")
    ]
    # Journaled with the reply, where Anthropic's thinking blocks are: the item as JSON.
    (block,) = tool_round["thinking"]
    assert block["text"] == "Write the file, then say so."
    assert orjson.loads(block["signature"]) == kept
