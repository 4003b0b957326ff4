"""Dependencies kept by the runtime: `delegate(after=...)`, the `waiting_deps` state, a
waiting task starting by itself when its dependencies complete, and the cascade that
cancels it when one fails (end to end with scripted models, on a session in memory).

On the local engine only: the scenes run on trio's virtual clock, which would jump ahead
while trio waits on DBOS's threads (tests/team/conftest.py); the rest fold records into
a session in memory, with no team and no runner."""

from __future__ import annotations

from typing import Any, cast

import trio
import trio.testing

from orchestrator import (
    AgentStarted,
    MemorySession,
    ModelRequest,
    ScriptedReply,
    TaskChanged,
    TaskCreated,
    TaskPort,
)
from orchestrator.errors import ProviderFatal
from orchestrator.state import decode_record
from orchestrator.state.mailbox import Caps
from orchestrator.team.postbox import Changes, Postbox
from orchestrator.team.queries import MAIN
from orchestrator.team.scheduler import Scheduler
from orchestrator.tools import Workspace
from tests.scenes import Brain, Reply, Scene, all_text, c, reply, steps


class Watch:
    """Wraps brains to note where in the event stream each agent's first model call
    came (the number of events before it), so tests can order it against records."""

    def __init__(self, scene: Scene | None = None) -> None:
        self.scene = scene
        self.first_call: dict[str, int] = {}

    def __call__(self, brain: Brain) -> Brain:
        def watched(request: ModelRequest) -> Reply:
            assert self.scene is not None
            self.first_call.setdefault(request.agent, len(self.scene.events.events))
            return brain(request)

        return watched


def completes(summary: str = "done") -> Brain:
    return steps(reply("", c("complete", summary=summary)))


def events_of(scene: Scene, kind: type) -> list[tuple[int, Any]]:
    return [(i, e) for i, e in enumerate(scene.events.events) if isinstance(e, kind)]


def settled_at(scene: Scene, task: str, state: str = "completed") -> int:
    """The index of the event that moved `task` to `state` (the first such)."""
    return next(i for i, e in events_of(scene, TaskChanged) if e.task == task and e.state == state)


def changes(scene: Scene, task: str) -> list[tuple[str, str, str]]:
    return [
        (e.agent, e.state, e.reason) for _, e in events_of(scene, TaskChanged) if e.task == task
    ]


def tool_results(scene: Scene, agent: str = MAIN) -> list[str]:
    return [m.content for m in scene.state.agents[agent].messages if m.role == "tool"]


def main_text(scene: Scene) -> str:
    return "\n".join(getattr(m, "content", "") for m in scene.state.agents[MAIN].messages)


async def run(scene: Scene) -> str:
    """Run the scene to its end; a task that never starts fails the test at once (the
    tests run on trio's autojump clock), rather than hanging it."""
    with trio.fail_after(60):
        return (await scene.run()).reason


async def test_a_task_waits_for_its_dependency_then_starts_by_itself(
    workspace: Workspace, autojump_clock: trio.testing.MockClock
) -> None:
    release = trio.Event()
    seen_waiting: list[tuple[str, bool]] = []

    async def held(request: ModelRequest) -> ScriptedReply:
        await release.wait()
        return reply("", c("complete", summary="built"))

    def look_then_release(request: ModelRequest) -> ScriptedReply:
        assert scene.team is not None
        t2 = scene.state.tasks.get("t2")
        seen_waiting.append((t2.state, scene.team.scheduler.is_running("t2")))
        release.set()
        return reply("", c("wait_tasks"))

    watch = Watch()
    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply(
                    "",
                    c("delegate", description="build", prompt=".", write_scope=["a/"]),
                    c("delegate", description="test", prompt=".", after=["t1"]),
                ),
                look_then_release,
                reply("both done"),
            ),
            "t1": watch(held),
            "t2": watch(completes("tested")),
        },
    )
    watch.scene = scene
    assert await run(scene) == "completed"
    results = tool_results(scene)
    assert results[1] == "delegated; waits for t1. task_id=t2 type=worker state=waiting_deps"
    # While it waited it had no loop (so no slot), and its record said so from creation.
    assert seen_waiting == [("waiting_deps", False)]
    created = next(e for _, e in events_of(scene, TaskCreated) if e.task == "t2")
    assert (created.state, created.after, created.after_plan) == ("waiting_deps", ("t1",), ())
    # It started by itself, after t1's completion record, and its first model call too.
    assert changes(scene, "t2") == [
        (MAIN, "pending", "its dependencies are done"),
        ("t2", "running", ""),
        ("t2", "completed", ""),
    ]
    assert settled_at(scene, "t1") < settled_at(scene, "t2", "pending") < watch.first_call["t2"]
    t2 = scene.state.tasks.get("t2")
    assert (t2.state, t2.after, t2.instances) == ("completed", ["t1"], ["t2.1"])
    task_message = scene.state.agents["t2"].messages[1].content
    assert "It starts after these have completed: t1\n" in task_message
    # wait_tasks waited for the waiting task too, not only the running one.
    assert results[2].splitlines()[:2] == [
        "t1 [completed] worker: build",
        "t2 [completed] worker: test",
    ]


