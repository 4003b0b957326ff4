"""The mailbox: typed messages between an agent and the tasks it owns, their records and
their fold.

A message is journaled when it is posted (`message_posted`). It enters its recipient's
context by one record that is also its acknowledgement: `messages_delivered` (a user
message holding one or more messages, at a round boundary or before a turn), or the
result of the `wait_tasks` call that returned it (`call_result` with `delivers`). So after
a crash a message is either in the context, and marked delivered, or in neither: nothing
is lost and nothing is delivered twice.

Priorities: `notify` waits for the recipient's next turn; `urgent` wakes an idle recipient
and is delivered at the next round boundary of a running turn; `interrupt` also cancels
the recipient's model call in flight. The wake-ups themselves are the runtime's
(`team.py`); this module is the data and the rules.

The live mailbox (`Mailbox`, in the session's state and its snapshot) is bounded by the
work in flight, not by the history: a message leaves it once it needs nothing more (it
is delivered, answered if it asked for an answer, and the call that posted it has its
result). The journal keeps every message; `MailHistory` folds them all back for people
(`sessions show`) and tests.
"""

from collections.abc import Iterable, Sequence
from typing import Any, Literal

import msgspec

from orchestrator.eventbase import EventBase, FoldError

MAIN = "main"  # the main agent: the owner of the top tasks, whose records speak for the session
USER = "user"  # the sender of what the person says to the main agent

MailKind = Literal[
    "progress",
    "completed",
    "blocked",
    "decision_required",
    "risk_alert",
    "direction_change_request",
    "instruction",
    "answer",
]
Priority = Literal["notify", "urgent", "interrupt"]

FROM_TASK: frozenset[MailKind] = frozenset(
    {
        "progress",
        "completed",
        "blocked",
        "decision_required",
        "risk_alert",
        "direction_change_request",
    }
)

DEFAULT_PRIORITY: dict[MailKind, Priority] = {
    "progress": "notify",
    "completed": "urgent",
    "blocked": "urgent",
    "decision_required": "urgent",
    "risk_alert": "urgent",
    "direction_change_request": "urgent",
    "instruction": "urgent",
    "answer": "urgent",
}

RANK: dict[str, int] = {"notify": 0, "urgent": 1, "interrupt": 2}


class MessagePosted(EventBase, frozen=True, kw_only=True, tag="message_posted"):
    """Record: `agent` posted message `id` to agent `to`, about task `task`."""

    id: str
    to: str
    task: str
    mail: MailKind
    priority: Priority = "notify"
    summary: str
    data: dict[str, Any] | None = None  # per kind: envelope, options, category, percent
    requires_ack: bool = False
    in_reply_to: str = ""
    ref: str = ""  # the posting call's ref: a re-run of that call finds this message
    at: int = 0


class MessagesDelivered(EventBase, frozen=True, tag="messages_delivered"):
    """Record: messages `ids` entered `agent`'s context as one user message, `content`."""

    ids: tuple[str, ...]
    content: str


MailRecords = MessagePosted | MessagesDelivered
"""The mailbox's records (see `Record` in state/events.py)."""


class Mail(msgspec.Struct, kw_only=True):
    """A message as the session knows it (folded and snapshotted: a msgspec struct)."""

    message_id: str
    kind: MailKind
    priority: Priority
    sender: str
    recipient: str
    task_id: str
    summary: str
    data: dict[str, Any] | None = None
    requires_ack: bool = False
    in_reply_to: str = ""
    posted_seq: int
    delivered_seq: int | None = None
    answered_by: str = ""  # the message that answered it, if it required one
    ref: str = ""
    at: int = 0

    @property
    def delivered(self) -> bool:
        return self.delivered_seq is not None

    @classmethod
    def of(cls, seq: int, record: MessagePosted) -> "Mail":
        """The message a `message_posted` record at `seq` posts."""
        return cls(
            message_id=record.id,
            kind=record.mail,
            priority=record.priority,
            sender=record.agent,
            recipient=record.to,
            task_id=record.task,
            summary=record.summary,
            data=record.data,
            requires_ack=record.requires_ack,
            in_reply_to=record.in_reply_to,
            posted_seq=seq,
            ref=record.ref,
            at=record.at,
        )


