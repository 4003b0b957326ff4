"""The main agent, its subagents and the mailbox, end to end with scripted models (the
real team, turn loop, tools and fold, on a session in memory)."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from orchestrator import (
    AgentStarted,
    FanOut,
    ModelRequest,
    ScriptedCall,
    ScriptedReply,
    SessionSettings,
    SystemMessage,
    Team,
    UserMessage,
    open_team,
    run_main,
)
from orchestrator.team.queries import MAIN
from orchestrator.tools import Sandbox, Workspace
from tests.scenes import (
    Scene,
    all_text,
    asks_then_completes,
    c,
    delegates_and_waits,
    last_text,
    question_id,
    reply,
    steps,
)
from tests.team.engines import Engine


async def test_delegated_tasks_complete_and_their_envelopes_reach_the_main_agent(
    workspace: Workspace,
    engine: Engine,
) -> None:
    worker = steps(
        reply("", c("write_file", path="a.txt", content="A")),
        reply("", c("complete", summary="wrote a", files_changed=["a.txt"])),
    )
    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply(
                    "",
                    c(
                        "delegate",
                        description="write a",
                        prompt="write a.txt",
                        write_scope=["a.txt"],
                    ),
                    c(
                        "delegate",
                        description="write b",
                        prompt="write b.txt",
                        write_scope=["b.txt"],
                    ),
                ),
                reply("", c("wait_tasks")),
                reply("all done"),
            ),
            "t1": worker,
            "t2": steps(
                reply("", c("write_file", path="b.txt", content="B")),
                reply("", c("complete", summary="wrote b", files_changed=["b.txt", "c.txt"])),
            ),
        },
        engine=engine,
    )
    await scene.completes()
    tasks = scene.state.tasks.tasks
    assert [(t.task_id, t.state) for t in tasks.values()] == [
        ("t1", "completed"),
        ("t2", "completed"),
    ]
    assert tasks["t1"].completion.summary == "wrote a"
    # The envelope's claims are checked against what the file tools really wrote.
    assert tasks["t2"].completion.unchanged_listed == ("c.txt",)
    assert (workspace.root / "a.txt").read_text() == "A"
    main = scene.state.agents[MAIN]
    waited = main.messages[-2].content  # the wait_tasks result, before the final reply
    assert "wrote a" in waited
    assert "wrote b" in waited
    assert "LISTED BUT NOT CHANGED: c.txt" in waited
    # Delivered once, by the wait_tasks result, and never again.
    assert all(m.delivered for m in scene.mail.values())
    # Delivered mail that needs nothing more has left the live mailbox (it is bounded).
    assert scene.state.mailbox.messages == {}
    assert scene.state.mailbox.posted_count == len(scene.mail) == 2
    assert sum("wrote a" in getattr(m, "content", "") for m in main.messages) == 1
    # On dbos, each task ran as a workflow named by the session and the task.
    ran = [("scene/t1", "SUCCESS"), ("scene/t2", "SUCCESS")]
    assert sorted(engine.workflows()) == (ran if engine.name == "dbos" else [])


async def test_subagents_really_run_in_parallel(workspace: Workspace, engine: Engine) -> None:
    both_asking = trio.Event()
    asking = 0

    async def meet(request: ModelRequest) -> ScriptedReply:
        nonlocal asking
        asking += 1
        if asking == 2:
            both_asking.set()
        # Neither worker gets an answer until both are asking at the same time: run one
        # after the other, they would wait here forever.
        with trio.fail_after(5):
            await both_asking.wait()
        return reply("", c("complete", summary=f"{request.agent} done"))

    delegate = [
        c("delegate", description=f"job {i}", prompt="go", agent_type="explorer") for i in (1, 2)
    ]
    scene = Scene(
        workspace,
        {
            MAIN: steps(reply("", *delegate), reply("", c("wait_tasks")), reply("done")),
            "explorer": steps(meet),
        },
        engine=engine,
    )
    await scene.completes()
    assert {t.state for t in scene.state.tasks.tasks.values()} == {"completed"}


async def test_a_question_parks_the_task_until_the_answer_starts_its_next_turn(
    workspace: Workspace,
    engine: Engine,
) -> None:
    def answer(request: ModelRequest) -> ScriptedReply:
        return reply(
            "",
            c(
                "send_message",
                task="t1",
                kind="answer",
                in_reply_to=question_id(request),
                text="use y",
            ),
        )

    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply("", c("delegate", description="choose", prompt="pick x or y")),
                reply("", c("wait_tasks")),
                answer,
                reply("", c("wait_tasks")),
                reply("finished"),
            ),
            "t1": steps(
                reply("", c("ask_decision", question="x or y?", options=["x", "y"])),
                lambda request: reply(
                    "", c("complete", summary=f"chose: {last_text(request)[-30:]}")
                ),
            ),
        },
        engine=engine,
    )
    await scene.completes()
    kinds = [(m.kind, m.sender, m.recipient) for m in scene.mail.values()]
    assert kinds == [
        ("decision_required", "t1", MAIN),
        ("answer", MAIN, "t1"),
        ("completed", "t1", MAIN),
    ]
    question = scene.mail["m1"]
    assert question.requires_ack
    assert question.answered_by == "m2"
    # The question ended the subagent's turn: no call was held open while it waited.
    t1 = scene.state.agents["t1"]
    turn_ends = [
        e.reason
        for e in scene.events.events
        if getattr(e, "kind", "") == "turn_ended" and e.agent == "t1"
    ]
    assert turn_ends == ["yielded", "yielded"]
    assert "use y" in scene.state.tasks.get("t1").completion.summary
    assert t1.open_calls == {}


async def test_an_unanswered_question_does_not_hang_the_session(
    workspace: Workspace, engine: Engine
) -> None:
    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply("", c("delegate", description="choose", prompt="pick")),
                *[reply("I will not answer")] * 10,
            ),
            "t1": steps(reply("", c("ask_decision", question="x or y?"))),
        },
        engine=engine,
    )
    with trio.fail_after(10):
        outcome = await scene.run()
    assert outcome.reason == "blocked"
    assert "t1 wait for answers never given" in outcome.detail
    reminders = [
        m
        for m in scene.state.agents[MAIN].messages
        if "waiting for you" in getattr(m, "content", "")
    ]
    # Reminded after each reply, until the same reply a third time shows it is stuck.
    assert len(reminders) == 2
    assert "stalled: the same reply 3 times" in outcome.detail


async def test_a_message_to_a_finished_task_revives_it_with_its_context(
    workspace: Workspace,
    engine: Engine,
) -> None:
    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply("", c("delegate", description="write", prompt="write a.txt")),
                reply("", c("wait_tasks")),
                reply("", c("send_message", task="t1", text="and also b.txt")),
                reply("", c("wait_tasks")),
                reply("done"),
            ),
            "t1": steps(
                reply("", c("complete", summary="first")),
                lambda request: reply(
                    "", c("complete", summary=f"second, after {len(request.messages)} messages")
                ),
            ),
        },
        engine=engine,
    )
    await scene.completes()
    task = scene.state.tasks.get("t1")
    assert task.state == "completed"
    assert task.instances == ["t1.1", "t1.2"]
    # Its second turn saw its first: system, task, reply, result, the follow-up.
    assert task.completion.summary == "second, after 5 messages"


async def test_interrupt_cancels_the_model_call_in_flight(
    workspace: Workspace, engine: Engine
) -> None:
    thinking = trio.Event()
    calls = 0

    async def slow(request: ModelRequest) -> ScriptedReply:
        nonlocal calls
        calls += 1
        if calls == 1:
            thinking.set()
            await trio.sleep_forever()  # only an interrupt gets it out of here
        return reply("", c("complete", summary=f"saw: {last_text(request)}"))

    async def interrupt(request: ModelRequest) -> ScriptedReply:
        await thinking.wait()
        return reply("", c("send_message", task="t1", text="STOP, do z", priority="interrupt"))

    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply("", c("delegate", description="long", prompt="think")),
                interrupt,
                reply("", c("wait_tasks")),
                reply("ok"),
            ),
            "t1": slow,
        },
        engine=engine,
    )
    with trio.fail_after(10):
        await scene.completes()
    summary = scene.state.tasks.get("t1").completion.summary
    assert "STOP, do z" in summary
    # The cancelled call left no reply: the context goes from the task to the message.
    roles = [m.role for m in scene.state.agents["t1"].messages]
    assert roles == ["system", "user", "user", "assistant", "tool"]


async def forever(request: ModelRequest) -> ScriptedReply:
    await trio.sleep_forever()
    raise AssertionError


async def test_overlapping_write_scopes_are_refused(workspace: Workspace, engine: Engine) -> None:
    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply(
                    "",
                    c("delegate", description="src", prompt=".", write_scope=["src"]),
                    c("delegate", description="one file", prompt=".", write_scope=["src/a.py"]),
                    c("delegate", description="anywhere", prompt="."),
                    c("delegate", description="docs", prompt=".", write_scope=["docs/*.md"]),
                    c("delegate", description="reader", prompt=".", agent_type="explorer"),
                ),
                reply("", c("cancel_task", task="t1", reason="enough")),
                reply("", c("wait_tasks")),
                reply("done"),
            ),
            "t1": forever,
            "worker": steps(reply("", c("complete", summary="wrote"))),
            "explorer": steps(reply("", c("complete", summary="read"))),
        },
        engine=engine,
    )
    await scene.run()
    results = [m.content for m in scene.state.agents[MAIN].messages if m.role == "tool"]
    assert results[0].startswith("delegated")
    assert "scope_conflict: task t1 (src)" in results[1]
    assert "scope_conflict: task t1" in results[2]
    assert results[3].startswith("delegated")  # docs/*.md does not overlap src
    assert results[4].startswith("delegated")  # readers conflict with nothing


async def test_writes_outside_the_write_scope_are_refused(
    workspace: Workspace, engine: Engine
) -> None:
    scene = Scene(
        workspace,
        {
            MAIN: delegates_and_waits(description="a", prompt=".", write_scope=["a/"]),
            "t1": steps(
                reply(
                    "",
                    c("write_file", path="b.txt", content="no"),
                    c("write_file", path="a/x", content="yes"),
                ),
                reply("", c("complete", summary="ok")),
            ),
        },
        engine=engine,
    )
    await scene.run()
    results = [m for m in scene.state.agents["t1"].messages if m.role == "tool"]
    assert results[0].status == "error"
    assert "outside this task's write scope (a/)" in results[0].content
    assert results[1].status == "ok"
    assert not (workspace.root / "b.txt").exists()


async def test_depth_and_live_limits(workspace: Workspace, engine: Engine) -> None:
    started = trio.Event()
    release = trio.Event()

    async def hold(request: ModelRequest) -> ScriptedReply:
        started.set()
        await release.wait()
        return reply("", c("complete", summary="held"))

    async def wait_then_release(request: ModelRequest) -> ScriptedReply:
        release.set()
        return reply("", c("wait_tasks"))

    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply(
                    "",
                    *[
                        c("delegate", description=f"{i}", prompt=".", agent_type="explorer")
                        for i in range(3)
                    ],
                ),
                wait_then_release,
                reply("done"),
            ),
            "explorer": hold,
        },
        max_live=2,
        engine=engine,
    )
    await scene.completes()
    results = [m.content for m in scene.state.agents[MAIN].messages if m.role == "tool"]
    assert "queued" not in results[0]
    assert "queued" in results[2]
    assert {t.state for t in scene.state.tasks.tasks.values()} == {"completed"}


async def test_a_subagent_that_never_completes_is_nudged_then_failed(
    workspace: Workspace, engine: Engine
) -> None:
    scene = Scene(
        workspace,
        {
            MAIN: delegates_and_waits(then="noted", description="lazy", prompt="."),
            "t1": steps(*[reply(f"I think it is done ({n})") for n in range(4)]),
        },
        engine=engine,
    )
    await scene.completes()
    task = scene.state.tasks.get("t1")
    assert task.state == "failed"
    assert "all 3 automatic continuations used" in task.reason
    assert "call complete" in task.reason
    nudges = [
        m
        for m in scene.state.agents["t1"].messages
        if "[auto-continue]" in getattr(m, "content", "")
    ]
    assert len(nudges) == 3
    assert "(auto-continue 3 of 3)" in nudges[-1].content
    assert ("risk_alert", "t1", MAIN) in scene.kinds()


async def test_a_subagent_repeating_itself_is_reported_blocked(
    workspace: Workspace, engine: Engine
) -> None:
    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply("", c("delegate", description="stuck", prompt=".")),
                reply("", c("wait_tasks")),
                reply("", c("cancel_task", task="t1", reason="it is stuck")),
                reply("cancelled it"),
            ),
            "t1": steps(*[reply("I think it is done")] * 3),
        },
        engine=engine,
    )
    await scene.completes()
    blocked = [m for m in scene.state.mailbox.messages.values() if m.kind == "blocked"]
    assert len(blocked) == 1
    assert "stalled: the same reply 3 times in a row" in blocked[0].summary
    assert blocked[0].data == {"category": "stalled"}
    assert scene.state.tasks.get("t1").state == "cancelled"


async def test_cancelling_a_task_cancels_its_subtree(workspace: Workspace, engine: Engine) -> None:
    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply("", c("delegate", description="lead", prompt=".", agent_type="lead")),
                lambda request: _when_child_exists(scene),
                reply("", c("cancel_task", task="t1", reason="changed my mind")),
                reply("stopped"),
            ),
            "t1": steps(
                reply("", c("delegate", description="child", prompt=".")),
                reply("", c("wait_tasks")),
            ),
            "t2": forever,
        },
        engine=engine,
    )
    from orchestrator import Definitions
    from orchestrator.team.definitions import WORKER

    lead = WORKER.model_copy(update={"name": "lead", "may_delegate": True})
    scene.wire(definitions=Definitions([*Definitions.builtin(), lead]))
    with trio.fail_after(10):
        await scene.completes()
    states = {t.task_id: (t.state, t.depth) for t in scene.state.tasks.tasks.values()}
    assert states == {"t1": ("cancelled", 1), "t2": ("cancelled", 2)}
    result = [m.content for m in scene.state.agents[MAIN].messages if m.role == "tool"][-1]
    assert result == "cancelled: t2, t1"


async def _when_child_exists(scene: Scene) -> ScriptedReply:
    assert scene.team is not None
    while scene.state.tasks.get("t2") is None or scene.state.tasks.get("t2").state != "running":
        await scene.team.changed.wait()
    return reply("", c("list_tasks"))


@pytest.mark.parametrize("depth_limit", [1])
async def test_delegation_past_the_depth_limit_is_refused(
    workspace: Workspace, depth_limit: int, engine: Engine
) -> None:
    from orchestrator import Definitions
    from orchestrator.team.definitions import WORKER

    scene = Scene(
        workspace,
        {
            MAIN: delegates_and_waits(description="lead", prompt=".", agent_type="lead"),
            "t1": steps(
                reply("", c("delegate", description="child", prompt=".")),
                lambda request: reply("", c("complete", summary=last_text(request))),
            ),
        },
        max_depth=depth_limit,
        engine=engine,
    )
    lead = WORKER.model_copy(update={"name": "lead", "may_delegate": True})
    scene.wire(definitions=Definitions([*Definitions.builtin(), lead]))
    await scene.run()
    summary = scene.state.tasks.get("t1").completion.summary
    assert "past the limit of 1" in summary
    assert scene.state.tasks.get("t2") is None


async def test_a_message_sent_while_the_task_completes_is_not_lost(
    workspace: Workspace, engine: Engine
) -> None:
    thinking = trio.Event()

    async def complete_once_written_to(request: ModelRequest) -> ScriptedReply:
        assert scene.team is not None
        thinking.set()
        while not any(m.recipient == "t1" for m in scene.mail.values()):
            await scene.team.changed.wait()
        return reply("", c("complete", summary="first"))

    async def write_while_it_thinks(request: ModelRequest) -> ScriptedReply:
        await thinking.wait()
        return reply("", c("send_message", task="t1", text="and also this"))

    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply("", c("delegate", description="w", prompt=".")),
                write_while_it_thinks,
                reply("", c("wait_tasks")),
                reply("done"),
            ),
            "t1": steps(
                complete_once_written_to,
                lambda request: reply("", c("complete", summary=f"then: {last_text(request)}")),
            ),
        },
        engine=engine,
    )
    with trio.fail_after(10):
        await scene.completes()
    task = scene.state.tasks.get("t1")
    assert task.state == "completed"
    assert "and also this" in task.completion.summary
    assert task.instances == ["t1.1", "t1.2"]
    assert all(m.delivered for m in scene.mail.values())


async def test_a_subtask_cannot_widen_its_parents_write_scope(
    workspace: Workspace, engine: Engine
) -> None:
    from orchestrator import Definitions
    from orchestrator.team.definitions import WORKER

    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply(
                    "",
                    c(
                        "delegate",
                        description="lead",
                        prompt=".",
                        agent_type="lead",
                        write_scope=["src"],
                    ),
                ),
                reply("", c("wait_tasks")),
                reply("done"),
            ),
            "t1": steps(
                reply("", c("delegate", description="child", prompt=".", write_scope=["docs"])),
                lambda request: reply("", c("complete", summary=last_text(request))),
            ),
        },
        engine=engine,
    )
    lead = WORKER.model_copy(update={"name": "lead", "may_delegate": True})
    scene.wire(definitions=Definitions([*Definitions.builtin(), lead]))
    await scene.run()
    summary = scene.state.tasks.get("t1").completion.summary
    assert "is not inside your own write scope (src)" in summary
    assert scene.state.tasks.get("t2") is None


async def test_a_stalled_task_is_reported_to_its_owner(
    workspace: Workspace, autojump_clock: trio.testing.MockClock
) -> None:
    def cancel_the_stalled(request: ModelRequest) -> ScriptedReply:
        assert "stalled: no progress for" in all_text(request)
        return reply("", c("cancel_task", task="t1", reason="it hangs"))

    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply("", c("delegate", description="hangs", prompt=".")),
                reply("waiting for it"),
                cancel_the_stalled,
                reply("gave up on t1"),
            ),
            "t1": forever,  # a model call that never answers
        },
        stall_after=600,
    )
    await scene.completes()
    [alert] = [m for m in scene.mail.values() if m.kind == "risk_alert"]
    assert alert.sender == "t1"
    assert 600 <= alert.data["stalled_seconds"] <= 800
    assert scene.state.tasks.get("t1").state == "cancelled"


async def test_the_user_can_tell_the_main_agent_something_while_it_runs(
    workspace: Workspace,
    engine: Engine,
) -> None:
    async def tell_while_waiting(request: ModelRequest) -> ScriptedReply:
        assert scene.team is not None
        await scene.team.say("please also write NOTES.md")
        return reply("", c("wait_tasks"))

    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply("", c("delegate", description="w", prompt=".")),
                tell_while_waiting,
                lambda request: reply(f"heard: {last_text(request)[-60:]}"),
            ),
            "t1": steps(reply("", c("complete", summary="done"))),
        },
        engine=engine,
    )
    await scene.completes()
    said = [m for m in scene.mail.values() if m.sender == "user"]
    assert [(m.kind, m.recipient) for m in said] == [("instruction", MAIN)]
    assert said[0].delivered
    final = scene.state.agents[MAIN].messages[-1]
    assert "NOTES.md" in final.text


async def test_blocked_risk_and_direction_change_reach_the_owner(
    workspace: Workspace, engine: Engine
) -> None:
    def answer_the_block(request: ModelRequest) -> ScriptedReply:
        assert "<blocked id=" in all_text(request)
        return reply("", c("send_message", task="t1", kind="answer", text="token is in .env"))

    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply("", c("delegate", description="deploy", prompt=".")),
                reply("", c("wait_tasks")),
                answer_the_block,
                reply("", c("wait_tasks")),
                reply("done"),
            ),
            "t1": steps(
                reply(
                    "",
                    c("raise_risk", risk="the staging db is shared"),
                    c("request_direction_change", proposal="deploy to a branch", reason="safer"),
                ),
                reply("", c("report_blocked", category="credential", reason="no deploy token")),
                lambda request: reply(
                    "", c("complete", summary=f"got: {last_text(request)[-40:]}")
                ),
            ),
        },
        engine=engine,
    )
    await scene.completes()
    kinds = [(m.kind, m.priority, m.requires_ack) for m in scene.mail.values()]
    assert kinds == [
        ("risk_alert", "urgent", False),
        ("direction_change_request", "urgent", True),
        ("blocked", "urgent", True),
        ("answer", "urgent", False),
        ("completed", "urgent", False),
    ]
    blocked = scene.mail["m3"]
    assert blocked.data == {"category": "credential"}
    # An answer without in_reply_to answers what parked the task, not its older proposal.
    assert blocked.answered_by == "m4"
    assert scene.mail["m2"].answered_by == ""
    assert "token is in .env" in scene.state.tasks.get("t1").completion.summary
    results = [m.content for m in scene.state.agents["t1"].messages if m.role == "tool"]
    assert results[0].startswith("risk reported to your owner; carry on")
    assert results[2].startswith("your owner is told you are blocked; your turn ends")


async def test_a_types_allow_rules_apply_to_its_agents_only(
    workspace: Workspace, engine: Engine
) -> None:
    from orchestrator import Definitions, deny_all
    from orchestrator.team.definitions import WORKER

    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply("", c("delegate", description="w", prompt=".", agent_type="builder")),
                reply("", c("wait_tasks")),
                reply("", c("write_file", path="main.txt", content="m")),
                reply("done"),
            ),
            "t1": steps(
                reply("", c("write_file", path="t1.txt", content="t")),
                reply("", c("complete", summary="ok")),
            ),
        },
        engine=engine,
    )
    builder = WORKER.model_copy(update={"name": "builder", "allow": ("write_file=allow",)})
    scene.wire(definitions=Definitions([*Definitions.builtin(), builder]))
    scene.wire(approve_for=lambda agent, who: deny_all)  # every "ask" is refused
    await scene.run()
    assert (workspace.root / "t1.txt").exists()
    assert not (workspace.root / "main.txt").exists()


@pytest.mark.parametrize("sandboxed", [False, True], ids=["unsandboxed", "sandboxed"])
async def test_shell_writes_are_seen_checked_against_the_scope_and_the_envelope(
    workspace: Workspace, sandboxed: bool, engine: Engine
) -> None:
    """What a command changed is seen after it and checked against the task's scope and
    envelope; in the sandbox, a change outside the scope's directories does not happen."""
    (workspace.root / "docs").mkdir()
    (workspace.root / "docs" / "old.md").write_text("old")
    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply(
                    "",
                    c("delegate", description="a", prompt=".", write_scope=["src/"]),
                    c("delegate", description="b", prompt=".", write_scope=["other/"]),
                ),
                reply("", c("wait_tasks")),
                reply("done"),
            ),
            "t1": steps(
                reply(
                    "", c("shell", command="mkdir -p src && echo x > src/a.py && rm docs/old.md")
                ),
                reply("", c("complete", summary="made src/a.py", files_changed=["src/a.py"])),
                # (unsandboxed: refused until its risks name the change outside its scope)
                reply(
                    "",
                    c(
                        "complete",
                        summary="made src/a.py",
                        files_changed=["src/a.py"],
                        risks=["removed docs/old.md, outside my scope: restore it from git"],
                    ),
                ),
            ),
            "t2": steps(reply("", c("complete", summary="nothing"))),
        },
        sandbox=Sandbox(level="workspace" if sandboxed else "off"),
        engine=engine,
    )
    await scene.run()
    shell = next(m for m in scene.state.agents["t1"].messages if m.role == "tool")
    alerts = [m.summary for m in scene.mail.values() if m.kind == "risk_alert"]
    envelope = scene.state.tasks.get("t1").completion
    assert envelope.unchanged_listed == ()
    results = [m for m in scene.state.agents["t1"].messages if m.role == "tool"]
    if sandboxed:
        assert (workspace.root / "docs" / "old.md").exists()
        assert shell.content.endswith("[files changed by this command: src/a.py]")
        assert alerts == []
        assert envelope.unlisted_changes == ()
        assert envelope.outside_scope == ()
        assert len(results) == 2  # the shell, then complete, accepted at once
        return
    assert shell.content.endswith("[files changed by this command: docs/old.md, src/a.py]")
    assert alerts == ["its shell command changed files outside its write scope: docs/old.md"]
    refused = results[1]
    assert refused.status == "error"
    assert "complete refused: your commands changed files outside your write scope: " in (
        refused.content
    )
    assert envelope.unlisted_changes == ("docs/old.md",)
    assert envelope.outside_scope == ("docs/old.md",)


