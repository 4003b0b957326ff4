"""What the served tools answer, made of a session's folded state: its status, its task
tree, its open questions, the calls and plans waiting for a decision, its answer; and one
line for a person of each event worth a progress notification. Pure: no I/O, no trio."""

from __future__ import annotations

from typing import Any

from orchestrator.loop.plan_markdown import render
from orchestrator.state.events import (
    Event,
    SessionStatusChanged,
    ToolCallStarted,
    ToolProgress,
)
from orchestrator.state.fold import SessionState
from orchestrator.state.mailbox import MessagePosted
from orchestrator.state.plans import PlanSubmitted
from orchestrator.state.tasks import TaskChanged, TaskCreated
from orchestrator.team.asking import ApprovalRequest
from orchestrator.team.queries import PARKING, final_answer
from orchestrator.text import label

Data = dict[str, Any]


def tasks_of(state: SessionState) -> list[Data]:
    """Every task, oldest first; `owner` is the agent that delegated it ("main", or a
    task's id), which makes the tree."""
    records = sorted(state.tasks.tasks.values(), key=lambda t: t.created_seq)
    found = []
    for task in records:
        row: Data = {
            "id": task.task_id,
            "owner": task.owner,
            "type": task.agent_type,
            "description": task.description,
            "state": task.state,
        }
        if task.progress:
            row["progress"] = task.progress
        if task.percent is not None:
            row["percent"] = task.percent
        if task.completion is not None:
            row["summary"] = task.completion.summary
        if task.reason:
            row["reason"] = task.reason
        found.append(row)
    return found


def questions_of(state: SessionState) -> list[Data]:
    """The questions (and reports of being blocked) that wait for an answer, oldest
    first: `answer_question` takes their `id`."""
    asked = [
        m
        for m in state.mailbox.messages.values()
        if m.requires_ack and not m.answered_by and m.kind in PARKING
    ]
    found = []
    for mail in sorted(asked, key=lambda m: m.posted_seq):
        row: Data = {"id": mail.message_id, "task": mail.sender, "asks": mail.recipient}
        row |= {"kind": mail.kind, "text": mail.summary}
        options = (mail.data or {}).get("options")
        if options:
            row["options"] = list(options)
        found.append(row)
    return found


def request_of(request: ApprovalRequest, request_id: str) -> Data:
    """A tool call waiting for a decision, as the client is shown it."""
    row: Data = {"id": request_id, "kind": "tool_call", "who": request.who, "tool": request.tool}
    if request.command is not None:
        row["command"] = request.command
    else:
        row["arguments"] = request.arguments
    return row


def plan_of(state: SessionState) -> Data | None:
    """The plan version waiting for a decision, if any: `decide` takes its `id`."""
    pending = state.plans.pending
    if pending is None:
        return None
    return {
        "id": plan_id(pending.version),
        "kind": "plan",
        "version": pending.version,
        "plan": render(pending.plan),
        "warnings": list(pending.warnings),
    }


def plan_id(version: int) -> str:
    return f"plan-v{version}"


def status_of(
    state: SessionState,
    *,
    session_id: str,
    goal: str,
    status: str,
    decisions: list[Data],
    running: bool,
) -> Data:
    """The whole picture `session_status` and `wait_session` answer."""
    data: Data = {"session_id": session_id, "goal": goal, "status": status, "running": running}
    data["tasks"] = tasks_of(state)
    data["questions"] = questions_of(state)
    data["decisions"] = decisions
    if not running:
        data["output"] = final_answer(state)
    return data


def said(event: Event) -> str | None:
    """One line of an event worth telling a waiting client (a progress notification),
    None for the rest (streamed text, usage, ...)."""
    match event:
        case TaskCreated():
            return f"{event.agent} delegated {event.task} ({event.agent_type}): {event.description}"
        case TaskChanged():
            reason = f": {event.reason}" if event.reason else ""
            return f"task {event.task} {event.state}{reason}"
        case MessagePosted():
            return f"{event.agent} to {event.to} ({event.mail}): {event.summary}"
        case ToolCallStarted():
            return f"{event.agent} calls {event.call.name}"
        case ToolProgress():
            return f"{event.agent} {event.tool}: {event.message}"
        case PlanSubmitted():
            return f"plan v{event.version} submitted"
        case SessionStatusChanged():
            detail = f": {event.detail}" if event.detail else ""
            return f"session {event.status}{detail}"
        case _:
            return None


def one_line(text: str, width: int = 300) -> str:
    """A model's text as one line for a notification."""
    return label(" ".join(text.split()), width)
