"""The terminal's questions are asked one at a time, whoever asks (cli/prompt.py's
`Asking`): agents run at once, so a server's question can come while a task's call waits
for its approval. It is not shown until the person has answered the approval, and each
line typed answers the question on the screen."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import trio
import trio.testing

from orchestrator import ToolCall
from orchestrator.cli.mcp_prompt import terminal_asker
from orchestrator.cli.prompt import Asking, make_prompt
from orchestrator.mcp.elicit import Elicitation, Reply
from orchestrator.tools.permissions import Answer

QUESTION = Elicitation(
    server="docs",
    tool="ask",
    agent="main",
    message="Which colour?",
    schema={"properties": {"choice": {"type": "string"}}},
    id="q1",
)


async def test_a_servers_question_waits_until_the_approval_on_the_screen_is_answered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)  # (servers ask only a terminal)
    send, receive = trio.open_memory_channel[str](0)

    def read() -> str:  # (a line typed: what the test sends, taken by one reader)
        return trio.from_thread.run(receive.receive)

    held: list[str] = []

    @contextmanager
    def hold(agent: str, what: str) -> Iterator[None]:
        held.append(f"{agent}: {what}")
        yield

    out = io.StringIO()
    asking = Asking(hold)
    approve = make_prompt(out, read=read, asking=asking).asking("t1", "task t1 (write)")
    ask = terminal_asker(asking, read, out)
    assert ask is not None
    call = ToolCall(id="c1", name="shell", arguments='{"command": "make"}')
    approved: list[Answer] = []
    answered: list[Reply] = []

    async def approval() -> None:
        approved.append(await approve(call))

    async def question() -> None:
        answered.append(await ask(QUESTION))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(approval)
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(question)
        await trio.testing.wait_all_tasks_blocked()
        assert "Allow?" in out.getvalue()
        assert "Which colour?" not in out.getvalue()  # (not beside the approval)
        await send.send("y\n")  # (the approval's reader is the only one)
        await send.send("teal\n")  # (taken once the question is on the screen)
    assert approved == [True]
    assert answered == ["teal"]
    shown = out.getvalue()
    assert shown.index("Allow?") < shown.index("Which colour?")
    assert held == ["t1: make", "main: MCP server docs"]