async def test_a_file_changed_by_two_live_tasks_is_reported(
    workspace: Workspace, engine: Engine
) -> None:
    first_wrote, second_wrote = trio.Event(), trio.Event()

    async def first(request: ModelRequest) -> ScriptedReply:
        if request.step == 0:
            return reply("", c("shell", command="echo one >> shared.txt"))
        first_wrote.set()
        await second_wrote.wait()  # still live when the other task writes
        return reply("", c("complete", summary="wrote", risks=["wrote shared.txt"]))

    async def second(request: ModelRequest) -> ScriptedReply:
        if request.step == 0:
            await first_wrote.wait()  # its command starts after the first one's ended
            return reply("", c("shell", command="echo two >> shared.txt"))
        second_wrote.set()
        return reply("", c("complete", summary="wrote", risks=["wrote shared.txt"]))

    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply(
                    "",
                    c("delegate", description="a", prompt=".", write_scope=["a/"]),
                    c("delegate", description="b", prompt=".", write_scope=["b/"]),
                ),
                reply("", c("wait_tasks")),
                reply("done"),
            ),
            "t1": first,
            "t2": second,
        },
        # Unsandboxed: the check after each command is what sees a shared file then.
        sandbox=Sandbox(level="off"),
        engine=engine,
    )
    with trio.fail_after(10):
        await scene.run()
    alerts = {m.sender: m.summary for m in scene.mail.values() if m.kind == "risk_alert"}
    assert alerts["t1"] == "its shell command changed files outside its write scope: shared.txt"
    assert alerts["t2"] == (
        "its shell command changed files outside its write scope: shared.txt; "
        "shared.txt was also changed by live task t1"
    )


