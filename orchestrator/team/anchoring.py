"""What a compaction's checkpoint restores exactly, gathered from the fold (never from a
summary's prose): the agent's goal, the plan it works from (the builder's approved
version, a planner's latest), todo list, the tasks of its subtree with their open
questions, the mail it has not read or not answered, the files it touched with their
hashes now; and the facts the fallback summary is built from when no model's summary
came. `loop/anchors.py` and `loop/summary.py` render them."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import trio

from orchestrator.loop.anchors import Anchors, FileAnchor, TaskAnchor, TodoAnchor
from orchestrator.loop.plan_markdown import TITLE, render
from orchestrator.loop.pruning import is_stub
from orchestrator.loop.summary import SUMMARY_HEADER as SUMMARY_HEADER
from orchestrator.loop.summary import Facts
from orchestrator.messages import AssistantMessage, Message, ToolResult, UserMessage
from orchestrator.state.context import AgentContext
from orchestrator.state.fold import SessionState
from orchestrator.team.queries import MAIN, is_planner
from orchestrator.tools.permissions import string_argument


def files_read(context: AgentContext) -> tuple[tuple[str, str], ...]:
    """The files the agent read (`read_file`, successfully), before its newest checkpoint
    and in its context since, each with the ref of its newest read, oldest first."""
    read = dict(context.read)
    paths: dict[str, str] = {}  # call id -> path
    for message in context.messages:
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                if call.name == "read_file" and (path := string_argument(call, "path")):
                    paths[call.id] = path
        elif isinstance(message, ToolResult) and message.ref and message.status == "ok":
            path = paths.pop(message.call_id, "")
            if path and not is_stub(message):
                read.pop(path, None)  # newest last
                read[path] = message.ref
    return tuple(read.items())


async def gather(
    state: SessionState, context: AgentContext, files: Sequence[str], root: Path
) -> Anchors:
    """The anchors of `context`'s agent, as the fold has them now; `files` are the paths
    its tools changed, hashed as they are in the workspace at `root`."""
    goal, plan = _goal_and_plan(state, context)
    return Anchors(
        goal=goal,
        plan=plan,
        todos=[
            TodoAnchor(
                id=item.id,
                content=item.content,
                status=item.status,
                blocked_by=item.blocked_by,
                note=item.result or item.failure,
            )
            for item in state.todo_list(context.id).items.values()
        ],
        tasks=_tasks(state, context.id),
        mail=_mail(state, context.id),
        said=state.said.get(context.id, ()),
        read=files_read(context),
        files=await trio.to_thread.run_sync(_digests, root, files),
    )


def _goal_and_plan(state: SessionState, context: AgentContext) -> tuple[str, str]:
    """The agent's goal, and the plan it works from, as it stands now: the builder's is
    the approved version (its first message held the version approved then, which a
    re-plan may have replaced: that part of it is left out of the goal); a planner's, the
    latest version submitted."""
    plans = state.plans
    if context.id == MAIN and plans.approved is not None:
        goal = context.goal.split("\n\n" + TITLE, 1)[0]
        return goal, render(plans.approved)
    if is_planner(context.id) and plans.latest is not None:
        return context.goal, render(plans.latest.plan)
    return context.goal, ""


def _digests(root: Path, files: Sequence[str]) -> list[FileAnchor]:
    found = []
    for path in files:
        try:
            data = (root / path).read_bytes()
        except OSError:
            found.append(FileAnchor(path=path, digest=""))
            continue
        found.append(FileAnchor(path=path, digest=hashlib.sha256(data).hexdigest()))
    return found


def _tasks(state: SessionState, agent: str) -> list[TaskAnchor]:
    records = state.tasks.subtree(agent)[1:] if agent in state.tasks.tasks else []
    if agent not in state.tasks.tasks:  # the main agent: every task answers to it
        records = list(state.tasks.tasks.values())
    asked = {
        m.sender: m for m in state.mailbox.messages.values() if m.requires_ack and not m.answered_by
    }
    found = []
    for task in records:
        question = asked.get(task.task_id)
        found.append(
            TaskAnchor(
                task_id=task.task_id,
                agent_type=task.agent_type,
                state=task.state,
                description=task.description,
                progress=task.progress,
                questions=(question.summary,) if question is not None else (),
                settled=task.settled,
            )
        )
    return found


def _mail(state: SessionState, agent: str) -> list[str]:
    lines = [
        f"from {m.sender} ({m.kind}, not yet delivered): {m.summary}"
        for m in state.mailbox.undelivered(agent)
    ]
    lines.extend(
        f"from {m.sender} ({m.kind}, waits for your answer, id {m.message_id}): {m.summary}"
        for m in state.mailbox.messages.values()
        if m.recipient == agent and m.delivered and m.requires_ack and not m.answered_by
    )
    return lines


def facts(context: AgentContext, head: Sequence[Message], files: Sequence[str]) -> Facts:
    """What is known of `head` (the messages a summary replaces) without a model."""
    said = [
        m.content[:500]
        for m in head
        if isinstance(m, UserMessage) and not m.content.startswith(SUMMARY_HEADER)
    ]
    errors = [
        f"{m.name}: {m.content.splitlines()[0][:200] if m.content else '(no message)'}"
        for m in head
        if isinstance(m, ToolResult) and m.status == "error"
    ]
    replies = [m for m in head if isinstance(m, AssistantMessage) and m.text.strip()]
    return Facts(
        goal=context.goal,
        user_messages=said,
        files_touched=files,
        errors=errors[-20:],
        current_work=replies[-1].text.strip()[:1000] if replies else "",
    )
