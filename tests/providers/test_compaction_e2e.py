"""Compaction against loopback servers that enforce a window, as model servers do: an
OpenAI-compatible server nobody configured a window for (the CLI learns it from the
first `context_length_exceeded`), and the Anthropic adapter's `prompt is too long`."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from provider_server import LoopbackServer, Recorded, Reply, request_chars
from sdk_types import anthropic_text, anthropic_tool_use, openai_text, openai_tool_call

from orchestrator import load_state
from orchestrator.loop.summary import SECTIONS
from orchestrator.session.live import JOURNAL
from orchestrator.store import scan_journal
from tests.scenes import orchestrator_on_trio

FILE_CHARS = 6_000
WINDOW_CHARS = 40_000  # the server refuses more; it states 10,000 tokens
ROUNDS = 16
SUMMARY = "\n".join(f"## {name}\nkept: {name.lower()}." for name in SECTIONS)


class Agent:
    """The server side of a model: a summary for a summary request, else the next step
    of a main agent that reads big files, then finishes."""

    def __init__(self, shape: str) -> None:
        self.shape = shape
        self.steps = 0
        self.summaries = 0

    def __call__(self, request: Recorded) -> Reply:
        prompt = request_chars(request) // 4
        if "handoff summary" in request.body.decode():
            self.summaries += 1
            return self._text(SUMMARY, prompt)
        step, self.steps = self.steps, self.steps + 1
        if step < ROUNDS:
            return self._read(f"f{step % 3}.txt", f"call_{step}", prompt)
        return self._text("All files read.", prompt)

    def _text(self, text: str, prompt: int) -> Reply:
        if self.shape == "openai":
            return Reply.sse(openai_text(text, usage=(prompt, len(text) // 4)))
        return Reply.sse(anthropic_text(text, input_tokens=prompt, output_tokens=len(text) // 4))

    def _read(self, path: str, call_id: str, prompt: int) -> Reply:
        arguments = orjson.dumps({"path": path}).decode()
        if self.shape == "openai":
            return Reply.sse(openai_tool_call(call_id, "read_file", arguments, usage=(prompt, 10)))
        return Reply.sse(anthropic_tool_use(call_id, "read_file", arguments, input_tokens=prompt))


@pytest.mark.parametrize("shape", ["openai", "anthropic"])
async def test_a_server_that_refuses_a_long_context_is_compacted_for(
    server: LoopbackServer, tmp_path: Path, shape: str
) -> None:
    agent = Agent(shape)
    server.handler = agent
    server.window_chars = WINDOW_CHARS
    server.window_shape = "openai" if shape == "openai" else "anthropic"
    workspace = tmp_path / "ws"
    sessions = tmp_path / "sessions"
    workspace.mkdir()
    for index in range(3):
        (workspace / f"f{index}.txt").write_text(str(index) * (FILE_CHARS - 1) + "\n")
    if shape == "openai":
        model = f"openai-compatible:test-model@{server.url}/v1"
        config: list[str] = []
    else:
        model = "loop:claude-test"
        (tmp_path / "config.toml").write_text(
            f'[providers.loop]\nkind = "anthropic"\nbase_url = "{server.url}"\n'
            'api_key_env = "ANTHROPIC_API_KEY"\nallow_key_over_http = true\n'
        )
        config = ["--config", str(tmp_path / "config.toml")]
    result = await orchestrator_on_trio(
        "run", "Read the three files",
        "--model", model, "--workspace", str(workspace),
        "--sessions-dir", str(sessions), "--yes", "--json", *config,
        OPENAI_API_KEY="sk-FAKE",
        ANTHROPIC_API_KEY="sk-ant-FAKE",
    )  # fmt: skip
    stderr = result.stderr.decode()
    assert result.returncode == 0, stderr[-3000:]
    assert server.refused, "the server never refused a request: the test proves nothing"
    [session_id] = [p.name for p in sessions.iterdir()]
    directory = sessions / session_id
    records = [f.fields() for f in scan_journal(directory / JOURNAL).records]
    compactions = [r for r in records if r["k"] == "context_compacted"]
    assert compactions[0]["reason"] == "too_long"
    assert compactions[0]["window"] == WINDOW_CHARS // 4  # the window the server stated
    assert len(compactions) >= 2
    assert agent.summaries >= 1
    # Every request after the first refusal fit: one refusal per learned window at most.
    assert len(server.refused) <= 2
    state = load_state(directory, warn=pytest.fail)
    assert state.status == "completed"
    assert state.windows
    assert state.agents["main"].steps == ROUNDS + 1