async def test_interrupt_stops_a_tool_call_that_can_stop_safely(
    workspace: Workspace, engine: Engine
) -> None:
    from pydantic import BaseModel

    from orchestrator.tools import Tool, ToolContext, ToolOutput

    started = trio.Event()

    class NoArgs(BaseModel):
        pass

    class Watch(Tool[NoArgs]):
        name = "watch_logs"
        description = "follow the logs"
        args_model = NoArgs
        read_only = True
        interruptible = True

        async def run(self, args: NoArgs, ctx: ToolContext) -> ToolOutput:
            started.set()
            await trio.sleep_forever()
            raise AssertionError

    async def interrupt(request: ModelRequest) -> ScriptedReply:
        await started.wait()
        return reply("", c("send_message", task="t1", text="stop watching", priority="interrupt"))

    from orchestrator import Definitions

    watcher = (
        Definitions.builtin()
        .get("explorer")
        .model_copy(update={"name": "watcher", "tools": ("watch_logs",)})
    )
    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply("", c("delegate", description="watch", prompt=".", agent_type="watcher")),
                interrupt,
                reply("", c("wait_tasks")),
                reply("ok"),
            ),
            "t1": steps(
                reply("", c("watch_logs")),
                lambda request: reply("", c("complete", summary=f"saw: {last_text(request)}")),
            ),
        },
        engine=engine,
    )
    scene.wiring.tools.add(Watch())
    scene.wire(definitions=Definitions([*Definitions.builtin(), watcher]))
    with trio.fail_after(10):
        await scene.completes()
    [result] = [m for m in scene.state.agents["t1"].messages if m.role == "tool"][:1]
    assert result.status == "cancelled"
    assert "interrupting message" in result.content
    assert "stop watching" in scene.state.tasks.get("t1").completion.summary


