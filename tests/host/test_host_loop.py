"""The host in the loop: a subagent's question offered to the host program before its
owner, answered by it or left to the owner; questions still open offered again on a
resume; a message to any task; a call asked about when a kill cut the question short
asked again after the resume (a real SIGKILL)."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

import orchestrator as orc
from orchestrator import ListSink, Mail, MessagePosted, ModelRequest, ScriptedModel, ScriptedReply
from orchestrator.state.mailtext import render
from tests.scenes import all_text, c, first_line_then_kill, reply

# A team of the built-in types, which work with the workspace's tools.
TEAM = {"tools": orc.workspace_tools(), "agents": orc.builtin_agents()}


def main_agent(request: ModelRequest) -> ScriptedReply:
    """Delegates one worker, answers its question with "Apache" if it sees it open, waits,
    and ends with what the worker handed in."""
    text = all_text(request)
    if request.step == 0:
        return reply("", c("delegate", description="pick a license", prompt="Pick one.",
                           agent_type="worker", write_scope=[]))  # fmt: skip
    done = re.findall(r"<completed id=m\d+ from=task t1>\n(.*)", text)
    if done:
        return reply(f"The worker chose: {done[-1]}")
    open_ = re.findall(r"<decision_required id=(m\d+) from=task t1 needs_answer=yes>", text)
    answered = [
        call for m in request.messages for call in getattr(m, "tool_calls", None) or ()
        if call.name == "send_message"
    ]  # fmt: skip
    if open_ and not answered:
        if "Your answers decide." not in text:
            return reply("The question is yours to answer.")
        return reply("", c("send_message", task="t1", kind="answer",
                           in_reply_to=open_[-1], text="Apache"))  # fmt: skip
    return reply("", c("wait_tasks"))


def worker(request: ModelRequest) -> ScriptedReply:
    answers = re.findall(r"<answer id=m\d+ from=\w+ in_reply_to=m\d+>\n(.*)", all_text(request))
    if not answers:
        return reply("", c("ask_decision", question="MIT or Apache?", options=["MIT", "Apache"]))
    return reply("", c("complete", summary=answers[-1]))


def respond(request: ModelRequest) -> ScriptedReply:
    return main_agent(request) if request.role == "main" else worker(request)


async def test_the_host_answers_a_question_before_its_owner_is_asked(tmp_path: Path) -> None:
    asked: list[orc.Question] = []

    def answer(question: orc.Question) -> str:
        asked.append(question)
        return "MIT"

    sink = ListSink()
    result = await orc.run(
        "choose",
        model=ScriptedModel(respond),
        workspace=tmp_path,
        answer=answer,
        on_event=sink,
        **TEAM,
    )
    assert result.output == "The worker chose: MIT"
    [question] = asked
    assert (question.task, question.agent_type, question.owner, question.kind) == (
        "t1",
        "worker",
        "main",
        "decision_required",
    )
    assert (question.text, question.options, question.message_id) == (
        "MIT or Apache?",
        ("MIT", "Apache"),
        "",
    )
    # The owner was told of the question too; the person's answer is the one that counts.
    assert result.session_dir is not None
    mail = {m.message_id: m for m in orc.mail_history(result.session_dir)}
    [asked_mail] = [m for m in mail.values() if m.kind == "decision_required"]
    assert asked_mail.recipient == "main"
    assert asked_mail.delivered_seq is not None
    assert mail[asked_mail.answered_by].sender == "user"
    assert not [e for e in sink.events if e.kind == "message_posted" and e.mail == "answer"
                and e.agent == "main"]  # fmt: skip


def test_an_answered_question_reads_answered_to_its_owner() -> None:
    posted = MessagePosted(
        agent="t1", id="m2", to="main", task="t1", mail="decision_required",
        summary="MIT or Apache?", requires_ack=True,
    )  # fmt: skip
    mail = Mail.of(5, posted)
    assert "needs_answer=yes" in render([mail])
    assert "send_message(" in render([mail])
    mail.answered_by = "m3"
    shown = render([mail])
    assert "<decision_required id=m2 from=task t1 priority=notify answered_by=m3>" in shown
    assert "needs_answer" not in shown
    assert "send_message(" not in shown


async def test_a_question_the_host_leaves_goes_to_the_owner(tmp_path: Path) -> None:
    asked: list[orc.Question] = []

    async def leave_it(question: orc.Question) -> None:
        asked.append(question)

    result = await orc.run(
        "choose",
        model=ScriptedModel(respond),
        workspace=tmp_path,
        answer=leave_it,
        instructions="Your answers decide.",  # (the main agent answers when told so)
        **TEAM,
    )
    assert len(asked) == 1
    assert result.output == "The worker chose: Apache"


async def test_an_open_question_is_offered_again_on_resume(tmp_path: Path) -> None:
    """Nobody answers at first (the owner does not, no host is given): the session
    stops blocked on the question. A resume with a host that answers ends it."""
    first = await orc.run("choose", model=ScriptedModel(respond), workspace=tmp_path, **TEAM)
    assert first.status == "blocked"
    assert first.questions
    asked: list[orc.Question] = []

    def answer(question: orc.Question) -> str:
        asked.append(question)
        return "MIT"

    assert first.session_dir is not None
    result = await orc.resume(
        first.session_dir, model=ScriptedModel(respond), answer=answer, **TEAM
    )
    assert result.status == "completed"
    assert result.output == "The worker chose: MIT"
    assert [q.message_id for q in asked] == [first.questions[0].message_id]


async def test_the_host_sends_a_task_a_message_and_answers_by_id(tmp_path: Path) -> None:
    teams: list[orc.Team] = []
    seen: list[str] = []
    sent: list[orc.Mail] = []

    def work(request: ModelRequest) -> ScriptedReply:
        if request.role == "main":
            return main_agent(request)
        seen.append(all_text(request))
        return worker(request)

    async def answer(question: orc.Question) -> None:
        team = teams[0]
        with pytest.raises(ValueError, match="no task 't9'"):
            await team.send("t9", "hello")
        with pytest.raises(ValueError, match="cannot answer m99: unknown"):
            await team.answer("m99", "x")
        if not sent:  # (the message wakes the task, which asks again)
            sent.append(await team.send(question.task, "prefer permissive licenses"))

    result = await orc.run(
        "choose",
        model=ScriptedModel(work),
        workspace=tmp_path,
        answer=answer,
        on_team=teams.append,
        instructions="Your answers decide.",
        **TEAM,
    )
    assert result.output == "The worker chose: Apache"
    assert sent[0].sender == "user"
    assert "from=user>\nprefer permissive licenses" in seen[-1]
    with pytest.raises(ValueError, match="task t1 is completed"):
        await teams[0].send("t1", "too late")


CHILD = textwrap.dedent(
    """
    import sys, trio
    import orchestrator as orc
    from orchestrator.models.scripted import ScriptedModel, ScriptedReply, ScriptedCall

    def writer(request):
        if request.step == 0:
            call = ScriptedCall(name="write_file", arguments={"path": "a.txt", "content": "A"})
            return ScriptedReply(tool_calls=(call,))
        return ScriptedReply(text="wrote it")

    async def hang(request):
        print("asked", request.tool, flush=True)
        await trio.sleep_forever()

    trio.run(lambda: orc.run("write", model=ScriptedModel(writer), workspace=sys.argv[1],
                             sessions_dir=sys.argv[2], approve=hang,
                             tools=orc.workspace_tools()))
    """
)


def test_a_question_cut_short_by_a_kill_is_asked_again_on_resume(tmp_path: Path) -> None:
    workspace, root = tmp_path / "w", tmp_path / "s"
    workspace.mkdir()
    first = first_line_then_kill(CHILD, str(workspace), str(root))
    assert first == "asked write_file\n"  # the question is waiting
    [directory] = root.iterdir()
    asked: list[str] = []

    async def yes(request: orc.ApprovalRequest) -> bool:
        asked.append(request.tool)
        return True

    import trio

    def writer(request: ModelRequest) -> ScriptedReply:
        if request.step == 0:
            return reply("", c("write_file", path="a.txt", content="A"))
        return reply("wrote it")

    result = trio.run(
        lambda: orc.resume(
            directory, model=ScriptedModel(writer), approve=yes, tools=orc.workspace_tools()
        )
    )
    assert (result.status, result.output, asked) == ("completed", "wrote it", ["write_file"])
    assert (workspace / "a.txt").read_text() == "A"


async def test_an_answer_that_raises_fails_the_asking_task_not_the_model(tmp_path: Path) -> None:
    """A bug in the host's `answer` is the program's, as an approver's is: the task that
    asked ends `crashed` naming it, instead of its model reading it as a tool's error."""

    def bug(question: orc.Question) -> str:
        raise KeyError(question.task)

    def main_then_stop(request: ModelRequest) -> ScriptedReply:
        if request.role == "main" and "task failed" in all_text(request):
            return reply("t1 failed.")
        return respond(request)

    result = await orc.run(
        "choose", model=ScriptedModel(main_then_stop), workspace=tmp_path, answer=bug, **TEAM
    )
    assert result.output == "t1 failed."
    assert result.session_dir is not None
    task = orc.load_state(result.session_dir, warn=print).tasks.get("t1")
    assert task is not None
    assert task.state == "failed"
    assert task.reason == (
        "crashed: HostCallbackFailed: the host's answer to t1's question raised KeyError: 't1'"
    )
