"""What the team asks the host program (the Python program running the session): whether
a tool call may run, as a typed `ApprovalRequest`, and a subagent's question, as a
`Question` the host may answer itself or leave to the agent that owns the task.

The turn loop knows approvers of a bare `ToolCall` (tools/permissions.py); `approvers`
turns a host's approver of requests into one per agent. A subagent's question is offered
to the host before its owner is told (`Reports`), and offered again after a resume while
it is still open (`offer_open_questions`).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from orchestrator.errors import HostCallbackFailed
from orchestrator.messages import ToolCall
from orchestrator.state.fold import USER, SessionState
from orchestrator.state.mailbox import Mail
from orchestrator.state.tasks import TaskRecord
from orchestrator.team import queries
from orchestrator.team.queries import MAIN, PARKING
from orchestrator.tools.base import task_of
from orchestrator.tools.permissions import Answer, Approver, Denied, shell_command

NO_APPROVER = "no approver given"


@dataclass(frozen=True)
class ApprovalRequest:
    """A tool call that the permission rules leave to ask about."""

    agent: str  # "main", "planner", or the id of the task whose agent calls ("t2")
    who: str  # the agent for a person: "the main agent", "task t2 (worker: add tests)"
    tool: str
    arguments: dict[str, Any]  # the call's arguments ({} when the model's JSON is unreadable)
    command: str | None  # a shell call's exact command; None for any other tool
    call: ToolCall  # the call as the model made it (its id, its raw JSON arguments)

    @property
    def task(self) -> str | None:
        """The task whose agent asks; None for the main agent (or the planner)."""
        return task_of(self.agent)


HostApprover = Callable[[ApprovalRequest], Awaitable[Answer] | Answer]
"""Answers an `ApprovalRequest`: True runs the call, False refuses it, `Denied(reason)`
refuses it with the reason the model reads, a `Grant` runs it and allows what the grant
covers for the rest of the session. A plain function or an async one."""


async def no_approver(call: ToolCall) -> Answer:
    """Without an approver, a call the rules leave to ask about is refused, and the
    model is told why."""
    return Denied(NO_APPROVER)


def approvers(approve: HostApprover) -> Callable[[str, str], Approver]:
    """The turn loop's approver for each agent (`RunSettings.approve_for`), asking
    `approve` with a request that names the agent."""

    def approver_for(agent: str, who: str) -> Approver:
        async def ask(call: ToolCall) -> Answer:
            answer = approve(request(agent, who, call))
            return await answer if inspect.isawaitable(answer) else answer

        return ask

    return approver_for


def request(agent: str, who: str, call: ToolCall) -> ApprovalRequest:
    try:
        arguments = orjson.loads(call.arguments or "{}")
    except orjson.JSONDecodeError:
        arguments = {}
    return ApprovalRequest(
        agent=agent,
        who=who,
        tool=call.name,
        arguments=arguments if isinstance(arguments, dict) else {},
        command=shell_command(call) if call.name == "shell" else None,
        call=call,
    )


@dataclass(frozen=True)
class Question:
    """A subagent's question to its owner, offered to the host first."""

    task: str  # the task that asks ("t3")
    agent_type: str
    description: str  # the task's description
    owner: str  # whom it asks: "main", or the task that delegated it
    kind: Literal["decision_required", "blocked"]  # `ask_decision`, or `report_blocked`
    text: str  # the question, or why the task is blocked
    options: tuple[str, ...] = ()  # the choices an `ask_decision` offers
    category: str = ""  # a `blocked` report's category
    message_id: str = ""  # "" while the owner has not been told (it is, once posted)


QuestionAnswerer = Callable[[Question], Awaitable[str | None] | str | None]
"""The host's answer to a subagent's question; None leaves it to the task's owner."""


async def ask_host(answer: QuestionAnswerer, question: Question) -> str | None:
    try:
        reply = answer(question)
        text = await reply if inspect.isawaitable(reply) else reply
    except Exception as exc:
        raise HostCallbackFailed(
            f"the host's answer to {question.task}'s question raised {type(exc).__name__}: {exc}"
        ) from exc
    return text or None  # "" says nothing


def question(
    task: TaskRecord,
    kind: str,
    text: str,
    data: Mapping[str, Any] | None,
    message_id: str = "",
) -> Question:
    """The question (a `decision_required` or `blocked` report) that `task` asks its
    owner, with what the report's data says of it."""
    data = data or {}
    return Question(
        task=task.task_id,
        agent_type=task.agent_type,
        description=task.description,
        owner=task.owner,
        kind="blocked" if kind == "blocked" else "decision_required",
        text=text,
        options=tuple(str(o) for o in data.get("options") or ()),
        category=str(data.get("category") or ""),
        message_id=message_id,
    )


def posted_question(state: SessionState, mail: Mail) -> Question:
    """The question `mail` (an open `decision_required` or `blocked` from a task)."""
    task = queries.task(state, mail.sender)
    return question(task, mail.kind, mail.summary, mail.data, mail.message_id)


def open_questions(state: SessionState) -> list[Mail]:
    """Every question of a task still unanswered, oldest first: those to offer the host
    again after a resume."""
    found = [
        mail
        for agent in [MAIN, *state.tasks.tasks]
        for mail in state.mailbox.unanswered(agent)
        if mail.kind in PARKING and mail.sender != USER
    ]
    return sorted(found, key=lambda m: m.posted_seq)


async def offer_open_questions(
    state: SessionState,
    answer: QuestionAnswerer,
    reply: Callable[[str, str], Awaitable[object]],
) -> None:
    """Offer the host again the questions still open as the run starts (a resume's): it
    was asked before the crash, or left them to owners that have not answered yet. The
    main agent starts once it has decided on each, so that none is found unanswerable
    while the host thinks."""
    for mail in open_questions(state):
        text = await ask_host(answer, posted_question(state, mail))
        current = state.mailbox.get(mail.message_id)
        if text is not None and current is not None and not current.answered_by:
            await reply(mail.message_id, text)  # the person's answer (`Team.answer`)