async def test_a_notify_answer_still_wakes_a_parked_task(
    workspace: Workspace, engine: Engine
) -> None:
    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply("", c("delegate", description="choose", prompt=".")),
                reply("", c("wait_tasks")),
                reply("", c("send_message", task="t1", kind="answer", text="x", priority="notify")),
                reply("", c("wait_tasks")),
                reply("done"),
            ),
            "t1": asks_then_completes("went with x"),
        },
        engine=engine,
    )
    with trio.fail_after(10):
        await scene.completes()
    assert scene.state.tasks.get("t1").state == "completed"


def test_the_config_team_table_sets_the_limits() -> None:
    import argparse

    from orchestrator.cli.setup import session_settings
    from orchestrator.config import parse_config
    from orchestrator.errors import ConfigError
    from orchestrator.team.settings import limits_of

    config = parse_config("[team]\nmax_live = 3\nstall_after = 60\ndelivery_chars = 5000\n")
    flags = argparse.Namespace(max_rounds=None, allow=[])
    limits = limits_of(session_settings(config, flags))
    assert (limits.max_live, limits.stall_after, limits.caps.delivery_chars) == (3, 60, 5000)
    assert (limits.max_depth, limits.caps.message_chars) == (SessionSettings().max_depth, 4000)
    with pytest.raises(ConfigError, match=r"team\.max_live: Input should be greater than"):
        parse_config("[team]\nmax_live = 0\n")
    with pytest.raises(ConfigError, match=r"team\.max_lives"):
        parse_config("[team]\nmax_lives = 2\n")