async def test_a_chain_and_a_diamond_start_in_dependency_order(
    workspace: Workspace, autojump_clock: trio.testing.MockClock
) -> None:
    watch = Watch()
    graph = {"t1": [], "t2": ["t1"], "t3": ["t1"], "t4": ["t2", "t3"], "t5": ["t4"]}
    delegate = [
        c("delegate", description=task, prompt=".", after=deps)
        if deps
        else c("delegate", description=task, prompt=".")
        for task, deps in graph.items()
    ]
    scene = Scene(
        workspace,
        {
            MAIN: steps(reply("", *delegate), reply("", c("wait_tasks")), reply("all done")),
            **{task: watch(completes(task)) for task in graph},
        },
    )
    watch.scene = scene
    assert await run(scene) == "completed"
    assert {t.task_id: t.state for t in scene.state.tasks.tasks.values()} == dict.fromkeys(
        graph, "completed"
    )
    for task, deps in graph.items():
        for dep in deps:
            assert settled_at(scene, dep) < watch.first_call[task], (task, dep)
    # t4 waited for both sides of the diamond: it started only after the later of them.
    assert max(settled_at(scene, "t2"), settled_at(scene, "t3")) < settled_at(
        scene, "t4", "pending"
    )
    results = tool_results(scene)
    assert results[3] == "delegated; waits for t2, t3. task_id=t4 type=worker state=waiting_deps"


async def test_a_failed_dependency_cancels_its_dependants_and_the_owner_hears_once(
    workspace: Workspace, autojump_clock: trio.testing.MockClock
) -> None:
    def broken(request: ModelRequest) -> ScriptedReply:
        raise ProviderFatal("the model is gone", provider="scripted")

    watch = Watch()
    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply(
                    "",
                    c("delegate", description="build", prompt=".", write_scope=["a/"]),
                    c("delegate", description="test", prompt=".", after=["t1"]),
                    c("delegate", description="ship", prompt=".", after=["t2"]),
                    c("delegate", description="docs", prompt=".", write_scope=["d/"]),
                ),
                reply("", c("wait_tasks")),
                reply("noted"),
                reply("noted again"),
            ),
            "t1": watch(broken),
            "t2": watch(completes()),
            "t3": watch(completes()),
            "t4": watch(completes("documented")),
        },
    )
    watch.scene = scene
    assert await run(scene) == "completed"
    tasks = scene.state.tasks
    assert tasks.get("t1").state == "failed"
    t2, t3 = tasks.get("t2"), tasks.get("t3")
    assert (t2.state, t2.reason, t2.dependency) == ("cancelled", "its dependency t1 failed", "t1")
    assert (t3.state, t3.reason, t3.dependency) == (
        "cancelled",
        "its dependency t2 was cancelled because t1 failed",
        "t1",
    )
    assert tasks.get("t4").state == "completed"  # not a dependant: untouched
    assert "t2" not in watch.first_call  # never ran
    assert "t3" not in watch.first_call
    # The owner is told by a risk_alert from each cancelled task, which reaches its
    # context exactly once.
    notices = [m for m in scene.mail.values() if m.summary.startswith("task cancelled")]
    assert [(m.kind, m.sender, m.recipient, m.summary) for m in notices] == [
        ("risk_alert", "t2", MAIN, "task cancelled: its dependency t1 failed"),
        (
            "risk_alert",
            "t3",
            MAIN,
            "task cancelled: its dependency t2 was cancelled because t1 failed",
        ),
    ]
    assert all(m.delivered_seq is not None for m in notices)
    text = main_text(scene)
    assert text.count("task cancelled: its dependency t1 failed") == 1
    assert text.count("task cancelled: its dependency t2 was cancelled because t1 failed") == 1


