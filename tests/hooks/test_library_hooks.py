"""Hooks as code: `orc.run(..., hooks=[orc.Hook(event, function)])`, in memory, with a
scripted model; what a hook sees (redacted), what it may decide, and its failures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orchestrator as orc
from orchestrator.config import HookEventName
from orchestrator.messages import ToolCall
from orchestrator.models.scripted import ScriptedModel, parse_script
from orchestrator.tools.permissions import Answer
from tests.scenes import call, scripted


def results(events: list[orc.Event]) -> list[orc.ToolResult]:
    return [e.result for e in events if isinstance(e, orc.ToolCallFinished)]


async def in_memory(
    model: orc.Model, workspace: Path, hooks: list[orc.Hook], **more: Any
) -> orc.RunResult:
    """`orc.run` in memory on `workspace` with `model`, the workspace tools and `hooks`
    (`more` adds to them or replaces them)."""
    wiring: dict[str, Any] = {"tools": orc.workspace_tools(), "hooks": hooks, **more}
    return await orc.run("g", model=model, workspace=workspace, in_memory=True, **wiring)


def to_a_worker(*worker: dict[str, Any], dones: int = 1) -> ScriptedModel:
    """The main agent delegates one task to a `worker` agent, waits for it, then says
    "done" (`dones` times, as often as it is woken); the worker plays `worker`."""
    delegate = call("delegate", agent_type="worker", description="d", prompt="p")
    main = [{"tool_calls": [delegate]}, {"tool_calls": [call("wait_tasks")]}]
    return ScriptedModel(
        parse_script(
            {"agents": {"main": [*main, *[{"text": "done"}] * dones], "worker": list(worker)}}
        )
    )


async def test_a_function_refuses_and_an_async_one_notes(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    events: list[orc.Event] = []

    def refuse_writes(event: dict[str, Any]) -> dict[str, Any] | None:
        seen.append(event)
        if event["arguments"].get("path") == "keep.txt":
            return {"decision": "refuse", "reason": "keep.txt is read-only"}
        return None

    async def note(event: dict[str, Any]) -> dict[str, Any]:
        return {"note": f"{event['tool']} ended {event['status']}"}

    (tmp_path / "keep.txt").write_text("kept\n")
    model = scripted(
        {"tool_calls": [call("write_file", path="keep.txt", content="x")]},
        {"tool_calls": [call("write_file", path="new.txt", content="y")]},
        {"text": "ok"},
    )
    await in_memory(
        model,
        tmp_path,
        [
            orc.Hook("pre_tool", refuse_writes, tools=("write_file",)),
            orc.Hook("post_tool", note),
        ],
        on_event=events.append,
        approve=orc.approve_all,
    )
    assert (tmp_path / "keep.txt").read_text() == "kept\n"
    assert (tmp_path / "new.txt").read_text() == "y"
    refused, written = results(events)
    assert (
        refused.content
        == "write_file was refused by a hook: keep.txt is read-only; do not retry it"
    )
    assert written.content.endswith("\n\nNote from a hook: write_file ended ok")
    assert [e["arguments"]["path"] for e in seen] == ["keep.txt", "new.txt"]


async def test_an_ask_asks_the_approver_about_a_call_the_rules_allow(tmp_path: Path) -> None:
    asked: list[ToolCall] = []
    events: list[orc.Event] = []

    async def approve(request: orc.ApprovalRequest) -> Answer:
        asked.append(request.call)
        return orc.Denied("not today")

    model = scripted({"tool_calls": [call("list_files")]}, {"text": "ok"})
    await in_memory(
        model,
        tmp_path,
        [orc.Hook("pre_tool", lambda event: {"decision": "ask"})],
        on_event=events.append,
        approve=approve,
    )
    assert [c.name for c in asked] == ["list_files"]  # read-only: never asked without it
    (refused,) = results(events)
    assert refused.content == "list_files was not approved: not today; do not retry it"


async def test_a_function_that_raises_is_one_notice_and_the_call_runs(tmp_path: Path) -> None:
    events: list[orc.Event] = []

    def broken(event: dict[str, Any]) -> None:
        raise KeyError("nope")

    model = scripted({"tool_calls": [call("list_files")]}, {"text": "ok"})
    await in_memory(model, tmp_path, [orc.Hook("pre_tool", broken)], on_event=events.append)
    (listed,) = results(events)
    assert listed.status == "ok"
    notices = [e.message for e in events if isinstance(e, orc.Notice) and "hook" in e.message]
    assert notices == [
        "hook 'test_a_function_that_raises_is_one_notice_and_the_call_runs.<locals>.broken' "
        "(pre_tool) failed: KeyError: 'nope'; going on without it"
    ]


async def test_a_stop_hook_is_bounded_by_the_continuations_allowed(tmp_path: Path) -> None:
    asked = 0

    def never_done(event: dict[str, Any]) -> dict[str, Any]:
        nonlocal asked
        asked += 1
        return {"decision": "continue", "reason": "keep going"}

    events: list[orc.Event] = []
    model = scripted(*[{"text": f"done {i}"} for i in range(4)])
    result = await in_memory(
        model,
        tmp_path,
        [orc.Hook("stop", never_done)],
        on_event=events.append,
        settings=orc.SessionSettings(max_auto_continues=2),
        tools=(),
    )
    assert asked == 2
    notes = [e.text for e in events if isinstance(e, orc.HookDecided)]
    assert notes == ["A hook asks you not to end your turn yet: keep going"] * 2
    assert result.output == "done 2"
    assert result.status == "completed"


async def test_the_told_events_reach_their_hooks_in_order(tmp_path: Path) -> None:
    told: list[tuple[str, str, str]] = []

    def note(event: dict[str, Any]) -> None:
        what = event.get("state") or event.get("status") or event.get("agent_type") or ""
        told.append((event["event"], event["agent"], str(what)))

    model = to_a_worker({"tool_calls": [call("complete", summary="built")]})
    events: tuple[HookEventName, ...] = (
        "session_start",
        "task_delegated",
        "task_settled",
        "session_end",
    )
    result = await in_memory(
        model,
        tmp_path,
        [orc.Hook(event, note) for event in events],
        agents=orc.builtin_agents(),
        approve=orc.approve_all,
    )
    assert result.status == "completed"
    assert told == [
        ("session_start", "main", ""),
        ("task_delegated", "main", "worker"),
        ("task_settled", "t1", "completed"),
        ("session_end", "main", "completed"),
    ]


async def test_a_call_parked_for_a_person_is_told_as_waiting(tmp_path: Path) -> None:
    told: list[dict[str, Any]] = []

    async def later(request: orc.ApprovalRequest) -> Answer:
        return orc.Later()

    model = scripted({"tool_calls": [call("shell", command="echo hi")]}, {"text": "ok"})
    result = await in_memory(
        model,
        tmp_path,
        [orc.Hook("waiting", told.append), orc.Hook("session_end", told.append)],
        approve=later,
    )
    assert result.status == "blocked"
    (request,) = result.approvals
    assert [(e["event"], e.get("what"), e.get("id")) for e in told] == [
        ("waiting", "approval", request.id),
        ("session_end", None, None),
    ]
    assert told[1]["status"] == "blocked"


async def test_a_question_left_to_the_person_is_told_as_waiting(tmp_path: Path) -> None:
    """A task's question that no agent answers ends the run blocked on it: the person's
    now, told to the `waiting` hooks before the session's end."""
    told: list[dict[str, Any]] = []
    model = to_a_worker({"tool_calls": [call("ask_decision", question="TOML or JSON?")]}, dones=6)
    result = await in_memory(
        model,
        tmp_path,
        [orc.Hook("waiting", told.append), orc.Hook("session_end", told.append)],
        agents=orc.builtin_agents(),
        approve=orc.approve_all,
    )
    assert result.status == "blocked"
    (question,) = result.questions
    assert [
        (e["event"], e["agent"], e.get("what"), e.get("task"), e.get("question"), e.get("id"))
        for e in told
    ] == [
        ("waiting", "t1", "question", "t1", "TOML or JSON?", question.message_id),
        ("session_end", "main", None, None, None, None),
    ]
    assert told[0]["of"] == "main"