async def test_a_type_with_retries_gets_another_attempt_after_failing(
    workspace: Workspace,
    engine: Engine,
) -> None:
    from orchestrator import Definitions
    from orchestrator.team.definitions import WORKER

    scene = Scene(
        workspace,
        {
            MAIN: delegates_and_waits(description="flaky", prompt=".", agent_type="flaky"),
            "t1": steps(
                reply("", c("list_files")),  # past its one round: the attempt fails
                lambda request: reply("", c("complete", summary=last_text(request)[:60])),
            ),
        },
        engine=engine,
    )
    flaky = WORKER.model_copy(update={"name": "flaky", "max_rounds": 1, "retries": 1})
    scene.wire(definitions=Definitions([*Definitions.builtin(), flaky]))
    await scene.completes()
    task = scene.state.tasks.get("t1")
    assert (task.state, task.attempts, task.instances) == ("completed", 2, ["t1.1", "t1.2"])
    assert task.completion.summary.startswith("Your previous attempt failed: reached its limit")
    [alert] = [m.summary for m in scene.mail.values() if m.kind == "risk_alert"]
    assert alert.endswith("; retrying (attempt 2 of 2)")


async def test_a_task_past_its_deadline_fails(
    workspace: Workspace, autojump_clock: trio.testing.MockClock
) -> None:
    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply("", c("delegate", description="slow", prompt=".", deadline_seconds=120)),
                reply("", c("wait_tasks", timeout=600)),
                reply("too slow"),
            ),
            "t1": forever,
        },
    )
    await scene.completes()
    task = scene.state.tasks.get("t1")
    assert (task.state, task.reason) == ("failed", "its deadline passed before it finished")
    assert task.deadline > task.created