async def test_a_bad_after_entry_is_refused_with_nothing_journaled(
    workspace: Workspace, autojump_clock: trio.testing.MockClock
) -> None:
    release = trio.Event()
    seqs: list[int] = []

    async def held(request: ModelRequest) -> ScriptedReply:
        await release.wait()
        return reply("", c("complete", summary="done"))

    def note_seq(request: ModelRequest) -> ScriptedReply:
        seqs.append(len(scene.events.events))
        return reply(
            "",
            c("delegate", description="x", prompt=".", after=["t9"]),
            c("delegate", description="y", prompt=".", after=["t1", "nope"]),
            c("delegate", description="z", prompt=".", plan_ref="P2", after=["P2"]),
        )

    def release_then_wait(request: ModelRequest) -> ScriptedReply:
        seqs.append(len(scene.events.events))
        release.set()
        return reply("", c("wait_tasks"))

    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply("", c("delegate", description="one", prompt=".", plan_ref="P1")),
                note_seq,
                release_then_wait,
                reply("done"),
            ),
            "t1": held,
        },
    )
    assert await run(scene) == "completed"
    results = tool_results(scene)
    assert results[1] == (
        "after: 't9' is neither one of your tasks nor a plan task; it could be one of your "
        "tasks (t1) or a plan task (P1)"
    )
    assert results[2].startswith("after: 'nope' is neither one of your tasks")
    assert results[3] == "after: 'P2' is this task's own plan_ref; a task cannot wait for itself"
    # Nothing of the refused calls reached the journal but the calls and their results:
    # no task, no context, no id taken.
    assert sorted(scene.state.tasks.tasks) == ["t1"]
    assert sorted(scene.state.agents) == [MAIN, "t1"]
    between = scene.events.events[seqs[0] : seqs[1]]
    assert not [e for e in between if isinstance(e, TaskCreated | AgentStarted)]


async def test_a_dependency_that_already_failed_is_refused(
    workspace: Workspace, autojump_clock: trio.testing.MockClock
) -> None:
    def broken(request: ModelRequest) -> ScriptedReply:
        raise ProviderFatal("gone", provider="scripted")

    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply("", c("delegate", description="one", prompt=".")),
                reply("", c("wait_tasks")),
                reply("", c("delegate", description="two", prompt=".", after=["t1"])),
                reply("done"),
            ),
            "t1": broken,
        },
    )
    assert await run(scene) == "completed"
    assert tool_results(scene)[2] == (
        "delegation refused: its dependency t1 failed, so this task could never start; "
        "revive or retry it first, or leave it out of after"
    )
    assert sorted(scene.state.tasks.tasks) == ["t1"]


async def test_waiting_tasks_take_no_live_slot_and_no_write_scope(
    workspace: Workspace, autojump_clock: trio.testing.MockClock
) -> None:
    release = trio.Event()

    async def held(request: ModelRequest) -> ScriptedReply:
        await release.wait()
        return reply("", c("complete", summary="held"))

    def release_then_wait(request: ModelRequest) -> ScriptedReply:
        assert scene.team is not None
        running = [t for t in ("t1", "t2", "t3", "t4") if scene.team.scheduler.is_running(t)]
        assert running == ["t1", "t4"]
        release.set()
        return reply("", c("wait_tasks"))

    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply(
                    "",
                    c("delegate", description="one", prompt=".", write_scope=["a/"]),
                    c("delegate", description="two", prompt=".", write_scope=["b/"], after=["t1"]),
                    c(
                        "delegate",
                        description="three",
                        prompt=".",
                        write_scope=["b/"],
                        after=["t1"],
                    ),
                    # b/ is the scope of two waiting tasks: they conflict with nothing yet.
                    c("delegate", description="four", prompt=".", write_scope=["b/x"]),
                ),
                release_then_wait,
                reply("done"),
            ),
            "t1": held,
            "t4": held,
            "worker": completes(),
        },
        max_live=2,
    )
    assert await run(scene) == "completed"
    results = tool_results(scene)
    # Two loops run at most: t1 and t4 took both while t2 and t3 waited.
    assert results[3] == "delegated. task_id=t4 type=worker state=pending"
    assert {t.state for t in scene.state.tasks.tasks.values()} == {"completed"}


