"""The turn loop end to end with the scripted model."""

from __future__ import annotations

from contextlib import AbstractContextManager

import orjson
import pytest
import trio
import trio.testing
from pydantic import BaseModel

from orchestrator import (
    AgentContext,
    AssistantMessage,
    PermissionPolicy,
    Rule,
    ToolCallFinished,
    ToolCallStarted,
    ToolResult,
)
from orchestrator.agent import run_turn
from orchestrator.tools import Tool, ToolContext, ToolOutput, ToolRegistry, Workspace, deny_all
from tests.conftest import MakeDeps
from tests.scenes import call, scripted


def results(messages: list) -> list[ToolResult]:  # type: ignore[type-arg]
    return [m for m in messages if isinstance(m, ToolResult)]


async def test_loop_runs_tools_until_the_model_stops(
    make_deps: MakeDeps, workspace: Workspace
) -> None:
    model = scripted(
        {"text": "writing", "tool_calls": [call("write_file", path="a.txt", content="hi\n")]},
        {"tool_calls": [call("read_file", path="a.txt")]},
        {"text": "done"},
    )
    state, deps, sink = make_deps(model)
    outcome = await run_turn(state, deps)
    assert outcome.reason == "completed"
    assert outcome.rounds == 3
    assert outcome.final is not None
    assert outcome.final.text == "done"
    assert (workspace.root / "a.txt").read_text() == "hi\n"
    assert [(r.name, r.status, r.content) for r in results(state.messages)] == [
        ("write_file", "ok", "wrote 3 bytes to a.txt"),
        ("read_file", "ok", "hi\n"),
    ]
    # The model saw the results of its calls, and each request named its step.
    assert [r.step for r in model.requests] == [0, 1, 2]
    assert model.requests[2].messages[-1] == results(state.messages)[-1]
    assert state.pending_calls() == []
    kinds = [e.kind for e in sink.events]
    assert kinds[0] == "turn_started"
    assert kinds[-1] == "turn_ended"
    assert kinds.count("assistant_replied") == 3


async def test_round_limit_stops_the_turn(make_deps: MakeDeps) -> None:
    model = scripted(*[{"tool_calls": [call("list_files")]}] * 5)
    state, deps, _ = make_deps(model, max_rounds=3)
    outcome = await run_turn(state, deps)
    assert (outcome.reason, outcome.rounds) == ("max_rounds", 3)
    assert len(model.requests) == 3


@pytest.mark.parametrize(
    ("tool_call", "expected"),
    [
        ({"name": "no_such_tool", "arguments": {}}, "unknown tool 'no_such_tool'"),
        ({"name": "read_file", "arguments": "{not json"}, "are not valid JSON"),
        ({"name": "read_file", "arguments": "[1, 2]"}, "must be a JSON object, got list"),
        ({"name": "read_file", "arguments": {"start_line": 1}}, "path: Field required"),
        ({"name": "read_file", "arguments": {"path": "x", "start_line": 0}}, "start_line"),
        # Unknown arguments are refused, not ignored: a typo must not run with a default.
        (
            {"name": "read_file", "arguments": {"paht": "x"}},
            "unknown argument 'paht' for read_file; its arguments are: path, start_line",
        ),
        (
            {"name": "shell", "arguments": {"command": "rm -rf build", "cwd": "/", "env": {}}},
            "unknown argument 'cwd', 'env' for shell",
        ),
        ({"name": "list_files", "arguments": {"recursive": True}}, "unknown argument 'recursive'"),
    ],
)
async def test_malformed_calls_become_error_results(
    make_deps: MakeDeps,
    tool_call: dict,
    expected: str,  # type: ignore[type-arg]
) -> None:
    model = scripted({"tool_calls": [tool_call]}, {"text": "ok, giving up"})
    state, deps, _ = make_deps(model)
    outcome = await run_turn(state, deps)
    assert outcome.reason == "completed"
    [result] = results(state.messages)
    assert result.status == "error"
    assert expected in result.content
    # The model got to see the error and answer it.
    assert model.requests[1].messages[-1] == result


class GateArgs(BaseModel):
    label: str


class Gate(Tool[GateArgs]):
    """A read-only tool that returns only once `expected` calls are inside it at once:
    it can finish only if the calls really overlap."""

    name = "gate"
    description = "waits for its siblings"
    args_model = GateArgs
    read_only = True

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.inside = 0
        self.all_in = trio.Event()

    async def run(self, args: GateArgs, ctx: ToolContext) -> ToolOutput:
        self.inside += 1
        if self.inside == self.expected:
            self.all_in.set()
        await self.all_in.wait()
        return ToolOutput(args.label)


