"""Calls in the background: a tool call that asked for it (`shell` with `background:
true`) becomes a task of kind `tool`, owned by the agent that made the call, and the
agent goes on meanwhile (docs/tools.md).

- **Write-ahead.** The task's `task_created` record is on disk before its process
  starts; its output goes to `tasks/<id>.output` in the session's directory as it comes
  (the first `background_output` bytes, and a line saying how much was cut), redacted
  as it comes (a secret split between two reads of the pipe too) and private to the user
  (0600 in a 0700 directory, as the journal). `read_task_output` redacts what it reads
  again, so that a read starting or ending inside a secret (in a file written before
  the redaction, or raw by anything else) shows no part of it.
- **Its end reaches its owner once, through the mailbox**: the task's state first (the
  outcome in its reason: `exit code 2`), then a message from the task (`completed`, or a
  `risk_alert` when it failed or its deadline passed) with the last lines of its output
  and where the whole of it is. A restart between the two posts the message then: a
  settled tool task whose latest message from it is older than its state has not told.
- **It is never run again by itself.** A tool task found running after a crash is
  `failed` as `interrupted`, its processes killed, its owner told with its output so
  far; the model decides what to do.
- **Limits**: `background_per_agent` and `background_per_session` calls at once (a call
  past them is refused with the running ones named), `background_deadline` seconds each
  (then cancelled, and its owner told). They count for neither the live-subagent limit
  nor write-scope conflicts: a shell command's writes are its sandbox's to keep.
- Cancelled by its owner (`cancel_task`), by the person, or with the session when it
  stops: its whole process group is killed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import stat
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, BinaryIO

import trio
from pydantic import BaseModel

from orchestrator.errors import ToolFailed, WorkspaceEscape
from orchestrator.layout import TASKS_DIR
from orchestrator.redaction import Redactor, StreamRedactor
from orchestrator.session.shown import duration
from orchestrator.state.events import Event, EventSink, ToolProgress
from orchestrator.state.mailbox import MailKind
from orchestrator.state.tasks import SETTLED, RanOn, TaskCreated, TaskRecord, TaskState, now_ms
from orchestrator.team import queries
from orchestrator.team.port import SessionLike
from orchestrator.team.postbox import Postbox
from orchestrator.team.scheduler import Scheduler
from orchestrator.team.settings import Seat
from orchestrator.text import escaped, label
from orchestrator.tools.base import AnyTool, ToolContext, ToolOutput, call_marker
from orchestrator.tools.shell import kill_marked

TAIL_CHARS = 2000  # of a call's output, in the message that tells its end
INTERRUPTED = "interrupted: the session stopped while it ran; it was not run again"
STOPPED = "stopped with the session"


class BackgroundCalls:
    """The session's calls in the background: `start` one (the `Backgrounder` the
    tools' context carries), `cancel` one, `read` one's output, `recover` them after a
    restart."""

    def __init__(
        self,
        session: SessionLike,
        sink: EventSink,
        seat: Seat,
        scheduler: Scheduler,
        postbox: Postbox,
        nursery: trio.Nursery,
        *,
        redact: Redactor | None = None,  # the run's: its output is redacted on disk
    ) -> None:
        self._session = session
        self._redact = redact or Redactor()
        self._sink = sink
        self._seat = seat
        self._scheduler = scheduler
        self._postbox = postbox
        self._nursery = nursery
        self._scopes: dict[str, trio.CancelScope] = {}
        self._outputs: dict[str, _OutputFile] = {}  # of the calls running here
        self._where = seat.directory  # (None: a temporary one, made by the first call)

    @property
    def _directory(self) -> Path:
        """Where the calls' output files are: the session's directory, or for a session
        kept nowhere (`in_memory`), a temporary directory made when first needed, not for
        every team."""
        if self._where is None:
            self._where = Path(tempfile.mkdtemp(prefix="orchestrator-"))
        return self._where

    # --- starting -----------------------------------------------------------------------

    @property
    def after(self) -> float | None:
        """Seconds past which a foreground shell call moves here (None: never)."""
        return self._seat.settings.background_after

    async def start(self, tool: AnyTool, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        again = self._session.state.tasks.by_call(ctx.agent, ctx.call)
        if again is not None:  # the call ran before a restart: its task is there
            return ToolOutput(self._handle(again))
        self._check_limits(ctx.agent)
        task = await self._begin(tool, args, ctx, lambda context: tool.run(args, context))
        return ToolOutput(self._handle(task))

    async def adopt(
        self,
        tool: AnyTool,
        args: BaseModel,
        ctx: ToolContext,
        go_on: Callable[[ToolContext], Awaitable[ToolOutput]],
        *,
        after: float,
    ) -> ToolOutput:
        """A foreground call that ran past `after` seconds, carried on here by `go_on`
        (past the limits too: it runs already; stopping it would lose its work)."""
        task = await self._begin(tool, args, ctx, go_on)
        return ToolOutput(f"still running after {duration(after)}, so it was {self._handle(task)}")

    async def _begin(
        self,
        tool: AnyTool,
        args: BaseModel,
        ctx: ToolContext,
        run: Callable[[ToolContext], Awaitable[ToolOutput]],
    ) -> TaskRecord:
        state = self._session.state
        settings = self._seat.settings
        owner = state.tasks.get(ctx.agent)
        with self._scheduler.new_task_id() as task_id:
            created = TaskCreated(
                agent=ctx.agent,
                task=task_id,
                agent_type=tool.name,
                description=describe(tool, args),
                owner_task=owner.task_id if owner is not None else "",
                depth=owner.depth + 1 if owner is not None else 1,
                write_scope=ctx.write_scope,
                resume="never",
                ref=ctx.call,
                deadline=now_ms() + int(settings.background_deadline * 1000),
                at=now_ms(),
                task_kind="tool",
                output=f"{TASKS_DIR}/{task_id}.output",
            )
            # Write-ahead: on disk before anything runs.
            await self._sink.emit(created, durable=True)
        await self._scheduler.set_state(
            task_id, "running", by=task_id, instance=f"{task_id}.1", ran_on=RanOn.here()
        )
        task = queries.task(state, task_id)
        self._nursery.start_soon(self._run, task, tool.name, run, ctx, name=f"background {task_id}")
        return task

    def _check_limits(self, agent: str) -> None:
        settings = self._seat.settings
        running = [t for t in self._session.state.tasks.live() if t.kind == "tool"]
        mine = [t.task_id for t in running if t.owner == agent]
        if len(mine) >= settings.background_per_agent:
            raise ToolFailed(
                f"you have {len(mine)} calls running in the background ({', '.join(mine)}), "
                f"as many as an agent may (background_per_agent = "
                f"{settings.background_per_agent}): wait for one (wait_tasks) or cancel one "
                "(cancel_task) first, or run this one in the foreground"
            )
        if len(running) >= settings.background_per_session:
            raise ToolFailed(
                f"the session has {len(running)} calls running in the background, as many "
                f"as it may (background_per_session = {settings.background_per_session}): "
                "wait for one of yours, or run this one in the foreground"
            )

    def _handle(self, task: TaskRecord) -> str:
        deadline = duration(self._seat.settings.background_deadline)
        return (
            f"started in the background as task {task.task_id} ({task.agent_type}: "
            f"{task.description}); "
            "go on with your work. Its end (how it ended, the last lines of its output) "
            "comes to you as a message; wait_tasks waits for it, read_task_output reads its "
            f"output so far, cancel_task stops it. It is cancelled if it runs past {deadline}."
        )

    # --- running ------------------------------------------------------------------------

    async def _run(
        self,
        task: TaskRecord,
        tool: str,
        run: Callable[[ToolContext], Awaitable[ToolOutput]],
        ctx: ToolContext,
    ) -> None:
        task_id = task.task_id
        output = _OutputFile(
            self._directory / task.output, self._seat.settings.background_output, self._redact
        )
        context = dataclasses.replace(
            ctx,
            output=output.write,
            events=_Progress(self, task_id, ctx.events),
        )
        outcome: ToolOutput | None = None
        failure = ""
        scope = trio.CancelScope()
        self._scopes[task_id] = scope
        self._outputs[task_id] = output
        returned = False
        try:
            with scope, trio.move_on_after(max(0.0, (task.deadline - now_ms()) / 1000)) as timer:
                try:
                    outcome = await run(context)
                except (ToolFailed, WorkspaceEscape) as exc:
                    failure = str(exc)
                except Exception as exc:  # a tool's bug ends its call, not the session
                    failure = f"{tool} crashed: {type(exc).__name__}: {exc}"
            if outcome is not None and output.written == 0:
                output.write(outcome.content.encode())  # a tool that returned, not streamed
            returned = True
        finally:
            self._scopes.pop(task_id, None)
            self._outputs.pop(task_id, None)
            output.close()
            if not returned:  # cancelled from outside: the session stops, so does the call
                with trio.CancelScope(shield=True):
                    await self._end(task_id, "cancelled", STOPPED)
        if scope.cancelled_caught:
            return  # cancelled by its owner or the person: its state says so already
        if timer.cancelled_caught:
            ran = duration(self._seat.settings.background_deadline)
            await self._end(task_id, "failed", f"cancelled: its deadline passed after {ran}")
        elif failure:
            await self._end(task_id, "failed", failure)
        else:
            assert outcome is not None
            first = outcome.content.split("\n", 1)[0] if outcome.exit_code is not None else ""
            if outcome.status == "ok":
                await self._end(task_id, "completed", first or "done")
            else:
                await self._end(task_id, "failed", first or "failed")

    async def _end(self, task_id: str, state: TaskState, reason: str) -> None:
        task = queries.task(self._session.state, task_id)
        if task.state in SETTLED:
            return
        # (escaped: an error's text may name a file that is not UTF-8, as a result's may)
        await self._scheduler.set_state(task_id, state, by=task_id, reason=escaped(reason))
        await self.tell(task_id)

    async def progress(self, task_id: str, message: str, percent: float | None) -> None:
        """A running call's progress: a `progress` message from its task to its owner."""
        owner = queries.task(self._session.state, task_id).owner
        data: dict[str, Any] = {} if percent is None else {"percent": int(percent)}
        await self._postbox.post(task_id, owner, task_id, "progress", escaped(message), data=data)

    async def tell(self, task_id: str) -> None:
        """Tell the task's owner how it ended, once (see the module)."""
        task = queries.task(self._session.state, task_id)
        if task.state not in SETTLED or task.progress_seq > task.changed_seq:
            return
        if task.state == "cancelled" and task.reason not in (STOPPED, INTERRUPTED):
            return  # whoever cancelled it knows
        path = self._directory / task.output
        size = path.stat().st_size if path.exists() else 0
        tail = _tail(path, self._redact)
        how = "finished" if task.state == "completed" else task.state
        summary = (
            f"background call {task_id} ({task.agent_type}: {task.description}) {how}: "
            f"{task.reason}\n"
            + (f"last of its output:\n{tail}\n" if tail else "it wrote no output\n")
            + f"(all of it: read_task_output task={task_id}; {size} bytes)"
        )
        kind: MailKind = "completed" if task.state == "completed" else "risk_alert"
        data: dict[str, Any] = {"output": task.output, "bytes": size}
        await self._postbox.post(task_id, task.owner, task_id, kind, summary, data=data)

    # --- from outside -------------------------------------------------------------------

    def cancel(self, task_id: str) -> None:
        """Stop a running call (its state is its canceller's to set)."""
        scope = self._scopes.get(task_id)
        if scope is not None:
            scope.cancel()

    def running(self, task_id: str) -> bool:
        return task_id in self._scopes

    def note(self, agent: str) -> str:
        """What each of `agent`'s model requests says after its context while it has
        calls running in the background (`ModelRequest.note`): which, for how long, how
        much output so far. "" when it has none."""
        running = [
            t for t in self._session.state.tasks.children(agent) if t.kind == "tool" and t.live
        ]
        if not running:
            return ""
        now = now_ms()
        lines = ["[running in the background]"]
        for task in running:
            output = self._outputs.get(task.task_id)  # counted as written: no disk read
            size = output.received if output is not None else 0
            took = duration((now - task.created) / 1000)
            lines.append(
                f"{task.task_id} {task.agent_type}: {task.description} (for {took}, {size} "
                "bytes of output)"
            )
        lines.append("Their ends come as messages; read_task_output reads one's output so far.")
        return "\n".join(lines)

    def read(self, agent: str, task_id: str, offset: int, limit: int) -> ToolOutput:
        """`read_task_output`: the output of `agent`'s tool task from byte `offset`."""
        task = queries.own_task(self._session.state, agent, task_id)
        if task.kind != "tool":
            raise ToolFailed(f"task {task_id} is a subagent's, not a call's: it has no output")
        path = self._directory / task.output
        # Read `margin` bytes more on either side: a secret the window cuts is seen whole.
        margin = max(self._redact.longest - 1, 0)
        start = max(offset - margin, 0)
        data = b""
        with contextlib.suppress(FileNotFoundError), path.open("rb") as file:
            file.seek(start)
            data = file.read(offset - start + limit + margin)
        size = path.stat().st_size if path.exists() else 0
        low = min(offset - start, len(data))
        high = min(low + limit, len(data))
        end = offset + high - low
        data = self._redact.masked(data, low, high)
        state = f"task {task_id} [{task.state}]" + (f" {task.reason}" if task.reason else "")
        more = f"; more from offset={end}" if end < size else "; that is all so far"
        head = f"{state}: bytes {offset}-{end} of {size}{more}"
        return ToolOutput(head + "\n" + data.decode("utf-8", errors="replace"))

    async def recover(self) -> list[str]:
        """After a restart: every tool task that was running is `cancelled` as interrupted
        (its work did not fail: the session stopped under it), its processes killed, its
        owner told (with its output so far); a settled one whose owner was not told yet is
        told now. Returns the interrupted ones."""
        interrupted = []
        for task in list(self._session.state.tasks.tasks.values()):
            if task.kind != "tool":
                continue
            if not task.settled:
                marker = call_marker(self._seat.session_id, task.owner, task.created_by)
                if self._seat.session_id:
                    await trio.to_thread.run_sync(kill_marked, marker)
                await self._scheduler.set_state(
                    task.task_id, "cancelled", by=task.task_id, reason=INTERRUPTED
                )
                interrupted.append(task.task_id)
            await self.tell(task.task_id)
        return interrupted