async def test_a_cancelled_waiting_task_revived_early_waits_again(
    workspace: Workspace, autojump_clock: trio.testing.MockClock
) -> None:
    release = trio.Event()

    async def held(request: ModelRequest) -> ScriptedReply:
        await release.wait()
        return reply("", c("complete", summary="built"))

    def release_then_wait(request: ModelRequest) -> ScriptedReply:
        release.set()
        return reply("", c("wait_tasks"))

    def saw_the_follow_up(request: ModelRequest) -> ScriptedReply:
        assert "also check the docs" in all_text(request)
        return reply("", c("complete", summary="tested"))

    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply(
                    "",
                    c("delegate", description="build", prompt="."),
                    c("delegate", description="test", prompt=".", after=["t1"]),
                ),
                reply("", c("cancel_task", task="t2", reason="not yet")),
                reply("", c("send_message", task="t2", text="also check the docs")),
                release_then_wait,
                reply("done"),
            ),
            "t1": held,
            "t2": saw_the_follow_up,
        },
    )
    assert await run(scene) == "completed"
    results = tool_results(scene)
    assert results[2] == "cancelled: t2"
    assert results[3] == (
        "sent m1 to task t2, which had cancelled: it is revived with its context, and acts "
        "on it once its dependencies have completed (waits for t1)"
    )
    assert [state for _, state, _ in changes(scene, "t2")] == [
        "cancelled",
        "waiting_deps",
        "pending",
        "running",
        "completed",
    ]
    t2 = scene.state.tasks.get("t2")
    assert (t2.state, t2.attempts, t2.instances) == ("completed", 2, ["t2.1"])
    # Cancelled by its owner, not for a dependency: no notice.
    assert not [m for m in scene.mail.values() if m.summary.startswith("task cancelled")]


async def test_a_failure_that_is_retried_does_not_doom_the_dependants(
    workspace: Workspace, autojump_clock: trio.testing.MockClock
) -> None:
    from orchestrator import Definitions
    from orchestrator.team.definitions import WORKER

    watch = Watch()
    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply(
                    "",
                    c("delegate", description="flaky", prompt=".", agent_type="flaky"),
                    c("delegate", description="after it", prompt=".", after=["t1"]),
                ),
                reply("", c("wait_tasks")),
                reply("done"),
            ),
            "t1": watch(
                steps(
                    # Past its one round (a call and no complete): the attempt fails.
                    reply("", c("report_progress", summary="half way")),
                    reply("", c("complete", summary="second attempt")),
                )
            ),
            "t2": watch(completes()),
        },
    )
    watch.scene = scene
    flaky = WORKER.model_copy(update={"name": "flaky", "max_rounds": 1, "retries": 1})
    scene.wire(definitions=Definitions([*Definitions.builtin(), flaky]))
    assert await run(scene) == "completed"
    t1 = scene.state.tasks.get("t1")
    assert (t1.state, t1.attempts) == ("completed", 2)
    # t1 failed once, and was retried: t2 waited on, and started after the completion.
    assert [state for _, state, _ in changes(scene, "t2")] == ["pending", "running", "completed"]
    assert settled_at(scene, "t1") < watch.first_call["t2"]