@pytest.mark.parametrize(
    ("budget", "reason"),
    [
        ({"round_budget": 2}, "it used its budget of 2 model calls"),
        ({"token_budget": 50}, "of its budget of 50 tokens"),
    ],
)
async def test_a_task_that_spends_its_budget_fails(
    workspace: Workspace, budget: dict[str, int], reason: str, engine: Engine
) -> None:
    from orchestrator import Usage

    def busy(request: ModelRequest) -> ScriptedReply:
        return ScriptedReply(
            tool_calls=(ScriptedCall(name="list_files"),), usage=Usage(input_tokens=30)
        )

    scene = Scene(
        workspace,
        {
            MAIN: delegates_and_waits(then="stopped", description="busy", prompt=".", **budget),
            "t1": busy,
        },
        engine=engine,
    )
    with trio.fail_after(10):
        await scene.completes()
    task = scene.state.tasks.get("t1")
    assert task.state == "failed"
    assert reason in task.reason
    assert scene.state.agents["t1"].steps == 2


@pytest.mark.parametrize("answer", [True, False])
async def test_a_task_with_resume_policy_ask_is_revived_only_if_the_person_says_so(
    workspace: Workspace, autojump_clock: trio.testing.MockClock, answer: bool
) -> None:
    from orchestrator import Definitions
    from orchestrator.team.definitions import WORKER

    first_run = True

    async def work(request: ModelRequest) -> ScriptedReply:
        if first_run:
            await trio.sleep_forever()  # the session stops while it works
        return reply("", c("complete", summary="finished after the restart"))

    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply("", c("delegate", description="careful", prompt=".", agent_type="careful")),
                reply("", c("wait_tasks")),
                lambda request: reply("", c("wait_tasks")),
                reply("done"),
            ),
            "t1": work,
        },
    )
    careful = WORKER.model_copy(update={"name": "careful", "resume": "ask"})
    scene.wire(definitions=Definitions([*Definitions.builtin(), careful]))
    with trio.move_on_after(60):
        await scene.run()
    first_run = False
    questions: list[str] = []

    async def ask(question: str) -> bool:
        questions.append(question)
        return answer

    scene.wire(ask_resume=ask)
    await scene.completes()
    assert questions == [
        "task t1 (careful: careful) was running when the session stopped; revive it?"
    ]
    task = scene.state.tasks.get("t1")
    if answer:
        assert task.state == "completed"
        assert task.instances == ["t1.1", "t1.2"]
    else:
        assert task.state == "cancelled"
        assert "not to be revived" in task.reason


