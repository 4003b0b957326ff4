"""The library host asked what MCP servers bring up during a call (docs/mcp.md): a
server's question to the person, by the host's `answer` (the server's form as a
`Question` of kind "elicitation", the host's reply the answer: content, `Denied` to
decline, None when nobody answers now); and a tool changed since the session took it, by
the host's `approve` (an `ApprovalRequest` whose `changed` says what changed)."""

from __future__ import annotations

from typing import Protocol

from orchestrator.mcp.elicit import ElicitAsker, Elicitation, Reply
from orchestrator.mcp.pins import Changed, Confirm
from orchestrator.mcp.servers import tool_name
from orchestrator.messages import ToolCall
from orchestrator.state.fold import SessionState
from orchestrator.team.asking import (
    HostApprover,
    Question,
    QuestionAnswerer,
    host_answer,
    host_reply,
    request,
    who,
)
from orchestrator.team.queries import MAIN
from orchestrator.tools.permissions import Grant


class _Live(Protocol):
    @property
    def state(self) -> SessionState: ...


def elicitation_asker(answer: QuestionAnswerer, live: _Live) -> ElicitAsker:
    """Asks `answer` each server's question, naming the agent whose call it came in."""

    async def ask(asked: Elicitation) -> Reply:
        task = live.state.tasks.get(asked.agent)
        question = Question(
            task=asked.agent,
            agent_type=task.agent_type if task is not None else MAIN,
            description=task.description if task is not None else "",
            owner="",
            kind="elicitation",
            text=asked.message,
            options=tuple(asked.fields),
            server=asked.server,
            schema=asked.schema,
        )
        reply = await host_reply(answer, question)
        return None if reply == "" else reply

    return ask


def change_approver(approve: HostApprover, live: _Live) -> Confirm:
    """Asks `approve` whether to take a changed tool's new definition: a `Grant` of the
    tool (`Grant(request.tool)`) takes it for the session; anything else refuses the
    call. A plain True, which runs a call, is not enough: an approver that says yes to
    every call (a script's) must not take a server's new words unread. `Later` refuses
    too: the call is under way, and cannot wait for a resume."""

    async def confirm(changed: Changed) -> bool:
        name = tool_name(changed.server, changed.tool)
        call = ToolCall(id="", name=name, arguments="{}")
        asked = request(changed.agent, who(live.state, changed.agent), call, changed=changed.line)
        decided = await host_answer(approve, asked)
        return isinstance(decided, Grant) and decided.tool == name

    return confirm
