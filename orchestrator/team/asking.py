"""What the team asks the host program (the Python program running the session): whether
a tool call may run, as a typed `ApprovalRequest`, and a subagent's question, as a
`Question` the host may answer itself or leave to the agent that owns the task.

An approver may answer `Later`: the main agent's call is then parked (agent/calls.py,
state/approvals.py) and the run ends `blocked` with its request in
`RunResult.approvals`; `decide` journals the person's decisions as a resume starts.

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

from orchestrator.errors import HostCallbackFailed, SessionError
from orchestrator.messages import ToolCall
from orchestrator.state.approvals import ApprovalDecided, approval_id
from orchestrator.state.events import EventSink, PermissionGranted
from orchestrator.state.fold import USER, SessionState
from orchestrator.state.mailbox import Mail
from orchestrator.state.tasks import TaskRecord
from orchestrator.team import queries
from orchestrator.team.queries import MAIN, PARKING
from orchestrator.tools.base import task_of
from orchestrator.tools.permissions import Answer, Approver, Denied, Grant, Later, shell_command

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
    # Stable and unique in the session (`main:12.0`): the key of `resume(...,
    # approvals=...)` when the approver answers `Later` ("" for a call on a worker).
    id: str = ""
    # An MCP tool's new definition, changed since the session took it (what changed):
    # the request approves that definition for the session, met as `call` is made.
    changed: str = ""

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


RefOf = Callable[[str, ToolCall], str]
"""The ref of `agent`'s open call (its place in the session: context.py), "" if none."""


def approvers(approve: HostApprover, ref_of: RefOf | None = None) -> Callable[[str, str], Approver]:
    """The turn loop's approver for each agent (`RunSettings.approve_for`), asking
    `approve` with a request that names the agent and the call's id (`ref_of`)."""

    def approver_for(agent: str, who: str) -> Approver:
        async def ask(call: ToolCall) -> Answer:
            ref = ref_of(agent, call) if ref_of is not None else ""
            return await host_answer(approve, request(agent, who, call, ref))

        return ask

    return approver_for


async def host_answer(approve: HostApprover, asked: ApprovalRequest) -> Answer:
    """`approve`'s answer to `asked`, whether it is a plain function or an async one."""
    answer = approve(asked)
    return await answer if inspect.isawaitable(answer) else answer


def journaled_answer(state: SessionState, agent: str, ref: str) -> Answer | None:
    """The answer the journal holds for `agent`'s call `ref` (`TurnDeps.journaled`):
    the person's decision, `Later` while it is parked undecided, None if it never
    parked."""
    key = approval_id(agent, ref)
    decided = state.approvals.decided.get(key)
    if decided is not None:
        return True if decided.allow else Denied(decided.reason) if decided.reason else False
    return Later() if key in state.approvals.pending else None


def pending_requests(state: SessionState) -> tuple[ApprovalRequest, ...]:
    """The requests of the calls parked for a decision, oldest first."""
    found = []
    for parked in sorted(state.approvals.pending.values(), key=lambda p: p.seq):
        context = state.agents.get(parked.agent)
        call = context.open_calls.get(parked.ref) if context is not None else None
        if call is not None:
            found.append(request(parked.agent, who(state, parked.agent), call, parked.ref))
    return tuple(found)


def who(state: SessionState, agent: str) -> str:
    """`agent` for a person: "the main agent", "task t2 (worker: add tests)"."""
    task = state.tasks.get(agent)
    if task is None:
        return "the main agent"
    return f"task {agent} ({task.agent_type}: {task.description})"


Decisions = Mapping[str, bool | Denied | Grant]
"""The person's decisions on parked calls, by request id (`resume(..., approvals=)`)."""


def check_decisions(state: SessionState, decisions: Decisions) -> None:
    """Raises `SessionError` naming every id that is no parked call of the session, and
    a `TypeError` for a decision that is not True, False, `Denied` or `Grant`."""
    unknown = [key for key in decisions if key not in state.approvals.pending]
    if unknown:
        pending = ", ".join(state.approvals.pending) or "none"
        raise SessionError(
            f"no parked call {', '.join(map(repr, unknown))} in this session; its calls "
            f"waiting for approval: {pending}"
        )
    for key, answer in decisions.items():
        if not isinstance(answer, bool | Denied | Grant):
            raise TypeError(
                f"approvals[{key!r}] is {answer!r}: give True, False, Denied(reason) or a Grant"
            )


async def decide(state: SessionState, decisions: Decisions, sink: EventSink) -> None:
    """Journal the person's decisions on parked calls (durably, before any of them runs:
    a crash after this runs each call once on resume). A `Grant` is journaled as the
    grant, then as a yes."""
    check_decisions(state, decisions)
    for key, answer in decisions.items():
        parked = state.approvals.pending[key]
        if isinstance(answer, Grant):
            grant = PermissionGranted(agent=parked.agent, tool=answer.tool, pattern=answer.pattern)
            await sink.emit(grant)
        reason = answer.reason if isinstance(answer, Denied) else ""
        decided = ApprovalDecided(
            agent=parked.agent, ref=parked.ref, allow=bool(answer), reason=reason
        )
        await sink.emit(decided, durable=True)


def request(
    agent: str, who: str, call: ToolCall, ref: str = "", *, changed: str = ""
) -> ApprovalRequest:
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
        id=approval_id(agent, ref) if ref else "",
        changed=changed,
    )


@dataclass(frozen=True)
class Question:
    """A subagent's question to its owner, offered to the host first; or (`kind`
    "elicitation") an MCP server's question to the person during an agent's call
    (docs/mcp.md), `server` naming it and `schema` the form of its answer."""

    task: str  # the task that asks ("t3"; for a server's question, the calling agent)
    agent_type: str
    description: str  # the task's description
    owner: str  # whom it asks: "main", or the task that delegated it
    kind: Literal["decision_required", "blocked", "elicitation"]
    text: str  # the question, or why the task is blocked
    options: tuple[str, ...] = ()  # the choices an `ask_decision` offers
    category: str = ""  # a `blocked` report's category
    message_id: str = ""  # "" while the owner has not been told (it is, once posted)
    server: str = ""  # the MCP server that asks (kind "elicitation")
    schema: Mapping[str, Any] | None = None  # the JSON schema of its answer's content


HostReply = str | Mapping[str, Any] | Denied | None
QuestionAnswerer = Callable[[Question], Awaitable[HostReply] | HostReply]
"""The host's answer to a subagent's question; None leaves it to the task's owner. To
a server's question (kind "elicitation"): the content (a mapping, or text: a one-field
form's value, else a JSON object), `Denied` to decline, None when nobody answers now
(the session stops blocked on it)."""


async def ask_host(answer: QuestionAnswerer, question: Question) -> str | None:
    text = await host_reply(answer, question)
    if text is not None and not isinstance(text, str):
        raise HostCallbackFailed(
            f"the host's answer to {question.task}'s question is {text!r}: give its text"
        )
    return text or None  # "" says nothing


async def host_reply(answer: QuestionAnswerer, question: Question) -> HostReply:
    """What the host replied to `question` (its failure a `HostCallbackFailed`)."""
    try:
        reply = answer(question)
        return await reply if inspect.isawaitable(reply) else reply
    except Exception as exc:
        raise HostCallbackFailed(
            f"the host's answer to {question.task}'s question raised {type(exc).__name__}: {exc}"
        ) from exc


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