async def test_a_task_budget_covers_its_subtree(workspace: Workspace, engine: Engine) -> None:
    """t1 (budget 4 model calls) delegates t2, whose calls count against t1's budget:
    t2 fails once the subtree has used 4, though t2 has no budget of its own."""
    from orchestrator import Definitions
    from orchestrator.team.definitions import WORKER

    def busy(request: ModelRequest) -> ScriptedReply:
        return reply("", c("list_files", pattern=f"{request.step}*"))

    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply(
                    "",
                    c(
                        "delegate",
                        description="lead",
                        prompt=".",
                        agent_type="lead",
                        round_budget=4,
                    ),
                ),
                reply("", c("wait_tasks", tasks=["t1"])),
                reply("stopped"),
            ),
            "t1": steps(
                reply("", c("delegate", description="child", prompt=".")),
                reply("", c("wait_tasks", tasks=["t2"])),
                reply("never asked: its budget is spent"),
            ),
            "t2": busy,
        },
        engine=engine,
    )
    lead = WORKER.model_copy(update={"name": "lead", "may_delegate": True})
    scene.wire(definitions=Definitions([*Definitions.builtin(), lead]))
    with trio.fail_after(10):
        await scene.completes()
    child = scene.state.tasks.get("t2")
    assert child.state == "failed"
    assert "it used the budget of task t1, above it, of 4 model calls" in child.reason
    assert scene.state.agents["t1"].steps + scene.state.agents["t2"].steps == 4