async def test_a_plan_task_retried_before_its_dependency_is_done_waits(
    workspace: Workspace, autojump_clock: trio.testing.MockClock
) -> None:
    release = trio.Event()

    async def held(request: ModelRequest) -> ScriptedReply:
        await release.wait()
        return reply("", c("complete", summary="built"))

    def release_then_wait(request: ModelRequest) -> ScriptedReply:
        release.set()
        return reply("", c("wait_tasks"))

    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply(
                    "",
                    c("delegate", description="build", prompt=".", plan_ref="P1"),
                    c("delegate", description="test", prompt=".", plan_ref="P2", after=["P1"]),
                ),
                reply("", c("cancel_task", task="t2", reason="wrong prompt")),
                reply("", c("delegate", description="test", prompt="test it", plan_ref="P2")),
                release_then_wait,
                reply("done"),
            ),
            "t1": held,
            "t2": completes("tested"),
        },
    )
    assert await run(scene) == "completed"
    results = tool_results(scene)
    assert results[1] == (
        "delegated; waits for plan task P1 (t1). task_id=t2 type=worker state=waiting_deps"
    )
    assert results[3] == (
        "retrying plan task P2; waits for plan task P1 (t1): task_id=t2 type=worker "
        "state=waiting_deps"
    )
    t2 = scene.state.tasks.get("t2")
    assert (t2.state, t2.after, t2.after_plan, t2.attempts) == ("completed", [], ["P1"], 2)
    assert [state for _, state, _ in changes(scene, "t2")] == [
        "cancelled",
        "waiting_deps",
        "pending",
        "running",
        "completed",
    ]


async def test_a_task_waiting_for_a_plan_task_nobody_delegated_is_the_owners_to_act_on(
    workspace: Workspace, autojump_clock: trio.testing.MockClock
) -> None:
    """Nothing would ever start it: the main agent is reminded (not left asleep), with
    what is missing, like a task waiting for its answer."""
    from orchestrator import SystemMessage, UserMessage
    from orchestrator.team import queries

    notes: list[str] = []

    def told(request: ModelRequest) -> ScriptedReply:
        notes.append(all_text(request))
        return reply("", c("cancel_task", task="t1", reason="no plan task X after all"))

    scene = Scene(workspace, {MAIN: steps(reply("waiting"), told, reply("done"))})
    session = scene.session
    start = (SystemMessage(content="main"), UserMessage(content="the goal"))
    await session.emit(AgentStarted(agent=MAIN, role="main", messages=start))
    for task, fields in (("t1", {"after_plan": ("X",)}), ("t2", {"after": ("t1",)})):
        await session.emit(
            AgentStarted(agent=task, role="worker", messages=(UserMessage(content="."),))
        )
        await session.emit(
            TaskCreated(
                agent=MAIN,
                task=task,
                agent_type="worker",
                description=task,
                state="waiting_deps",
                **fields,
            )
        )
    state = scene.state
    assert queries.undelegated(state, state.tasks.get("t2")) == ["X"]
    assert queries.waits_for(state, MAIN, "t2")
    assert not queries.waits_for(state, "t1", "t2")  # only its owner can act on it
    assert await run(scene) == "completed"
    assert (
        "These tasks wait for plan tasks nobody has delegated:\n- task t1: X\n- task t2: X"
        in (notes[0])
    )
    assert {t.task_id: t.state for t in state.tasks.tasks.values()} == {
        "t1": "cancelled",
        "t2": "cancelled",
    }
    assert state.tasks.get("t2").reason == "its dependency t1 was cancelled"


