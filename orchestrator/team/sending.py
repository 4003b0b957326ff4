"""An owner's messages to its own tasks (`send_message`): an instruction, or an answer
to an open question, checked before anything is posted; a settled task its owner
writes to is revived (at once, or once its dependencies have completed)."""

from __future__ import annotations

from orchestrator.errors import ToolFailed
from orchestrator.state.fold import SessionState
from orchestrator.state.mailbox import Mail, MailKind, Priority
from orchestrator.state.tasks import SETTLED, TaskRecord
from orchestrator.team import queries
from orchestrator.team.port import SessionLike
from orchestrator.team.postbox import Postbox
from orchestrator.team.scheduler import Scheduler
from orchestrator.tools.base import ToolOutput
from orchestrator.tools.coordination import SendMessageArgs


class Sending:
    """What `send_message` means: an owner's message to one of its tasks."""

    def __init__(self, session: SessionLike, postbox: Postbox, scheduler: Scheduler) -> None:
        self._session = session
        self._postbox = postbox
        self._scheduler = scheduler

    @property
    def _state(self) -> SessionState:
        return self._session.state

    def _task(self, task_id: str) -> TaskRecord:
        return queries.task(self._state, task_id)

    async def send(self, sender: str, args: SendMessageArgs, *, ref: str = "") -> ToolOutput:
        again = self._state.mailbox.by_call(sender, ref)
        if again is None:
            task = queries.own_task(self._state, sender, args.task)
            if task.kind == "tool":
                raise ToolFailed(
                    f"task {task.task_id} is a call in the background: it reads no messages "
                    "(cancel_task stops it, read_task_output reads its output)"
                )
            in_reply_to = self._replies_to(sender, task, args)
            was = task.state
            revives = was in SETTLED
            again = await self.write(
                sender,
                task,
                args.kind,
                args.text,
                priority=args.priority,
                in_reply_to=in_reply_to,
                ref=ref,
            )
            if revives:
                now = self._task(task.task_id)
                sent = f"sent {again.message_id} to task {task.task_id}, which had {was}"
                if now.state == "waiting_deps":
                    return ToolOutput(
                        f"{sent}: it is revived with its context, and acts on it once its "
                        f"dependencies have completed ({now.reason.removeprefix('revived; ')})"
                    )
                if now.state in SETTLED:
                    return ToolOutput(f"{sent}: it cannot run again: {now.reason}")
                return ToolOutput(f"{sent}: it is revived with its context to act on it")
        task = self._task(again.task_id)
        when = {
            "notify": "at its next turn",
            "urgent": "at its next step",
            "interrupt": "now, interrupting its model call",
        }[again.priority]
        return ToolOutput(
            f"sent {again.message_id} to task {task.task_id} ({task.state}); it reads it {when}"
        )

    def _replies_to(self, sender: str, task: TaskRecord, args: SendMessageArgs) -> str:
        """The message `args` replies to ("" for none), checked before anything is
        posted: a reply goes back to the task that sent what it replies to, and an
        answer answers an open question (the fold counts nothing else as an answer)."""
        mailbox = self._state.mailbox
        replied = args.in_reply_to
        if not replied:
            if args.kind != "answer":
                return ""
            # An answer without a reference answers what parked the task (its question
            # or its report of being blocked), else its oldest open question.
            open_questions = sorted(
                (m for m in mailbox.unanswered(sender) if m.sender == task.task_id),
                key=lambda m: (m.kind not in queries.PARKING, m.posted_seq),
            )
            return open_questions[0].message_id if open_questions else ""
        asked = mailbox.get(replied)
        if asked is None:
            # Gone from the live mailbox: delivered and needing nothing more (which agent
            # it went to is in the journal only), or never posted.
            if not mailbox.was_posted(replied):
                raise ToolFailed(f"no message {replied!r} in this session to reply to")
            if args.kind == "answer":
                raise ToolFailed(
                    f"message {replied} has no open question: it was answered already or "
                    "asked for no answer; send kind='instruction' without in_reply_to to "
                    "add something"
                )
            return replied
        if asked.recipient != sender:
            raise ToolFailed(f"message {replied} was not sent to you; you cannot reply to it")
        if asked.sender != task.task_id:
            if asked.requires_ack:
                raise ToolFailed(
                    f"question {replied} was asked by {asked.sender}, not {task.task_id}; "
                    f"answer it to {asked.sender}"
                )
            raise ToolFailed(
                f"message {replied} came from {asked.sender}, not {task.task_id}; send "
                f"your reply to {asked.sender}"
            )
        if args.kind == "answer" and (not asked.requires_ack or asked.answered_by):
            why = (
                f"it was answered already ({asked.answered_by})"
                if asked.answered_by
                else "it asked for no answer"
            )
            raise ToolFailed(
                f"message {replied} has no open question: {why}; send kind='instruction' "
                "without in_reply_to to add something"
            )
        return replied

    async def write(
        self,
        owner: str,
        task: TaskRecord,
        kind: MailKind,
        text: str,
        *,
        priority: Priority | None = None,
        in_reply_to: str = "",
        ref: str = "",
    ) -> Mail:
        """A message to `task` from `owner`: the task's owner revives it by writing if it
        has settled (at once, or once its dependencies have completed)."""
        mail = await self._postbox.post(
            owner,
            task.task_id,
            task.task_id,
            kind,
            text,
            priority=priority,
            in_reply_to=in_reply_to,
            ref=ref,
        )
        if self._task(task.task_id).state in SETTLED and owner == task.owner:
            await self._scheduler.revive(task.task_id, by=owner)
        return mail
