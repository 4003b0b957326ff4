"""`orchestrator run` as a subprocess against a loopback OpenAI-compatible server: a
multi-round, tool-using conversation, and no trace of the API key in the session."""

from __future__ import annotations

import subprocess
from pathlib import Path

import orjson
import pytest
from provider_server import LoopbackServer, Reply
from sdk_types import OPENAI_DONE, openai_call_delta, openai_chunk, openai_usage

from tests.scenes import orchestrator_on_trio, run_flags

FAKE_KEY = "sk-e2e-FAKE-KEY-0123456789abcdef"


def tool_round(*deltas: dict[str, object]) -> Reply:
    return Reply.sse(
        [
            openai_chunk({"role": "assistant", "content": None}),
            *(openai_chunk({"tool_calls": [d]}) for d in deltas),
            openai_chunk({}, finish="tool_calls"),
            openai_usage(prompt=100, completion=20),
            OPENAI_DONE,
        ]
    )


SCRIPT = [
    tool_round(
        openai_call_delta(0, id="call_w", name="write_file", arguments='{"path": "notes.txt", '),
        openai_call_delta(0, arguments='"content": "hello from the model\\n"}'),
    ),
    # Two read-only calls in parallel, their argument deltas interleaved.
    tool_round(
        openai_call_delta(0, id="call_r", name="read_file", arguments='{"path": '),
        openai_call_delta(1, id="call_l", name="list_files", arguments='{"pattern": '),
        openai_call_delta(0, arguments='"notes.txt"}'),
        openai_call_delta(1, arguments='"*.txt"}'),
    ),
    Reply.sse(
        [
            openai_chunk({"role": "assistant", "content": ""}),
            openai_chunk({"content": "Wrote notes.txt "}),
            openai_chunk({"content": "and checked it."}),
            openai_chunk({}, finish="stop"),
            openai_usage(prompt=300, completion=10, cached=200),
            OPENAI_DONE,
        ]
    ),
]


async def run_cli(
    server: LoopbackServer, tmp_path: Path, *extra: str
) -> tuple[subprocess.CompletedProcess[bytes], Path, Path]:
    workspace = tmp_path / "ws"
    sessions = tmp_path / "sessions"
    workspace.mkdir()
    result = await orchestrator_on_trio(
        "run", "Write notes.txt and check it",
        "--model", f"openai-compatible:test-model@{server.url}/v1",
        *run_flags(workspace, sessions),
        *extra,
        OPENAI_API_KEY=FAKE_KEY,
    )  # fmt: skip
    return result, workspace, sessions


async def test_multi_round_tool_conversation(server: LoopbackServer, tmp_path: Path) -> None:
    server.add(*SCRIPT)
    result, workspace, _ = await run_cli(server, tmp_path)
    assert result.returncode == 0, result.stderr.decode()
    assert (workspace / "notes.txt").read_text() == "hello from the model\n"
    assert "Wrote notes.txt and checked it." in result.stdout.decode()

    assert len(server.requests) == 3
    assert all(r.headers["authorization"] == f"Bearer {FAKE_KEY}" for r in server.requests)
    second = server.requests[1].json()["messages"]
    assert second[-2]["tool_calls"][0]["id"] == "call_w"
    assert second[-1]["role"] == "tool"
    assert second[-1]["tool_call_id"] == "call_w"
    third = server.requests[2].json()["messages"]
    results = {m["tool_call_id"]: m["content"] for m in third if m["role"] == "tool"}
    assert set(results) == {"call_w", "call_r", "call_l"}
    assert "hello from the model" in results["call_r"]
    assert "notes.txt" in results["call_l"]


@pytest.mark.parametrize("output", [[], ["--json"]])
async def test_the_api_key_never_reaches_the_session_or_output(
    server: LoopbackServer, tmp_path: Path, output: list[str]
) -> None:
    server.add(*SCRIPT)
    result, _, sessions = await run_cli(server, tmp_path, *output)
    assert result.returncode == 0, result.stderr.decode()
    assert server.requests[0].headers["authorization"] == f"Bearer {FAKE_KEY}"  # it was used
    files = [p for p in sessions.rglob("*") if p.is_file()]
    assert files, "the run wrote no session files"
    leaks = [p for p in files if FAKE_KEY.encode() in p.read_bytes()]
    assert leaks == []
    assert FAKE_KEY.encode() not in result.stdout
    assert FAKE_KEY.encode() not in result.stderr


async def test_a_rejected_key_is_reported_without_the_key(
    server: LoopbackServer, tmp_path: Path
) -> None:
    server.add(Reply.json(401, {"error": {"message": "Incorrect API key provided: sk-e2e***"}}))
    result, _, sessions = await run_cli(server, tmp_path)
    out = result.stdout.decode()  # the summary says why, with the lines for people
    assert result.returncode != 0
    assert "HTTP 401: Incorrect API key provided" in out
    assert FAKE_KEY not in out
    assert FAKE_KEY.encode() not in result.stderr
    assert all(FAKE_KEY.encode() not in p.read_bytes() for p in sessions.rglob("*") if p.is_file())


async def test_a_refusal_reaches_the_reply_and_the_transcript(
    server: LoopbackServer, tmp_path: Path
) -> None:
    from sdk_types import OPENAI_DONE, openai_chunk

    server.add(
        Reply.sse(
            [
                openai_chunk({"role": "assistant", "content": None, "refusal": ""}),
                openai_chunk({"refusal": "I can't help with "}),
                openai_chunk({"refusal": "that."}),
                openai_chunk({}, finish="stop"),
                OPENAI_DONE,
            ]
        )
    )
    result, _, _ = await run_cli(server, tmp_path, "--json")
    assert result.returncode == 0, result.stderr.decode()
    events = [orjson.loads(line) for line in result.stdout.splitlines()]
    [reply] = [e for e in events if e["kind"] == "assistant_replied"]
    assert reply["message"]["text"] == "I can't help with that."
    assert reply["message"]["stop_reason"] == "refusal"


@pytest.mark.parametrize(
    ("reply", "advice", "resume_helps"),
    [
        (
            Reply.json(429, {"error": {"message": "slow down"}}, {"retry-after": "3600"}),
            "wait 60 min, then resume",
            True,
        ),
        (
            Reply.json(401, {"error": {"message": "Incorrect API key provided"}}),
            "check the key (orchestrator models), then resume",
            True,
        ),
        (Reply.json(400, {"error": {"message": "unsupported parameter"}}), "", False),
    ],
)
async def test_a_failed_run_says_what_to_do_and_offers_resume_only_where_it_helps(
    server: LoopbackServer, tmp_path: Path, reply: Reply, advice: str, resume_helps: bool
) -> None:
    server.add(reply)
    result, _, _ = await run_cli(server, tmp_path)
    out = result.stdout.decode()
    assert result.returncode == 1, out
    if advice:
        assert advice in out
    assert ("continue it with: orchestrator resume" in out) == resume_helps


async def test_a_request_too_long_for_any_compaction_blocks_the_session_with_advice(
    server: LoopbackServer, tmp_path: Path
) -> None:
    # The provider refuses a first request of a few hundred tokens: the window it implies
    # holds no checkpoint, so the session blocks instead of asking again and again.
    too_long = {"error": {"message": "too long", "code": "context_length_exceeded"}}
    server.add(Reply.json(400, too_long))
    result, _, _ = await run_cli(server, tmp_path)
    out = result.stdout.decode()
    assert result.returncode == 3, out
    assert "does not fit its model's window even compacted" in out
    assert "a model that has a larger one (--model)" in out
    assert "continue it with: orchestrator resume" not in out
    assert len(server.requests) == 1
