"""A role's own sampling settings reach that role's requests and no other's: `orchestrator
run` as a subprocess whose main agent delegates a task to a `worker`, against a loopback
server of each provider's wire format, with `[agents.worker] temperature` and
`max_tokens` in the config. (They were read from `[agents.main]` only, and applied to
every agent.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from provider_server import LoopbackServer, Recorded, Reply
from sdk_types import anthropic_text, anthropic_tool_use, openai_text, openai_tool_call

from tests.scenes import orchestrator_on_trio, run_flags

CONFIG = """
[agents.main]
max_tokens = 900

[agents.worker]
temperature = 0.1
max_tokens = 321
"""


def _is_worker(body: dict[str, Any]) -> bool:
    names = {(t.get("function") or t)["name"] for t in body.get("tools", ())}
    return "complete" in names


def _next_call(body: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """What the scripted team does next, read from the request: the main agent delegates
    once, then waits for its task, then answers; the worker completes at once."""
    made = orjson.dumps([m for m in body["messages"] if m["role"] == "assistant"]).decode()
    if _is_worker(body):
        return None if "complete" in made else ("complete", {"summary": "counted"})
    if "wait_tasks" in made:
        return None
    if "delegate" in made:
        return ("wait_tasks", {})
    return ("delegate", {"description": "count", "prompt": "Count the files."})


def openai_reply(request: Recorded) -> Reply:
    call = _next_call(request.json())
    if call is None:
        return Reply.sse(openai_text("done", usage=(50, 5)))
    name, arguments = call
    json = orjson.dumps(arguments).decode()
    return Reply.sse(openai_tool_call(f"call_{name}", name, json, usage=(50, 5)))


def anthropic_reply(request: Recorded) -> Reply:
    call = _next_call(request.json())
    if call is None:
        return Reply.sse(anthropic_text("done", output_tokens=5))
    name, arguments = call
    json = orjson.dumps(arguments).decode()
    return Reply.sse(anthropic_tool_use(f"toolu_{name}", name, json, output_tokens=5))


async def run_cli(tmp_path: Path, model: str, config: str, env: dict[str, str]) -> str:
    workspace, sessions = tmp_path / "ws", tmp_path / "sessions"
    workspace.mkdir()
    (tmp_path / "config.toml").write_text(config)
    result = await orchestrator_on_trio(
        "run", "Count the files",
        "--model", model, "--config", str(tmp_path / "config.toml"),
        *run_flags(workspace, sessions),
        **env,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()
    return result.stdout.decode()


async def test_a_worker_samples_with_its_own_settings_on_openai(
    server: LoopbackServer, tmp_path: Path
) -> None:
    server.handler = openai_reply
    model = f"openai-compatible:test-model@{server.url}/v1"
    await run_cli(tmp_path, model, CONFIG, {"OPENAI_API_KEY": "sk-test"})
    bodies = [r.json() for r in server.requests]
    workers = [b for b in bodies if _is_worker(b)]
    mains = [b for b in bodies if not _is_worker(b)]
    assert workers, "the worker made no request"
    assert len(mains) >= 3
    assert {(b.get("temperature"), b.get("max_tokens")) for b in workers} == {(0.1, 321)}
    assert {(b.get("temperature"), b.get("max_tokens")) for b in mains} == {(None, 900)}


async def test_a_worker_writes_with_its_own_limit_on_anthropic(
    server: LoopbackServer, tmp_path: Path
) -> None:
    server.handler = anthropic_reply
    config = f'{CONFIG}\n[providers.anthropic]\nbase_url = "{server.url}"\n'
    await run_cli(tmp_path, "anthropic:claude-test", config, {"ANTHROPIC_API_KEY": "sk-ant"})
    bodies = [r.json() for r in server.requests]
    workers = [b for b in bodies if _is_worker(b)]
    mains = [b for b in bodies if not _is_worker(b)]
    assert workers, "the worker made no request"
    assert {b["max_tokens"] for b in workers} == {321}
    assert {b["max_tokens"] for b in mains} == {900}
    assert all("temperature" not in b for b in bodies)  # the Messages API takes none here