class Writer(Tool[GateArgs]):
    name = "writer"
    description = "records when it runs"
    args_model = GateArgs

    def __init__(self, log: list[str]) -> None:
        self.log = log
        self.active = 0
        self.max_active = 0

    async def run(self, args: GateArgs, ctx: ToolContext) -> ToolOutput:
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        self.log.append(f"start {args.label}")
        await trio.testing.wait_all_tasks_blocked()
        self.log.append(f"end {args.label}")
        self.active -= 1
        return ToolOutput(args.label)


async def test_read_only_calls_overlap(make_deps: MakeDeps) -> None:
    gate = Gate(expected=3)
    model = scripted(
        {"tool_calls": [call("gate", label=str(i)) for i in range(3)]}, {"text": "done"}
    )
    state, deps, _ = make_deps(model, ToolRegistry([gate]))
    with trio.fail_after(5):  # would deadlock (and fail) if the calls ran one by one
        outcome = await run_turn(state, deps)
    assert outcome.reason == "completed"
    assert sorted(r.content for r in results(state.messages)) == ["0", "1", "2"]


async def test_writers_run_alone_and_in_order(make_deps: MakeDeps) -> None:
    log: list[str] = []
    writer = Writer(log)
    gate = Gate(expected=2)
    model = scripted(
        {
            "tool_calls": [
                call("writer", label="w1"),
                call("gate", label="r1"),
                call("gate", label="r2"),
                call("writer", label="w2"),
                call("writer", label="w3"),
            ]
        },
        {"text": "done"},
    )
    state, deps, sink = make_deps(model, ToolRegistry([gate, writer]))
    with trio.fail_after(5):
        await run_turn(state, deps)
    assert log == ["start w1", "end w1", "start w2", "end w2", "start w3", "end w3"]
    assert writer.max_active == 1
    finished = [e.result.content for e in sink.events if isinstance(e, ToolCallFinished)]
    assert finished[0] == "w1"
    assert set(finished[1:3]) == {"r1", "r2"}
    assert finished[3:] == ["w2", "w3"]
    # A writer's start is emitted durably, a reader's is not.
    started = [e for e in sink.events if isinstance(e, ToolCallStarted)]
    assert [e.read_only for e in started] == [False, True, True, False, False]
    # Starts are emitted (and journaled) in the order the model gave, overlap or not.
    labels = [orjson.loads(e.call.arguments)["label"] for e in started]
    assert labels == ["w1", "r1", "r2", "w2", "w3"]


class Forever(Tool[GateArgs]):
    name = "forever"
    description = "never returns"
    args_model = GateArgs

    def __init__(self) -> None:
        self.started = trio.Event()

    async def run(self, args: GateArgs, ctx: ToolContext) -> ToolOutput:
        self.started.set()
        await trio.sleep_forever()
        raise AssertionError("unreachable")


async def test_cancelling_a_turn_gives_unfinished_calls_cancelled_results(
    make_deps: MakeDeps,
) -> None:
    forever = Forever()
    log: list[str] = []
    model = scripted(
        {
            "tool_calls": [
                call("writer", label="first"),
                call("forever", label="stuck"),
                call("writer", label="never"),
            ]
        }
    )
    state, deps, _ = make_deps(model, ToolRegistry([forever, Writer(log)]))
    async with trio.open_nursery() as nursery:
        scope = trio.CancelScope()

        async def turn() -> None:
            with scope:
                await run_turn(state, deps)

        nursery.start_soon(turn)
        await forever.started.wait()
        scope.cancel()
    assert [(r.content, r.status) for r in results(state.messages)] == [
        ("first", "ok"),
        ("cancelled before it finished", "cancelled"),
        ("cancelled before it finished", "cancelled"),
    ]
    assert log == ["start first", "end first"]
    assert state.pending_calls() == []


async def test_ask_without_approval_is_refused(make_deps: MakeDeps, workspace: Workspace) -> None:
    model = scripted(
        {"tool_calls": [call("write_file", path="x", content="y"), call("list_files")]},
        {"text": "ok"},
    )
    state, deps, _ = make_deps(model, approve=deny_all)
    await run_turn(state, deps)
    write, listing = results(state.messages)
    # Nobody could be asked: a status of its own, which the session's outcome counts.
    assert write.status == "unapproved"
    assert "nobody can be asked" in write.content
    assert listing.status == "ok"  # read-only tools are allowed by default
    assert not (workspace.root / "x").exists()


