"""Todo lists: the rules of a change (todos.py), and the tools end to end through the real
team, turn loop and fold (a session in memory, scripted models)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from orchestrator import Policy, ScriptedCall, ScriptedReply, TodoList, TodosChanged
from orchestrator.errors import ToolFailed
from orchestrator.loop.todo_changes import Change, create, hand_off, update, write
from orchestrator.loop.todos import TodoError, TodoStatus, render
from orchestrator.team.queries import MAIN
from orchestrator.tools import Workspace
from orchestrator.tools.todos import TodoSpec
from tests.scenes import Scene, c, last_text, reply, steps


def listing(*items: TodoSpec) -> TodoList:
    todos = TodoList()
    todos.apply(1, TodosChanged(agent=MAIN, replace=True, items=tuple(write(todos, items, at=1))))
    return todos


def spec(
    content: str, *, id: str = "", blocked_by: tuple[str, ...] = (), status: TodoStatus = "pending"
) -> TodoSpec:
    return TodoSpec(id=id, content=content, blocked_by=blocked_by, status=status)


# --- the rules -----------------------------------------------------------------------------------


def test_write_assigns_ids_and_keeps_blockers_both_ways() -> None:
    todos = listing(
        spec("set up"), spec("api", blocked_by=("1",)), spec("tests", blocked_by=("1", "2"))
    )
    assert list(todos.items) == ["1", "2", "3"]
    assert todos.blocks == {"1": ["2", "3"], "2": ["3"]}
    assert [i.id for i in todos.workable()] == ["1"]
    assert todos.open_blockers(todos.items["3"]) == ["1", "2"]


def test_blocked_is_computed_and_released_when_a_blocker_completes() -> None:
    todos = listing(spec("a", id="a"), spec("b", id="b", blocked_by=("a",)))
    assert todos.is_blocked(todos.items["b"])
    done = update(todos, Change(id="a", status="completed"), at=2)
    todos.apply(2, TodosChanged(agent=MAIN, items=(done,)))
    assert not todos.is_blocked(todos.items["b"])
    assert [i.id for i in todos.workable()] == ["b"]


@pytest.mark.parametrize("status", ["failed", "cancelled"])
def test_a_failed_or_cancelled_blocker_keeps_its_dependants_blocked(status: str) -> None:
    todos = listing(
        spec("a", id="a"),
        spec("b", id="b", blocked_by=("a",)),
        spec("c", id="c", blocked_by=("b",)),
    )
    gone = update(todos, Change(id="a", status=status, failure="no luck"), at=2)  # type: ignore[arg-type]
    todos.apply(2, TodosChanged(agent=MAIN, items=(gone,)))
    assert todos.is_blocked(todos.items["b"])
    assert todos.workable() == []
    assert todos.stuck_on_failed(todos.items["c"]) == ["a"]


def test_duplicate_ids_in_write_are_refused() -> None:
    with pytest.raises(TodoError, match="duplicate ids in the list: x"):
        write(TodoList(), [spec("one", id="x"), spec("two", id="x")], at=1)


def test_unknown_blockers_are_refused_with_the_known_ids() -> None:
    with pytest.raises(TodoError, match="blocked by unknown 9; known ids: 1"):
        write(TodoList(), [spec("one", blocked_by=("9",))], at=1)
    todos = listing(spec("one"))
    with pytest.raises(TodoError, match="no item 7; known ids: 1"):
        update(todos, Change(id="7", status="completed"), at=2)


def test_cycles_are_refused_with_the_cycle() -> None:
    with pytest.raises(TodoError, match=r"cycle: (a -> b -> a|b -> a -> b)"):
        write(
            TodoList(),
            [spec("a", id="a", blocked_by=("b",)), spec("b", id="b", blocked_by=("a",))],
            at=1,
        )
    todos = listing(spec("a", id="a"), spec("b", id="b", blocked_by=("a",)))
    with pytest.raises(TodoError, match="cycle"):
        update(todos, Change(id="a", add_blocked_by=("b",)), at=2)
    with pytest.raises(TodoError, match="cannot block itself"):
        update(todos, Change(id="a", add_blocked_by=("a",)), at=2)


@pytest.mark.parametrize(("status", "verb"), [("in_progress", "start"), ("completed", "complete")])
def test_starting_or_completing_a_blocked_item_is_refused_naming_its_blockers(
    status: str, verb: str
) -> None:
    todos = listing(spec("set up db", id="db"), spec("api", id="api", blocked_by=("db",)))
    with pytest.raises(
        TodoError, match=f"cannot {verb} item api: it is blocked by db \\('set up db', pending\\)"
    ):
        update(todos, Change(id="api", status=status), at=2)  # type: ignore[arg-type]
    with pytest.raises(TodoError, match=f"cannot {verb} item api"):
        write(
            todos,
            [spec("set up db", id="db"), spec("api", id="api", blocked_by=("db",), status=status)],
            at=2,
        )
    with pytest.raises(TodoError, match=f"cannot {verb} item x"):
        create(todos, spec("x", id="x", blocked_by=("db",), status=status), at=2)


def test_create_gives_the_next_number_and_refuses_a_taken_id() -> None:
    todos = listing(spec("a"), spec("b"))
    assert create(todos, spec("c"), at=2).id == "3"
    with pytest.raises(TodoError, match="an item 1 already exists"):
        create(todos, spec("again", id="1"), at=2)


def test_serial_hand_off_starts_the_next_unblocked_item() -> None:
    todos = listing(spec("a", status="in_progress"), spec("b", blocked_by=("1",)), spec("c"))
    done = update(todos, Change(id="1", status="completed"), at=2)
    started = hand_off(todos, [done], at=2)
    assert started is not None
    assert (started.id, started.status) == ("2", "in_progress")
    # Nothing starts while another item is in progress, or when nothing completed.
    assert (
        hand_off(todos, [update(todos, Change(id="3", status="in_progress"), at=2)], at=2) is None
    )


def test_render_is_compact_and_shows_every_state() -> None:
    todos = listing(
        spec("set up", status="completed"),
        TodoSpec(
            content="write api",
            active_form="Writing the api",
            status="in_progress",
            blocked_by=("1",),
        ),
        spec("tests", blocked_by=("2",)),
        spec("docs"),
    )
    assert render(todos) == (
        "Tasks 1/4\n"
        "[1] [done] set up\n"
        "[2] [doing] write api (Writing the api)\n"
        "[3] [blocked by 2] tests\n"
        "[4] [todo] docs"
    )


# --- the tools, end to end ---------------------------------------------------------------------


def main_steps(workspace: Workspace, *replies: Any, **more: Any) -> Scene:
    """A scene of the main agent alone, playing `replies` (`steps`)."""
    return Scene(workspace, {MAIN: steps(*replies)}, **more)


def writes(**arguments: Any) -> ScriptedReply:
    """A reply that calls todo_write with `arguments`."""
    return reply("", c("todo_write", **arguments))


async def test_the_todo_tools_change_the_folded_list_and_show_it(workspace: Workspace) -> None:
    scene = main_steps(
        workspace,
        writes(
            goal="ship it",
            todos=[
                {"content": "build", "active_form": "Building"},
                {"content": "test", "blocked_by": ["1"]},
            ],
        ),
        reply("", c("todo_update", id="2", status="in_progress")),  # refused: blocked
        reply("", c("todo_update", id="1", status="completed", result="built")),
        reply("", c("todo_create", content="release", blocked_by=["2"])),
        reply("", c("todo_update", id="2", status="completed")),
        reply("", c("todo_update", id="3", status="completed")),
        reply("", c("todo_list"), c("todo_get", id="9")),
        reply("done"),
    )
    outcome = await scene.completes()
    results = [
        (m.name, m.status, m.content)
        for m in scene.state.agents[MAIN].messages
        if hasattr(m, "call_id")
    ]
    assert results[0][:2] == ("todo_write", "ok")
    assert "Goal: ship it\nTasks 0/2\n[1] [todo] build\n[2] [blocked by 1] test" in results[0][2]
    assert results[1][1] == "error"
    assert "cannot start item 2: it is blocked by 1 ('build', pending)" in results[1][2]
    assert "the list is unchanged" in results[1][2]
    assert "[1] [done] build: built" in results[2][2]
    assert "item 3 added" in results[3][2]
    last = {name: (status, content) for name, status, content in results[6:]}
    assert last["todo_list"][0] == "ok"
    assert "Tasks 3/3" in last["todo_list"][1]
    assert last["todo_get"][0] == "error"
    assert "no item 9; known ids: 1, 2, 3" in last["todo_get"][1]
    todos = scene.state.todos[MAIN]
    assert [(i.id, i.status) for i in todos.items.values()] == [
        ("1", "completed"),
        ("2", "completed"),
        ("3", "completed"),
    ]
    assert outcome.detail == "all 3 todos done"


async def test_an_empty_argument_object_lists(workspace: Workspace) -> None:
    scene = Scene(workspace, {MAIN: steps(reply("", c("todo_list")), reply("ok"))})
    await scene.run()
    result = scene.state.agents[MAIN].messages[-2]
    assert (result.status, result.content) == ("ok", "The todo list is empty.")


async def test_serial_mode_hands_the_next_item_over(workspace: Workspace) -> None:
    scene = main_steps(
        workspace,
        writes(
            todos=[{"content": "a", "status": "in_progress"}, {"content": "b"}],
        ),
        reply("", c("todo_update", id="1", status="completed")),
        lambda request: (
            reply("", c("todo_update", id="2", status="completed"))
            if "Next (serial): item 2 is now in progress" in last_text(request)
            else reply("no hand-off")
        ),
        reply("all done"),
        policy=Policy(serial=True),
    )
    await scene.completes()
    assert [i.status for i in scene.state.todos[MAIN].items.values()] == ["completed", "completed"]


async def test_a_repeated_todo_call_after_a_crash_changes_nothing_twice(
    workspace: Workspace,
) -> None:
    """The tool is idempotent by its call's ref: the fold remembers the refs of the last
    reply's calls, so the same call run again finds its change made."""
    scene = Scene(
        workspace,
        {MAIN: steps(reply("", c("todo_create", content="a", status="completed")), reply("ok"))},
    )
    await scene.run()
    todos = scene.state.todos[MAIN]
    assert list(todos.items) == ["1"]
    assert todos.refs  # the ref of the call that made it
    tool = scene.team.turn_deps(MAIN).tools.get("todo_create")  # type: ignore[union-attr]
    from orchestrator import ToolContext

    ref = next(iter(todos.refs))
    again = await tool.run(
        tool.args_model(content="a"),
        ToolContext(workspace=workspace, agent=MAIN, call=ref, todos=scene.team.oversight),
    )
    assert "already recorded" in again.content
    assert list(scene.state.todos[MAIN].items) == ["1"]
    # Outside a team's call there is no list to change: a clear refusal, not a crash.
    with pytest.raises(ToolFailed, match="no todo list here"):
        await tool.run(tool.args_model(content="b"), ToolContext(workspace=workspace))