def describe(tool: AnyTool, args: BaseModel) -> str:
    """The task's description (its `agent_type` is the tool's name): a shell call's
    command, else the call's arguments (`steps=2`)."""
    command = getattr(args, "command", None)
    if tool.name == "shell" and isinstance(command, str):
        return label(command, 200)
    shown = args.model_dump(by_alias=True, exclude={"background"}, exclude_defaults=True)
    return label(", ".join(f"{k}={v!r}" for k, v in shown.items()) or "(no arguments)", 200)


class _OutputFile:
    """A background call's output on disk, redacted as it comes: the first `cap` bytes,
    then one line saying how many more there were. Private to the user, as the journal
    is: the file 0600, its directory 0700 (made so, or narrowed to it)."""

    def __init__(self, path: Path, cap: int, redact: Redactor) -> None:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if stat.S_IMODE(path.parent.stat().st_mode) & 0o077:  # made wider before
            path.parent.chmod(0o700)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        os.fchmod(fd, 0o600)  # (a file there before: narrowed too)
        self._file: BinaryIO | None = os.fdopen(fd, "ab")
        self._redact = StreamRedactor(redact)
        self._cap = cap
        self.written = 0  # kept on disk
        self.received = 0  # given, kept or cut
        self._cut = 0

    def write(self, data: bytes) -> None:
        if self._file is None:
            return
        self.received += len(data)
        self._keep(self._redact.feed(data))

    def _keep(self, data: bytes) -> None:
        assert self._file is not None
        room = self._cap - self.written
        kept = data[: max(room, 0)]
        if kept:
            self._file.write(kept)
            self._file.flush()
            self.written += len(kept)
        self._cut += len(data) - len(kept)

    def close(self) -> None:
        if self._file is None:
            return
        self._keep(self._redact.end())
        if self._cut:
            self._file.write(f"\n[output cut at {self._cap} bytes: {self._cut} more]\n".encode())
        self._file.close()
        self._file = None