class PostedIds:
    """The ids of every message posted, in little memory. The team gives `m1`, `m2`, ...
    in order, so this is a mark (every id up to `m<upto>`) and the few ids past it that
    reached the journal out of order (two posts waiting for room in the journal)."""

    __slots__ = ("above", "upto")

    def __init__(self, upto: int = 0, above: set[str] | None = None) -> None:
        self.upto = upto
        self.above = above or set()

    def add(self, message_id: str) -> None:
        self.above.add(message_id)
        while (following := f"m{self.upto + 1}") in self.above:
            self.above.discard(following)
            self.upto += 1

    def __contains__(self, message_id: object) -> bool:
        if not isinstance(message_id, str):
            return False
        if message_id in self.above:
            return True
        number = message_id[1:]
        return (
            message_id[:1] == "m"
            and number.isdigit()
            and number[0] != "0"
            and int(number) <= self.upto
        )

    def __len__(self) -> int:
        return self.upto + len(self.above)


class MailboxSummary(msgspec.Struct, kw_only=True):
    """The mailbox in a snapshot: the live messages, which of them wait for their
    posting call's result, and the ids posted (`PostedIds`)."""

    live: list[Mail] = msgspec.field(default_factory=list)
    posted_upto: int = 0
    posted_above: list[str] = msgspec.field(default_factory=list)
    open_calls: list[str] = msgspec.field(default_factory=list)


class Mailbox(msgspec.Struct):
    """The live mail of a session: per recipient those not yet delivered (FIFO), the
    questions not yet answered, and messages whose posting call has no result yet (a
    re-run of that call must find them). Any other message has left: it is in the
    journal (`MailHistory`), and `posted` counts every message ever posted."""

    messages: dict[str, Mail] = msgspec.field(default_factory=dict)
    # Per recipient, the ids not yet delivered (in posting order) and those asking an
    # answer not yet given: kept as the fold goes, so no query walks every message.
    waiting: dict[str, dict[str, None]] = msgspec.field(default_factory=dict)
    asking: dict[str, dict[str, None]] = msgspec.field(default_factory=dict)
    # (sender, ref) -> id, while the posting call `ref` has no result.
    _refs: dict[tuple[str, str], str] = msgspec.field(default_factory=dict)
    posted_ids: PostedIds = msgspec.field(default_factory=PostedIds)

    @property
    def posted_count(self) -> int:
        """Every message posted, live or not."""
        return len(self.posted_ids)

    def undelivered(self, agent: str, *, at_least: Priority = "notify") -> list[Mail]:
        """`agent`'s undelivered messages of at least that priority, oldest first."""
        floor = RANK[at_least]
        found = [self.messages[i] for i in self.waiting.get(agent, ())]
        return [m for m in found if RANK[m.priority] >= floor]

    def unanswered(self, agent: str) -> list[Mail]:
        """Messages to `agent` that asked for an answer it has not given."""
        return [self.messages[i] for i in self.asking.get(agent, ())]

    def by_call(self, sender: str, ref: str) -> Mail | None:
        """The message `sender`'s call `ref` posted, if it ran before a crash (and so has
        no result yet)."""
        message_id = self._refs.get((sender, ref)) if ref else None
        return None if message_id is None else self.messages[message_id]

    def get(self, message_id: str) -> Mail | None:
        """A live message (see the class)."""
        return self.messages.get(message_id)

    def was_posted(self, message_id: str) -> bool:
        """Whether `message_id` names a message of this session, live or not."""
        return message_id in self.posted_ids

    def dump(self) -> list[dict[str, Any]]:
        return [msgspec.to_builtins(m) for m in self.messages.values()]

    def summary(self) -> MailboxSummary:
        """What a snapshot keeps: the live messages, and what is known of the others."""
        return MailboxSummary(
            live=[msgspec.structs.replace(m) for m in self.messages.values()],
            posted_upto=self.posted_ids.upto,
            posted_above=sorted(self.posted_ids.above),
            open_calls=sorted(self._refs.values()),
        )

    @classmethod
    def load(cls, summary: MailboxSummary) -> "Mailbox":
        box = cls(posted_ids=PostedIds(summary.posted_upto, set(summary.posted_above)))
        open_calls = set(summary.open_calls)
        for item in summary.live:
            mail = msgspec.structs.replace(item)
            box.messages[mail.message_id] = mail
            box._index(mail, call_open=mail.message_id in open_calls)
        return box

    def _index(self, mail: Mail, *, call_open: bool = True) -> None:
        if mail.delivered_seq is None:
            self.waiting.setdefault(mail.recipient, {})[mail.message_id] = None
        if mail.requires_ack and not mail.answered_by:
            self.asking.setdefault(mail.recipient, {})[mail.message_id] = None
        if mail.ref and call_open:
            self._refs[mail.sender, mail.ref] = mail.message_id

    def _needs_nothing(self, mail: Mail) -> bool:
        return (
            mail.delivered_seq is not None
            and (not mail.requires_ack or bool(mail.answered_by))
            and (not mail.ref or self._refs.get((mail.sender, mail.ref)) != mail.message_id)
        )

    def _retire(self, mail: Mail) -> None:
        """Let a message go once it needs nothing more (the journal keeps it)."""
        if self._needs_nothing(mail):
            del self.messages[mail.message_id]

    # --- the fold ---------------------------------------------------------------------

    def posted(self, seq: int, record: MessagePosted) -> Mail:
        if self.was_posted(record.id):
            raise FoldError(f"message {record.id} was already posted")
        mail = Mail.of(seq, record)
        self.posted_ids.add(record.id)
        self.messages[record.id] = mail
        before = self._refs.get((record.agent, record.ref)) if record.ref else None
        self._index(mail)
        if before is not None:  # the same call posted twice: the first is found no more
            self._retire(self.messages[before])
        asked = self.messages.get(record.in_reply_to)
        if asked is not None and answers(record, asked):
            asked.answered_by = record.id
            self.asking.get(asked.recipient, {}).pop(asked.message_id, None)
            self._retire(asked)
        return mail

    def delivered(self, seq: int, agent: str, ids: Sequence[str]) -> None:
        waiting = self.waiting.get(agent, {})
        for message_id in ids:
            mail = self.messages.get(message_id)
            if mail is None:
                if self.was_posted(message_id):  # it left the live mailbox: delivered
                    raise FoldError(f"message {message_id} was delivered twice")
                raise FoldError(f"message {message_id} to {agent!r} was never posted")
            if mail.recipient != agent:
                raise FoldError(f"message {message_id} to {agent!r} was never posted")
            if mail.delivered_seq is not None:
                raise FoldError(f"message {message_id} was delivered twice")
            mail.delivered_seq = seq
            del waiting[message_id]
            self._retire(mail)

    def call_done(self, agent: str, ref: str) -> None:
        """`agent`'s call `ref` has its result: a message it posted is found no more by
        `by_call`, and leaves if it needs nothing else."""
        message_id = self._refs.pop((agent, ref), None)
        if message_id is not None:
            self._retire(self.messages[message_id])