def test_the_view_lists_items_with_their_blockers() -> None:
    todos = listing(spec("a"), spec("b", blocked_by=("1",)))
    view = orjson.loads(orjson.dumps(todos.view()))
    assert view["progress"] == {"completed": 0, "total": 2}
    assert view["items"][1]["blocked_by"] == ["1"]
    assert view["items"][0]["blocks"] == ["2"]
    assert view["items"][1]["blocked"] is True


async def test_serial_hand_off_in_a_whole_list_keeps_its_order(workspace: Workspace) -> None:
    scene = main_steps(
        workspace,
        writes(
            todos=[
                {"content": "a", "status": "completed"},
                {"content": "b"},
                {"content": "c"},
            ],
        ),
        reply("", c("todo_write", todos=[{"content": "x"}])),
        reply("", c("todo_update", id="1", status="completed")),
        reply("done"),
        policy=Policy(serial=True),
    )
    await scene.run()
    todos = scene.state.todos[MAIN]
    assert [(i.id, i.status) for i in todos.items.values()] == [("1", "completed")]
    first = [m for m in scene.state.agents[MAIN].messages if getattr(m, "name", "") == "todo_write"]
    assert "[1] [done] a\n[2] [doing] b\n[3] [todo] c" in first[0].content


BAD_CALLS = [
    (
        c("todo_write", todos=[{"id": "x", "content": "a"}, {"id": "x", "content": "b"}]),
        "duplicate ids",
    ),
    (
        c(
            "todo_write",
            todos=[
                {"id": "a", "content": "a", "blocked_by": ["b"]},
                {"id": "b", "content": "b", "blocked_by": ["a"]},
            ],
        ),
        "cycle",
    ),
    (c("todo_write", todos=[{"content": "a", "blocked_by": ["7"]}]), "blocked by unknown 7"),
    (
        c(
            "todo_write",
            todos=[{"content": "a"}, {"content": "b", "blocked_by": ["1"], "status": "completed"}],
        ),
        "cannot complete item 2",
    ),
    (c("todo_create", content="c", blocked_by=["9"]), "blocked by unknown 9"),
    (c("todo_create", content="c", id="1"), "an item 1 already exists"),
    (c("todo_create", content="c", blocked_by=["2"], status="in_progress"), "cannot start item 3"),
    (c("todo_update", id="9", status="completed"), "no item 9"),
    (c("todo_update", id="2", status="completed"), "cannot complete item 2: it is blocked by 1"),
    (c("todo_update", id="1", add_blocked_by=["2"]), "cycle: 1 -> 2 -> 1"),
    (c("todo_update", id="1", remove_blocked_by=["2"]), "item 1 is not blocked by 2"),
    (c("todo_update", id="1", status="done"), "invalid arguments for todo_update"),
    (c("todo_get", id="9"), "no item 9; known ids: 1, 2"),
]


@pytest.mark.parametrize(
    ("call", "error"), BAD_CALLS, ids=[f"{bad.name}-{error}" for bad, error in BAD_CALLS]
)
async def test_each_tool_refuses_bad_input_and_leaves_the_list(
    workspace: Workspace, call: ScriptedCall, error: str
) -> None:
    plan = c("todo_write", todos=[{"content": "a"}, {"content": "b", "blocked_by": ["1"]}])
    scene = main_steps(
        workspace,
        reply("", plan),
        reply("", call),
        reply("", c("todo_update", id="1", status="completed")),
        reply("", c("todo_update", id="2", status="completed")),
        reply("done"),
    )
    await scene.run()
    results = [m for m in scene.state.agents[MAIN].messages if hasattr(m, "call_id")]
    assert results[1].status == "error"
    assert error in results[1].content
    # The list went on unchanged, and was worked to the end.
    assert [(i.id, i.status) for i in scene.state.todos[MAIN].items.values()] == [
        ("1", "completed"),
        ("2", "completed"),
    ]