async def test_plan_tasks_wait_for_their_plan_dependencies_and_for_each_others_scopes(
    workspace: Workspace, autojump_clock: trio.testing.MockClock
) -> None:
    from orchestrator import Plan, PlanDecided, PlanSubmitted, PlanTask, SystemMessage, UserMessage

    release = trio.Event()

    async def held(request: ModelRequest) -> ScriptedReply:
        await release.wait()
        return reply("", c("complete", summary="done"))

    def release_then_wait(request: ModelRequest) -> ScriptedReply:
        release.set()
        return reply("", c("wait_tasks"))

    def delegate(ref: str, **more: Any) -> tuple[str, dict[str, Any]]:
        return c("delegate", description=f"plan task {ref}", prompt=".", plan_ref=ref, **more)

    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply(
                    "",
                    delegate("a"),
                    delegate("b"),  # no write_scope given: the plan's, src/a.py
                    delegate("c", after=[]),  # the model cannot leave a out
                    c("delegate", description="notes", prompt=".", write_scope=["docs/x"]),
                    delegate("d"),  # docs/ overlaps a live task that is not a plan task
                    c("delegate", description="more src", prompt=".", write_scope=["src/b"]),
                ),
                release_then_wait,
                reply("", delegate("d")),  # the notes are done: d may go now
                reply("", c("wait_tasks")),
                reply("built"),
            ),
            "t1": held,
            "t4": held,
            "worker": completes(),
        },
    )
    plan = Plan(
        goal="g",
        tasks=(
            PlanTask(id="a", title="a", write_scope=("src/",), no_acceptance_reason="x"),
            PlanTask(id="b", title="b", write_scope=("src/a.py",), no_acceptance_reason="x"),
            PlanTask(
                id="c", title="c", depends_on=("a",), write_scope=("c/",), no_acceptance_reason="x"
            ),
            PlanTask(id="d", title="d", write_scope=("docs/",), no_acceptance_reason="x"),
        ),
    )
    start = (SystemMessage(content="main"), UserMessage(content="the goal"))
    await scene.session.emit(AgentStarted(agent=MAIN, role="main", messages=start))
    await scene.session.emit(PlanSubmitted(agent="planner", version=1, plan=plan))
    await scene.session.emit(PlanDecided(agent=MAIN, version=1, decision="approved"))
    assert await run(scene) == "completed"
    results = tool_results(scene)
    assert results[:3] == [
        "delegated. task_id=t1 type=worker state=pending",
        "delegated; waits for live task t1 to end (their write scopes overlap). task_id=t2 "
        "type=worker state=waiting_deps",
        "delegated; waits for plan task a (t1). task_id=t3 type=worker state=waiting_deps",
    ]
    assert results[4].startswith("scope_conflict: task t4 (notes) is live and may write docs/x")
    assert results[5].startswith("scope_conflict: task t1 (plan task a) is live")
    tasks = scene.state.tasks
    t2, t3 = tasks.get("t2"), tasks.get("t3")
    assert (t2.write_scope, t2.serialise, t2.after_plan) == (["src/a.py"], True, [])
    assert (t3.write_scope, t3.after, t3.after_plan) == (["c/"], [], ["a"])
    assert {t.task_id: t.state for t in tasks.tasks.values()} == dict.fromkeys(
        ("t1", "t2", "t3", "t4", "t5"), "completed"
    )
    assert tasks.get("t5").plan_ref == "d"
    assert settled_at(scene, "t1") < settled_at(scene, "t2", "pending")
    assert changes(scene, "t2")[0] == (
        MAIN,
        "pending",
        "its dependencies are done and its write scope is clear",
    )


async def test_cancelling_a_subtree_cancels_its_waiting_tasks_too(
    workspace: Workspace, autojump_clock: trio.testing.MockClock
) -> None:
    from orchestrator import Definitions
    from orchestrator.team.definitions import WORKER

    async def cancel_once_both_exist(request: ModelRequest) -> ScriptedReply:
        assert scene.team is not None
        while scene.state.tasks.get("t3") is None:
            await scene.team.changed.wait()
        return reply("", c("cancel_task", task="t1", reason="changed my mind"))

    async def forever(request: ModelRequest) -> ScriptedReply:
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply("", c("delegate", description="lead", prompt=".", agent_type="lead")),
                cancel_once_both_exist,
                reply("stopped"),
            ),
            "t1": steps(
                reply(
                    "",
                    c("delegate", description="first", prompt="."),
                    c("delegate", description="then", prompt=".", after=["t2"]),
                ),
                reply("", c("wait_tasks")),
            ),
            "t2": forever,
        },
    )
    lead = WORKER.model_copy(update={"name": "lead", "may_delegate": True})
    scene.wire(definitions=Definitions([*Definitions.builtin(), lead]))
    assert await run(scene) == "completed"
    assert tool_results(scene)[-1] == "cancelled: t3, t2, t1"
    tasks = scene.state.tasks
    assert [(t.task_id, t.state, t.reason) for t in tasks.tasks.values()] == [
        ("t1", "cancelled", "changed my mind"),
        ("t2", "cancelled", "changed my mind"),
        ("t3", "cancelled", "changed my mind"),
    ]
    # Cancelled with the rest by its owner's owner, not for a dependency: no notice.
    assert not [m for m in scene.mail.values() if m.summary.startswith("task cancelled")]


