"""The interactive session's core (issue 24, item 2), driven as the terminal drives it:
what is typed goes in through a channel, what the chat says comes out as lines. A real
session on disk and the scripted model; the model waits on trio events where a test
needs the session running at a given moment."""

from __future__ import annotations

import io
import math
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import trio

from orchestrator import (
    FanOut,
    LiveSession,
    ModelRequest,
    RunSettings,
    ScriptedModel,
    ScriptedReply,
    TranscriptSink,
    create_session,
    open_session,
)
from orchestrator.cli.chat import Chat, Focus, Questions
from orchestrator.cli.chat_commands import HELP, Commands
from orchestrator.cli.chat_input import Key, Typed
from orchestrator.cli.prompt import make_prompt
from tests.scenes import all_text, c, reply

Respond = Callable[[ModelRequest], object]


@dataclass
class Said:
    """The chat's lines, and a way to wait for one, or for anything: every line said,
    every event of the session and every prompt asked wakes the waiters."""

    lines: list[str] = field(default_factory=list)
    _changed: trio.Event = field(default_factory=trio.Event)

    def __call__(self, text: str) -> None:
        self.lines.append(text)
        self.poke()

    def poke(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def emit(self, event: object, *, durable: bool = False) -> None:
        self.poke()

    async def until(self, done: Callable[[], bool]) -> None:
        with trio.fail_after(30):
            while not done():
                await self._changed.wait()

    async def wait_for(self, pattern: str, *, count: int = 1) -> str:
        """The `count`th line said that matches `pattern` (a regex)."""
        found: list[str] = []

        def seen() -> bool:
            found[:] = [line for line in self.lines if re.search(pattern, line)]
            return len(found) >= count

        await self.until(seen)
        return found[count - 1]


@dataclass
class Session:
    chat: Chat
    live: LiveSession
    said: Said
    typed: trio.MemorySendChannel[Typed]
    shown: io.StringIO
    asked: list[str]
    ended: trio.Event

    async def type(self, *items: Typed) -> None:
        for item in items:
            await self.typed.send(item)


@asynccontextmanager
async def chatting(
    tmp_path: Path, respond: Respond, *, approve: bool = False
) -> AsyncIterator[Session]:
    """A chat over a new session whose model is `respond`, running until the block ends
    (the person leaves: Ctrl+D)."""
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    root = tmp_path / "sessions"
    session_id, _ = create_session(root, goal="the goal", model="object:test", workspace=workspace)
    said, asked = Said(), []

    def ask(prompt: str) -> None:
        asked.append(prompt)
        said.poke()

    questions = Questions(ask)
    shown = io.StringIO()
    async with open_session(root, session_id, warn=said) as live:
        transcript = Focus(TranscriptSink(shown, color=False), live)
        prompt = make_prompt(out=io.StringIO(), read=questions.read)
        settings = RunSettings(
            model=ScriptedModel(respond),  # type: ignore[arg-type]
            ui=FanOut([transcript, said]),
            approve_for=(lambda agent, who: prompt) if approve else None,
        )
        chat = Chat(live, settings, say=said, questions=questions)
        chat.focus = transcript
        send, receive = trio.open_memory_channel[Typed](math.inf)
        ended = trio.Event()

        async def run() -> None:
            await chat.run(receive, Commands(chat).run)
            ended.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            yield Session(chat, live, said, send, shown, asked, ended)
            await send.send(Key.END)


async def test_a_message_typed_while_the_main_agent_works_reaches_it(tmp_path: Path) -> None:
    thinking, go_on = trio.Event(), trio.Event()

    async def respond(request: ModelRequest) -> ScriptedReply:
        if request.step == 0:
            thinking.set()
            await go_on.wait()
            return reply("working on it")
        heard = "also write docs" in all_text(request)
        return reply(f"heard it: {heard}")

    async with chatting(tmp_path, respond) as s:
        await thinking.wait()
        assert s.chat.running
        await s.type("also write docs")
        go_on.set()
        done = await s.said.wait_for("^— completed")
        assert "tokens" in done
        assert "type a follow-up" in done
        assert "heard it: True" in s.shown.getvalue()
        assert "✉ m1 instruction user → main: also write docs" in s.shown.getvalue()
        assert len([line for line in s.said.lines if line.startswith("— ")]) == 1


async def test_a_message_after_the_work_ended_starts_it_again(tmp_path: Path) -> None:
    def respond(request: ModelRequest) -> ScriptedReply:
        if request.step == 0:
            return reply("first answer")
        return reply(f"follow-up: {'more please' in all_text(request)}")

    async with chatting(tmp_path, respond) as s:
        await s.said.wait_for("^— completed")
        assert not s.chat.running
        await s.type("more please")
        await s.said.wait_for("^— completed", count=2)
        assert "follow-up: True" in s.shown.getvalue()
        assert s.live.state.status == "completed"


async def test_ctrl_c_stops_the_turn_a_message_goes_on_and_twice_leaves(tmp_path: Path) -> None:
    thinking = trio.Event()

    async def respond(request: ModelRequest) -> ScriptedReply:
        if not thinking.is_set():  # the first call never answers: Ctrl+C stops it
            thinking.set()
            await trio.sleep_forever()
        return reply(f"going on: {'go on' in all_text(request)}")

    async with chatting(tmp_path, respond) as s:
        await thinking.wait()
        await s.type(Key.INTERRUPT)
        await s.said.wait_for("turn stopped; the session is interrupted")
        assert s.live.state.status == "interrupted"
        assert not s.chat.running
        await s.type("go on")
        await s.said.wait_for("^— completed")
        assert "going on: True" in s.shown.getvalue()
        await s.type(Key.INTERRUPT)
        await s.said.wait_for("Ctrl\\+C again")
        assert not s.chat.left
        await s.type(Key.INTERRUPT)
        with trio.fail_after(10):
            await s.ended.wait()


async def test_an_approval_is_asked_and_answered_on_the_input_line(tmp_path: Path) -> None:
    def respond(request: ModelRequest) -> ScriptedReply:
        if request.step == 0:
            return reply("", c("write_file", path="a.txt", content="hi\n"))
        return reply("written")

    async with chatting(tmp_path, respond, approve=True) as s:
        await s.said.until(lambda: s.chat.questions.waiting)
        assert s.asked == ["answer› "]
        await s.type("y")
        await s.said.wait_for("^— completed")
        assert (tmp_path / "ws" / "a.txt").read_text() == "hi\n"
        assert s.asked == ["answer› ", "› "]


def team_brain(gate: trio.Event) -> Respond:
    """main delegates t1 (asks a question) and t2 (works until `gate`), and reports what
    they handed in; t1 completes with the answer it got."""

    async def respond(request: ModelRequest) -> ScriptedReply:
        text = all_text(request)
        if request.role == "main":
            if request.step == 0:
                worker = {"agent_type": "worker"}
                return reply(
                    "",
                    c("delegate", description="pick", prompt="Pick.", write_scope=["a"], **worker),
                    c("delegate", description="slow", prompt="Slow.", write_scope=["b"], **worker),
                )
            if "<completed id=" in text and "from=task t1" in text:
                return reply("t1 handed in")
            if "needs_answer=yes" in text:
                return reply("The question is yours to answer.")
            return reply("", c("wait_tasks"))
        if request.agent == "t2":
            await gate.wait()
            return reply("", c("complete", summary="slow done"))
        answers = re.findall(r"<answer id=m\d+ from=\w+ in_reply_to=m\d+>\n(.*)", text)
        if not answers:
            return reply("", c("ask_decision", question="MIT or Apache?", options=["MIT"]))
        return reply("", c("complete", summary=answers[-1]))

    return respond


async def test_send_cancel_focus_and_tasks_act_on_the_running_team(tmp_path: Path) -> None:
    gate = trio.Event()
    async with chatting(tmp_path, team_brain(gate)) as s:
        await s.said.until(lambda: "t2" in s.live.state.agents and s.chat.team is not None)
        await s.type("/send t2 hurry up")
        sent = await s.said.wait_for("^sent m\\d+ to t2$")
        mail = s.live.state.mailbox.get(sent.split()[1])
        assert mail is not None
        assert mail.recipient == "t2"
        assert mail.summary == "hurry up"
        await s.type("/send t9 hello")
        await s.said.wait_for("^refused: no task 't9' in this session$")
        await s.type("/focus t1")
        focused = await s.said.wait_for("── t1 so far ──")
        assert "from now on, only t1's lines" in focused
        assert s.chat.focus is not None
        assert s.chat.focus.agent == "t1"
        await s.type("/focus")
        await s.said.wait_for("every agent's lines are shown again")
        await s.type("/tasks")
        tree = await s.said.wait_for(" t2 ")
        assert " t1 " in tree
        assert "main" in tree
        await s.type("/cancel t2 not needed")
        await s.said.wait_for("^cancelled t2$")
        assert s.live.state.tasks.get("t2").state == "cancelled"  # type: ignore[union-attr]
        blocked = await s.said.wait_for("^— blocked")
        assert "/answer ID TEXT" in blocked
        question = re.search(r"answer to (m\d+)", blocked)
        assert question is not None
        # Nothing runs now: /answer starts the session again, and the answer reaches t1.
        await s.type(f"/answer {question[1]} MIT")
        await s.said.wait_for(f"^sent m\\d+ to {question[1]}$")
        try:
            await s.said.wait_for("^— completed")
        except trio.TooSlowError:
            print(s.said.lines, s.shown.getvalue())
            raise
        assert "t1 handed in" in s.shown.getvalue()
        assert s.live.state.tasks.get("t1").state == "completed"  # type: ignore[union-attr]


async def test_todos_are_seen_and_edited_and_the_main_agent_is_told(tmp_path: Path) -> None:
    thinking, go_on = trio.Event(), trio.Event()

    async def respond(request: ModelRequest) -> ScriptedReply:
        if request.step == 0:
            items = [{"content": "write"}, {"content": "test"}]
            return reply("", c("todo_write", todos=items))
        if request.step == 1:
            thinking.set()
            await go_on.wait()
            return reply("", c("todo_update", id="1", status="completed"))
        told = "The person changed your todo list" in all_text(request)
        return reply(f"told: {told}")

    async with chatting(tmp_path, respond) as s:
        await thinking.wait()
        await s.type("/todos")
        await s.said.wait_for(r"\[1\] \[todo\] write")
        await s.type("/todos add docs")
        added = await s.said.wait_for("^added 'docs'")
        assert "[3] [todo] docs" in added
        await s.type("/todos move 3 1")
        moved = await s.said.wait_for("^moved item 3 to position 1")
        assert moved.index("[3]") < moved.index("[1]") < moved.index("[2]")
        await s.type("/todos done 2", "/todos start 9", "/todos frob", "/todos add")
        await s.said.wait_for("^marked item 2 completed")
        await s.said.wait_for("^refused: no item 9")
        await s.said.wait_for("^no agent frob in this session")
        await s.said.wait_for("^usage: /todos")
        todos = s.live.state.todo_list("main")
        assert [i.id for i in todos.items.values()] == ["3", "1", "2"]
        go_on.set()
        await s.said.wait_for("^— ")
        assert "told: True" in s.shown.getvalue()


async def test_help_budget_and_unknown_commands(tmp_path: Path) -> None:
    async with chatting(tmp_path, lambda request: reply("hello")) as s:
        await s.said.wait_for("^— completed")
        await s.type("/help", "/budget", "/frob", "/send", "/compact")
        assert await s.said.wait_for("^Type a message") == HELP
        budget = await s.said.wait_for("^model rounds: ")
        assert "model rounds: 1 of no limit" in budget
        assert "tokens: " in budget
        # A command that works when pasted (this chat was given no --sessions-dir).
        change = f"change them with: orchestrator resume {s.live.id} --budget-rounds N (or "
        assert change in budget
        await s.said.wait_for(r"^unknown command /frob; /help lists them$")
        await s.said.wait_for(r"^usage: /send TASK TEXT$")
        await s.said.wait_for("^the session is completed: type a message")


@pytest.mark.parametrize("typed", [Key.END, "/quit"])
async def test_leaving_stops_a_running_turn(tmp_path: Path, typed: Typed) -> None:
    thinking = trio.Event()

    async def respond(request: ModelRequest) -> ScriptedReply:
        thinking.set()
        await trio.sleep_forever()
        raise AssertionError

    async with chatting(tmp_path, respond) as s:
        await thinking.wait()
        await s.type(typed)
        with trio.fail_after(10):
            await s.ended.wait()
        assert s.chat.left
        assert s.live.state.status == "interrupted"


async def test_rewind_lists_the_points_and_goes_back_to_one_with_the_files(
    tmp_path: Path,
) -> None:
    def respond(request: ModelRequest) -> ScriptedReply:
        if request.step == 0:
            return reply("writing", c("write_file", path="a.txt", content="new\n"))
        return reply("written")

    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.txt").write_text("old\n")
    async with chatting(tmp_path, respond, approve=True) as s:
        await s.said.until(lambda: s.chat.questions.waiting)
        await s.type("y")
        await s.said.wait_for("^— completed")
        assert (tmp_path / "ws" / "a.txt").read_text() == "new\n"
        await s.type("/rewind")
        listed = await s.said.wait_for("/rewind POINT goes back")
        start = re.search(r"(\d+)  checkpoint  workspace as a run started", listed)
        assert start is not None, listed
        assert re.search(r"\d+  checkpoint  workspace after main's write_file", listed)
        await s.type("/rewind x")
        await s.said.wait_for("takes a point's number")
        await s.type(f"/rewind {start[1]}")
        done = await s.said.wait_for("^rewound to point")
        await s.ended.wait()  # the chat goes on in the fork: this one is left
        assert "  overwritten a.txt" in done
        assert s.chat.switch_to is not None
        assert s.chat.switch_to in done
        assert (tmp_path / "ws" / "a.txt").read_text() == "old\n"
