"""Answers go where the question was asked: a reply to another task's question, or to one
already answered, is refused naming the right task; the fold counts nothing else as an
answer; and a task parked with nobody to answer it ends the session `blocked`, never a
hang (`[team] park_limit`, on trio's clock)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import trio
import trio.testing

from orchestrator import (
    Definitions,
    MessagePosted,
    ModelRequest,
    RunResult,
    ScriptedModel,
    ScriptedReply,
    SessionState,
    drive,
    open_session,
)
from orchestrator.state import USER
from orchestrator.team.definitions import WORKER
from orchestrator.team.queries import MAIN
from orchestrator.tools import Workspace
from tests.scenes import (
    Scene,
    all_text,
    asks_then_completes,
    c,
    reply,
    run_settings,
    scripted_session,
    steps,
)
from tests.team.engines import Engine

EXPLORE = {"agent_type": "explorer", "prompt": "find out"}


def asked_by(request: ModelRequest, task: str) -> str:
    """The id of the question `task` asked, as the main agent was shown it."""
    found = re.findall(rf"<decision_required id=(m\d+) from=task {task}", all_text(request))
    assert found, all_text(request)
    return found[-1]


def result_of(request: ModelRequest, call: int = -1) -> str:
    """The text of a tool result the model was shown (the last, by default)."""
    results = [m for m in request.messages if getattr(m, "status", None) is not None]
    return str(results[call].content)


@pytest.mark.parametrize("kind", ["answer", "instruction"])
async def test_a_reply_to_another_tasks_question_is_refused_naming_the_asker(
    workspace: Workspace, kind: str, engine: Engine
) -> None:
    shown: list[str] = []

    def misdirected(request: ModelRequest) -> ScriptedReply:
        wrong = asked_by(request, "t1")
        return reply(
            "",
            c("send_message", task="t2", kind=kind, in_reply_to=wrong, text="use x"),
        )

    def answer_both(request: ModelRequest) -> ScriptedReply:
        shown.append(result_of(request))
        return reply(
            "",
            c(
                "send_message",
                task="t1",
                kind="answer",
                in_reply_to=asked_by(request, "t1"),
                text="x",
            ),
            c(
                "send_message",
                task="t2",
                kind="answer",
                in_reply_to=asked_by(request, "t2"),
                text="y",
            ),
        )

    asker = asks_then_completes()
    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply(
                    "",
                    c("delegate", description="one", **EXPLORE),
                    c("delegate", description="two", **EXPLORE),
                ),
                reply("", c("wait_tasks")),
                misdirected,
                answer_both,
                reply("", c("wait_tasks")),
                reply("done"),
            ),
            "t1": asker,
            "t2": asker,
        },
        engine=engine,
    )
    with trio.fail_after(10):
        await scene.completes()
    question = next(m for m in scene.mail.values() if m.sender == "t1")
    assert shown == [f"question {question.message_id} was asked by t1, not t2; answer it to t1"]
    # Nothing was posted by the refused call, and each question got its own answer.
    replies = [(m.recipient, m.in_reply_to) for m in scene.mail.values() if m.sender == MAIN]
    other = next(m for m in scene.mail.values() if m.sender == "t2")
    assert replies == [("t1", question.message_id), ("t2", other.message_id)]
    assert {t.state for t in scene.state.tasks.tasks.values()} == {"completed"}


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("answered", "has no open question: it was answered already"),
        ("unknown", "no message 'm99' in this session to reply to"),
    ],
)
async def test_an_answer_to_a_closed_or_unknown_question_is_refused(
    workspace: Workspace, target: str, expected: str, engine: Engine
) -> None:
    shown: list[str] = []
    question = ""

    def answer(request: ModelRequest) -> ScriptedReply:
        nonlocal question
        question = asked_by(request, "t1")
        return reply(
            "", c("send_message", task="t1", kind="answer", in_reply_to=question, text="x")
        )

    def again(request: ModelRequest) -> ScriptedReply:
        ref = question if target == "answered" else "m99"
        return reply("", c("send_message", task="t1", kind="answer", in_reply_to=ref, text="z"))

    def done(request: ModelRequest) -> ScriptedReply:
        shown.append(result_of(request))
        return reply("", c("wait_tasks"))

    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply("", c("delegate", description="one", **EXPLORE)),
                reply("", c("wait_tasks")),
                answer,
                again,
                done,
                reply("done"),
            ),
            "t1": asks_then_completes(),
        },
        engine=engine,
    )
    with trio.fail_after(10):
        await scene.completes()
    assert len(shown) == 1
    assert expected in shown[0], shown[0]
    # One answer only: the refused call posted nothing.
    answers = [m for m in scene.mail.values() if m.kind == "answer"]
    assert [(a.recipient, a.in_reply_to) for a in answers] == [("t1", question)]


@pytest.mark.parametrize(
    ("sender", "to", "answered"),
    [
        (MAIN, "t2", False),  # sent to a task that did not ask
        ("t3", "t1", False),  # sent by an agent it was not asked of
        (MAIN, "t1", True),
        (USER, "t1", True),  # the person may answer any question
    ],
)
def test_the_fold_counts_only_a_reply_to_the_asker_as_its_answer(
    sender: str, to: str, answered: bool
) -> None:
    state = SessionState()
    question = MessagePosted(
        agent="t1",
        id="m1",
        to=MAIN,
        task="t1",
        mail="decision_required",
        summary="?",
        requires_ack=True,
    )
    state.apply(1, question)
    state.apply(
        2,
        MessagePosted(
            agent=sender, id="m2", to=to, task=to, mail="answer", summary="x", in_reply_to="m1"
        ),
    )
    open_ids = [m.message_id for m in state.mailbox.unanswered(MAIN)]
    assert open_ids == ([] if answered else ["m1"])


LEAD = WORKER.model_copy(update={"name": "lead", "may_delegate": True})


def parked_under_an_idle_owner(workspace: Workspace, park_limit: float) -> Scene:
    """t1 delegates t2 and sleeps waiting for it; t2 asks t1, which wakes, does not
    answer, and sleeps again: nobody can answer t2."""
    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply("", c("delegate", description="lead", prompt="p", agent_type="lead")),
                reply("delegated; I wait"),
            ),
            "t1": steps(
                reply("", c("delegate", description="sub", **EXPLORE)),
                reply("my task waits for t2"),
                reply("still waiting for t2"),
                reply("still waiting"),
            ),
            "t2": steps(reply("", c("ask_decision", question="which one?"))),
        },
        park_limit=park_limit,
    )
    scene.wire(definitions=Definitions([*Definitions.builtin(), LEAD]))
    return scene


@pytest.mark.parametrize("park_limit", [60.0, 600.0])
async def test_a_task_parked_with_nobody_to_answer_blocks_after_park_limit(
    workspace: Workspace, autojump_clock: trio.testing.MockClock, park_limit: float
) -> None:
    scene = parked_under_an_idle_owner(workspace, park_limit)
    start = trio.current_time()
    with trio.fail_after(park_limit + 3600):  # (a hang fails, on the mock clock)
        outcome = await scene.run()
    waited = trio.current_time() - start
    assert outcome.reason == "blocked", outcome
    assert park_limit <= waited < park_limit + 60
    assert f"parked for {park_limit:g} s with nobody to answer" in outcome.detail
    assert "task t2 asks (m1, of task t1, which waits for its own tasks): which one?" in (
        outcome.detail
    )
    assert [(q.sender, q.recipient) for q in outcome.questions] == [("t2", "t1")]


async def test_park_limit_zero_means_no_limit(
    workspace: Workspace, autojump_clock: trio.testing.MockClock
) -> None:
    scene = parked_under_an_idle_owner(workspace, 0)
    with trio.move_on_after(24 * 3600) as waited:
        await scene.run()
    assert waited.cancelled_caught  # still waiting a day later: nothing ended it
    assert scene.state.tasks.get("t2").state == "waiting_decision"


async def test_a_library_host_reads_the_unanswered_question_and_answers_it(
    tmp_path: Path,
    engine: Engine,
) -> None:
    """The main agent never answers t1's question: `RunResult` says which task asks
    what, and the next `drive` with a message takes the answer to t1."""
    brains = {
        MAIN: steps(
            reply("", c("delegate", description="pick", **EXPLORE)),
            reply("", c("wait_tasks")),
            *[reply(f"I will not answer ({n})") for n in range(8)],
        ),
        "t1": steps(
            reply("", c("ask_decision", question="x or y?")),
            lambda request: reply("", c("complete", summary=all_text(request)[-40:])),
        ),
    }
    model = ScriptedModel(lambda request: brains[request.agent](request))
    root, session_id, _ = scripted_session(tmp_path, {"agents": {"main": []}})

    async def run(message: str = "") -> RunResult:
        async with open_session(root, session_id, warn=lambda _: None) as live:
            settings = run_settings(
                model,
                message=message,
                runner=engine.runner,
            )
            return await drive(live, settings)

    with trio.fail_after(30):
        first = await run()
    assert first.status == "blocked"
    assert [(q.sender, q.recipient, q.summary) for q in first.questions] == [
        ("t1", MAIN, "x or y?")
    ]
    assert "answer task t1: orchestrator resume ID --message" in first.advice
    with trio.fail_after(30):
        second = await run("take y")
    assert second.status == "completed", second
    assert second.questions == ()