# --- the scheduler alone: plan tasks wait out a scope conflict -----------------------------


async def test_a_plan_task_waits_out_a_scope_conflict_then_starts() -> None:
    session = MemorySession()
    launched: list[str] = []

    class Launches:
        def start(self, task_id: str, port: TaskPort) -> None:
            launched.append(task_id)

        def cancel(self, task_id: str) -> None:
            pass

    changes = Changes()
    scheduler = Scheduler(session, session, changes, Postbox(session, session, Caps(), changes), 8)
    scheduler.run_with(Launches(), cast(TaskPort, None))  # no loop runs: no port is used

    async def create(task: str, scope: list[str], **fields: Any) -> None:
        await session.emit(
            TaskCreated(
                agent=MAIN,
                task=task,
                agent_type="worker",
                description=task,
                write_scope=tuple(scope),
                **fields,
            )
        )

    await create("t1", ["src/"], serialise=True, plan_ref="build")
    scheduler.enqueue("t1")
    await create("t2", ["src/a.py"], serialise=True, plan_ref="lint", state="waiting_deps")
    await create("t3", ["docs/"], after_plan=("build",), state="waiting_deps")
    await scheduler.check("t2")
    assert launched == ["t1"]  # t1's scope overlaps t2's: t2 waits
    await scheduler.set_state("t1", "running", by="t1")
    await scheduler.set_state("t1", "completed", by="t1")
    # t1 left the live tasks: t3's plan dependency completed, and t2's scope is clear.
    assert launched == ["t1", "t3", "t2"]
    reason = "its dependencies are done and its write scope is clear"
    assert session.state.tasks.get("t2").reason == reason


def test_a_waiting_record_folds_the_same_from_an_old_journal_shape() -> None:
    """A journal written before dependencies (no `after`, `state` fields) folds as before:
    the task is pending, waits for nothing."""
    line = (
        b'{"k":"task_created","a":"main","task":"t1","agent_type":"worker",'
        b'"description":"d","ref":"4.0","at":1}'
    )
    session = MemorySession()
    session.state.apply(1, decode_record(line))
    task = session.state.tasks.get("t1")
    assert (task.state, task.after, task.after_plan, task.serialise) == ("pending", [], [], False)
    assert session.state.tasks.waiting() == []
    changed = b'{"k":"task_changed","a":"main","task":"t1","state":"cancelled","reason":"no"}'
    session.state.apply(2, decode_record(changed))
    assert (task.state, task.dependency) == ("cancelled", "")


# --- what people see of a waiting task -----------------------------------------------------


async def test_the_live_view_and_sessions_show_say_what_a_task_waits_for() -> None:
    import io

    import msgspec

    from orchestrator import TaskRecord, TranscriptSink
    from orchestrator.session.shown import task_rows

    out = io.StringIO()
    sink = TranscriptSink(out, color=False)
    created = TaskCreated(
        agent=MAIN,
        task="t3",
        agent_type="worker",
        description="test",
        after=("t1",),
        after_plan=("build",),
        state="waiting_deps",
    )
    await sink.emit(created)
    await sink.emit(
        TaskChanged(agent=MAIN, task="t3", state="pending", reason="its dependencies are done")
    )
    assert out.getvalue().splitlines() == [
        "⇢ t3 worker: test (from main, writes anywhere, after t1, plan task build)",
        "◆ t3 pending: its dependencies are done",
    ]
    waiting = TaskRecord(
        task_id="t3",
        owner=MAIN,
        agent_type="worker",
        description="test",
        state="waiting_deps",
        after=["t1"],
        after_plan=["build"],
    )
    old = msgspec.to_builtins(
        TaskRecord(task_id="t1", owner=MAIN, agent_type="worker", description="a")
    )
    for field in ("after", "after_plan", "serialise", "dependency"):
        old.pop(field, None)  # a record from before dependencies, in an old snapshot
    assert task_rows([msgspec.to_builtins(waiting), old], now_ms=0) == [
        ["├─ t3", "waiting_deps", "-", "worker: test · waits for t1, build"],
        ["└─ t1", "pending", "-", "worker: a"],
    ]
