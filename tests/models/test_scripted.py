"""The scripted model: script selection, errors that name agent and step, recording."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import trio

from orchestrator import ScriptedModel, ScriptedReply, UserMessage, stamps
from orchestrator.demo import script_path
from orchestrator.errors import ScriptError
from orchestrator.models import ModelRequest, collect
from orchestrator.models.scripted import load_script, parse_script


def request(agent: str = "main", role: str = "main", step: int = 0) -> ModelRequest:
    return ModelRequest(messages=(UserMessage(content="hi"),), agent=agent, role=role, step=step)


async def reply_to(model: ScriptedModel, req: ModelRequest):  # type: ignore[no-untyped-def]
    async with model.stream(req) as events:
        return await collect(events)


async def test_replies_by_agent_then_role_then_default() -> None:
    model = ScriptedModel(
        parse_script(
            {
                "agents": {
                    "worker-1": [{"text": "named"}],
                    "worker": [{"text": "by role"}],
                    "*": [{"text": "default"}],
                }
            }
        )
    )
    assert (await reply_to(model, request("worker-1", "worker"))).text == "named"
    assert (await reply_to(model, request("worker-2", "worker"))).text == "by role"
    assert (await reply_to(model, request("planner", "planner"))).text == "default"
    assert [r.agent for r in model.requests] == ["worker-1", "worker-2", "planner"]


async def test_tool_calls_get_stable_ids_and_raw_arguments() -> None:
    model = ScriptedModel(
        parse_script(
            {
                "agents": {
                    "main": [
                        {
                            "tool_calls": [
                                {"name": "a", "arguments": {"x": 1}},
                                {"name": "b", "arguments": "{broken", "id": "given"},
                            ]
                        }
                    ]
                }
            }
        )
    )
    reply = await reply_to(model, request())
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("call_main_0_0", "a", '{"x":1}'),
        ("given", "b", "{broken"),
    ]
    assert reply.stop_reason == "tool_use"
    assert reply.usage is not None
    assert reply.usage.input_tokens > 0


async def test_running_out_names_agent_and_step() -> None:
    model = ScriptedModel(parse_script({"agents": {"main": [{"text": "only one"}]}}))
    with pytest.raises(ScriptError, match=r"agent 'main' .* step 1 but the script has 1"):
        await reply_to(model, request(step=1))


async def test_unknown_agent_lists_known_ones() -> None:
    model = ScriptedModel(parse_script({"agents": {"main": [{"text": "x"}]}}))
    with pytest.raises(ScriptError, match=r"no replies for agent 'other'.*main"):
        await reply_to(model, request("other", "other"))


def test_malformed_reply_names_agent_and_step() -> None:
    with pytest.raises(ScriptError, match=r"agent 'main' step 1 \(tool_calls.0.name\)"):
        parse_script({"agents": {"main": [{"text": "ok"}, {"tool_calls": [{"arguments": {}}]}]}})


def test_bad_files(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="does not exist"):
        load_script(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(ScriptError, match="is not JSON"):
        load_script(bad)


def test_a_file_read_again_is_parsed_again_only_once_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "script.json"
    path.write_text('{"agents": {"main": [{"text": "one"}]}}')
    fresh = load_script(path)
    assert load_script(path) is not fresh  # changed just now: its stat may not show the next
    monkeypatch.setattr(stamps, "RACY_NS", 0)
    kept = load_script(path)
    assert load_script(path) is kept  # (not read: the worker's every task makes its model)
    path.write_text('{"agents": {"main": [{"text": "two"}, {"text": "three"}]}}')
    changed = load_script(path)
    assert changed is not kept
    assert [reply.text for reply in changed.agents["main"]] == ["two", "three"]
    path.unlink()
    with pytest.raises(ScriptError, match="does not exist"):
        load_script(path)


async def test_callable_responder_and_wrong_return() -> None:
    model = ScriptedModel(lambda req: ScriptedReply(text=f"step {req.step}"))
    assert (await reply_to(model, request(step=4))).text == "step 4"
    broken = ScriptedModel(lambda req: "nope")  # type: ignore[arg-type,return-value]
    with pytest.raises(ScriptError, match="returned str for agent 'main' step 0"):
        await reply_to(broken, request())


def test_packaged_demo_script_is_valid() -> None:
    script = load_script(script_path())
    assert len(script.agents["main"]) >= 5


def test_documented_example_is_valid() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "scripted-model.md").read_text()
    block = doc.split("```json\n", 1)[1].split("```", 1)[0]
    parse_script(orjson.loads(block))


def test_empty_or_repeated_call_ids_are_made_unique_within_a_reply() -> None:
    from orchestrator import ToolCall
    from orchestrator.models.base import unique_call_ids

    calls = [
        ToolCall(id="call_0", name="a"),
        ToolCall(id="call_0", name="b"),
        ToolCall(id="", name="c"),
        ToolCall(id="call_0_1", name="d"),
    ]
    ids = [c.id for c in unique_call_ids(calls)]
    assert len(set(ids)) == 4
    assert ids[0] == "call_0"  # ids that are fine stay as they are
    assert ids[3] == "call_0_1"
    assert [c.name for c in unique_call_ids(calls)] == ["a", "b", "c", "d"]


async def test_latency_delays_each_reply(autojump_clock: object) -> None:
    """A script's `latency`: each reply comes that many seconds after its request."""
    model = ScriptedModel(parse_script({"latency": 0.25, "agents": {"*": [{"text": "late"}] * 2}}))
    start = trio.current_time()
    assert (await reply_to(model, request(step=0))).text == "late"
    assert (await reply_to(model, request(step=1))).text == "late"
    assert trio.current_time() - start == pytest.approx(0.5)
    with pytest.raises(ScriptError, match="latency"):
        parse_script({"latency": -1, "agents": {}})