async def test_deny_rule_refuses_without_asking(make_deps: MakeDeps) -> None:
    asked: list[str] = []

    async def approve(c: object) -> bool:
        asked.append("asked")
        return True

    model = scripted({"tool_calls": [call("shell", command="true")]}, {"text": "ok"})
    policy = PermissionPolicy(rules=[Rule("shell", "deny")])
    state, deps, _ = make_deps(model, policy=policy, approve=approve)
    await run_turn(state, deps)
    [result] = results(state.messages)
    assert "denied by the permission policy" in result.content
    assert asked == []


async def test_tool_crash_is_an_error_result(make_deps: MakeDeps) -> None:
    class Broken(Tool[GateArgs]):
        name = "broken"
        description = "raises"
        args_model = GateArgs
        read_only = True

        async def run(self, args: GateArgs, ctx: ToolContext) -> ToolOutput:
            raise KeyError("boom")

    model = scripted({"tool_calls": [call("broken", label="x")]}, {"text": "ok"})
    state, deps, _ = make_deps(model, ToolRegistry([Broken()]))
    await run_turn(state, deps)
    [result] = results(state.messages)
    assert result.status == "error"
    assert "broken crashed: KeyError" in result.content


async def test_streamed_text_is_the_reply_text(make_deps: MakeDeps) -> None:
    model = scripted({"text": "one two  three"})
    state, deps, sink = make_deps(model)
    await run_turn(state, deps)
    streamed = "".join(e.text for e in sink.events if e.kind == "text")  # type: ignore[union-attr]
    assert streamed == "one two  three"
    assert isinstance(state.messages[-1], AssistantMessage)
    assert state.messages[-1].text == streamed


async def test_permission_is_settled_before_the_start_is_recorded(make_deps: MakeDeps) -> None:
    seen_when_asked: list[int] = []
    model = scripted(
        {"tool_calls": [call("shell", command="true"), call("shell", command="false")]},
        {"text": "ok"},
    )

    async def approve(c: object) -> bool:
        seen_when_asked.append(sum(isinstance(e, ToolCallStarted) for e in sink.events))
        return len(seen_when_asked) == 1  # yes to the first, no to the second

    state, deps, sink = make_deps(model, approve=approve)
    await run_turn(state, deps)
    assert seen_when_asked == [0, 1]
    started = [e for e in sink.events if isinstance(e, ToolCallStarted)]
    # The refused call will not run: nothing to repeat after a crash.
    assert [e.idempotent for e in started] == [False, True]
    assert [r.status for r in results(state.messages)] == ["ok", "error"]


async def test_a_tool_ends_the_turn_by_what_it_returns(make_deps: MakeDeps) -> None:
    class Finish(Tool[GateArgs]):
        name = "finish"
        description = "ends the turn"
        args_model = GateArgs

        async def run(self, args: GateArgs, ctx: ToolContext) -> ToolOutput:
            return ToolOutput("done", ends_turn=True)

    model = scripted({"tool_calls": [call("finish", label="x")]}, {"text": "never asked"})
    state, deps, sink = make_deps(model, ToolRegistry([Finish()]))
    outcome = await run_turn(state, deps)
    assert (outcome.reason, outcome.rounds, outcome.stopped) == ("yielded", 1, "")
    assert len(model.requests) == 1
    assert sink.events[-1].kind == "turn_ended"


async def test_hooks_stop_a_turn_with_a_reason_instead_of_raising(make_deps: MakeDeps) -> None:
    class Spent:
        async def before_round(self, context: AgentContext) -> str | None:
            return "it used its budget of 0 model calls"

        def model_call(self, agent: str) -> AbstractContextManager[trio.CancelScope]:
            return trio.CancelScope()

        def tool_call(self, agent: str) -> AbstractContextManager[trio.CancelScope]:
            return trio.CancelScope()

        def repeating(self, agent: str) -> bool:
            return False

    model = scripted({"text": "never asked"})
    state, deps, sink = make_deps(model, hooks=Spent())
    outcome = await run_turn(state, deps)
    assert (outcome.reason, outcome.rounds) == ("failed", 0)
    assert outcome.stopped == "it used its budget of 0 model calls"
    assert model.requests == []
    # The turn is left open: its caller ends it as it acts on the stop.
    assert [e.kind for e in sink.events] == ["turn_started"]
    assert state.turn_open