async def test_a_type_with_verify_completes_only_once_its_checks_pass(
    workspace: Workspace,
    engine: Engine,
) -> None:
    import sys

    from orchestrator import Definitions
    from orchestrator.team.definitions import WORKER

    check = f"{sys.executable} -c \"import pathlib; assert pathlib.Path('ok.txt').exists()\""
    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply("", c("delegate", description="checked", prompt=".", agent_type="checked")),
                reply("", c("wait_tasks", tasks=["t1"])),
                reply("fine"),
            ),
            "t1": steps(
                reply("", c("complete", summary="done, I think")),  # refused: no ok.txt
                reply("", c("write_file", path="ok.txt", content="ok")),
                reply("", c("complete", summary="done, checked")),
            ),
        },
        engine=engine,
    )
    checked = WORKER.model_copy(update={"name": "checked", "verify": (check,)})
    scene.wire(definitions=Definitions([*Definitions.builtin(), checked]))
    with trio.fail_after(20):
        await scene.completes()
    task = scene.state.tasks.get("t1")
    assert task.state == "completed"
    assert task.completion.summary == "done, checked"
    results = [m for m in scene.state.agents["t1"].messages if getattr(m, "name", "") == "complete"]
    assert results[0].status == "error"
    assert "complete refused: your type's verification did not pass" in results[0].content
    assert "AssertionError" in results[0].content
    progress = scene.state.progress["t1"]
    assert (progress.verify_failures, progress.continues) == (1, 0)  # not a continuation
    assert progress.verified_seq > 0


async def test_a_runner_gets_a_task_id_and_a_port_not_the_team(workspace: Workspace) -> None:
    # Its own runner: on no engine.
    from orchestrator import InProcessRunner, TaskPort

    started: list[tuple[str, TaskPort]] = []

    class Recording(InProcessRunner):
        def start(self, task_id: str, port: TaskPort) -> None:
            started.append((task_id, port))
            super().start(task_id, port)

    scene = Scene(
        workspace,
        {
            MAIN: delegates_and_waits(then="all done", description="look", prompt="look around"),
            "t1": steps(reply("", c("complete", summary="looked"))),
        },
    )
    sink = FanOut([scene.session, scene.events])
    messages = (SystemMessage(content="main"), UserMessage(content="the goal"))
    await sink.emit(AgentStarted(agent=MAIN, role="main", messages=messages))
    async with open_team(scene.session, sink, scene.wiring, scene.seat, runner=Recording) as team:
        outcome = await run_main(team)
    assert outcome.reason == "completed"
    [(task_id, port)] = started
    assert task_id == "t1"
    assert port is team.port
    assert not isinstance(port, Team)
    # The port is the team's parts themselves, nothing forwarded.
    parts = (port.mail, port.tasks, port.turns, port.oversight)
    assert parts == (team.postbox, team.scheduler, team.turns, team.oversight)
    assert port.state.tasks.tasks["t1"].state == "completed"