class _Progress:
    """A background call's context's event sink: its progress becomes a `progress`
    message from its task to its owner (the owner reads it with its next mail), and is
    shown as the event it is too."""

    def __init__(self, calls: BackgroundCalls, task_id: str, inner: EventSink | None) -> None:
        self._calls = calls
        self._task_id = task_id
        self._inner = inner

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        if isinstance(event, ToolProgress):
            await self._calls.progress(self._task_id, event.message, event.percent)
        if self._inner is not None:
            await self._inner.emit(event, durable=durable)


def _tail(path: Path, redact: Redactor) -> str:
    """The last `TAIL_CHARS` of a call's output (whole lines where it can), redacted
    (one the tail cuts too)."""
    margin = max(redact.longest - 1, 0)
    try:
        with path.open("rb") as file:
            file.seek(0, 2)
            size = file.tell()
            start = max(0, size - TAIL_CHARS * 2)
            file.seek(max(0, start - margin))
            data = file.read()
    except FileNotFoundError:
        return ""
    before = len(data) - (size - start)
    text = redact.masked(data, before, len(data)).decode("utf-8", errors="replace")
    if len(text) > TAIL_CHARS:
        text = text[-TAIL_CHARS:]
        text = text.split("\n", 1)[1] if "\n" in text else text
        text = "…\n" + text
    return text.rstrip("\n")
