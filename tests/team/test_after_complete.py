"""Nothing runs after a call that ends the turn (issue 19, item 5): `complete` waits for
the calls before it in its reply, and the calls after it are settled `cancelled`, naming
it, without running; a settled task reports nothing more."""

from __future__ import annotations

from orchestrator.team.queries import MAIN
from orchestrator.tools import Workspace
from tests.scenes import Scene, c, delegates_and_waits, reply, steps
from tests.team.engines import Engine


def results(scene: Scene, agent: str) -> list[tuple[str, str, str]]:
    return [
        (m.name, m.status, m.content)
        for m in scene.state.agents[agent].messages
        if m.role == "tool"
    ]


async def test_calls_after_complete_never_run(workspace: Workspace, engine: Engine) -> None:
    # One reply: a write, `complete`, then two calls more.
    task = reply(
        "",
        c("write_file", path="a/before", content="1"),
        c("complete", summary="done", files_changed=["a/before"]),
        c("write_file", path="a/after", content="2"),
        c("ask_decision", question="may I?"),
    )
    main = delegates_and_waits(description="a", prompt=".", write_scope=["a/"])
    scene = Scene(workspace, {MAIN: main, "t1": steps(task)}, engine=engine)
    await scene.completes()
    task = scene.state.tasks.tasks["t1"]
    assert task.state == "completed"
    # The call before `complete` ran first, and its write is in the envelope.
    assert (workspace.root / "a/before").read_text() == "1"
    assert task.completion.unlisted_changes == ()
    assert not (workspace.root / "a/after").exists()
    got = results(scene, "t1")
    assert [(name, status) for name, status, _ in got] == [
        ("write_file", "ok"),
        ("complete", "ok"),
        ("write_file", "cancelled"),
        ("ask_decision", "cancelled"),
    ]
    assert all("not run: complete" in content for _, _, content in got[2:])
    # No question reached the owner: only the completion did.
    assert [kind for kind, _, _ in scene.kinds()] == ["completed"]


async def test_calls_after_a_question_wait_for_the_answer(
    workspace: Workspace, engine: Engine
) -> None:
    # A question, then calls the answer must come before.
    asker = steps(
        reply(
            "",
            c("ask_decision", question="may I write?"),
            c("write_file", path="a/early", content="x"),
            c("complete", summary="early"),
        ),
        reply("", c("complete", summary="asked, then done")),
    )
    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply("", c("delegate", description="a", prompt=".", write_scope=["a/"])),
                reply("", c("wait_tasks")),
                lambda request: reply(
                    "",
                    c(
                        "send_message",
                        task="t1",
                        kind="answer",
                        in_reply_to=_question(scene),
                        text="yes",
                    ),
                ),
                reply("", c("wait_tasks")),
                reply("done"),
            ),
            "t1": asker,
        },
        engine=engine,
    )
    await scene.run()
    task = scene.state.tasks.tasks["t1"]
    assert task.state == "completed"
    assert task.completion.summary == "asked, then done"
    assert not (workspace.root / "a/early").exists()
    got = results(scene, "t1")
    assert [(name, status) for name, status, _ in got[:3]] == [
        ("ask_decision", "ok"),
        ("write_file", "cancelled"),
        ("complete", "cancelled"),
    ]
    assert "not run: ask_decision" in got[1][2]


def _question(scene: Scene) -> str:
    asked = [m for m in scene.mail.values() if m.kind == "decision_required"]
    assert asked
    return asked[-1].message_id