def answers(reply: MessagePosted, asked: Mail) -> bool:
    """Whether `reply` answers the question `asked`: it is open, and the reply goes back
    to the agent that asked it, from the one it was asked of (or from the person, who
    may answer any question). A reply sent elsewhere answers nothing."""
    return (
        asked.requires_ack
        and not asked.answered_by
        and reply.to == asked.sender
        and reply.agent in (asked.recipient, USER)
    )


class MailHistory(msgspec.Struct):
    """Every message of a session as the journal tells it, delivered and answered ones
    included: the fold of the same records as `Mailbox`, keeping everything. For people
    (`sessions show`) and tests; a running session never holds it."""

    messages: dict[str, Mail] = msgspec.field(default_factory=dict)

    def apply(self, seq: int, record: object) -> None:
        """Fold any record: those that post or deliver mail change the history."""
        if isinstance(record, MessagePosted):
            self.posted(seq, record)
        elif isinstance(record, MessagesDelivered):
            self.delivered(seq, record.ids)
        elif delivers := getattr(record, "delivers", None):  # a wait_tasks call's result
            self.delivered(seq, delivers)

    def posted(self, seq: int, record: MessagePosted) -> None:
        self.messages[record.id] = mail = Mail.of(seq, record)
        asked = self.messages.get(mail.in_reply_to)
        if asked is not None and answers(record, asked):
            asked.answered_by = mail.message_id

    def delivered(self, seq: int, ids: Iterable[str]) -> None:
        for message_id in ids:
            mail = self.messages.get(message_id)
            if mail is not None and mail.delivered_seq is None:
                mail.delivered_seq = seq

    def dump(self) -> list[dict[str, Any]]:
        return [msgspec.to_builtins(m) for m in self.messages.values()]


MESSAGE_CHARS = 4000
DELIVERY_CHARS = 16000


class Caps(msgspec.Struct, frozen=True):
    """Bounds on what enters a context from a child: each message's text, and all of
    one delivery together. Longer text is cut with a pointer to the full record."""

    message_chars: int = MESSAGE_CHARS
    delivery_chars: int = DELIVERY_CHARS
