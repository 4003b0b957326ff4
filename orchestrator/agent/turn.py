"""The turn loop shared by the main agent and every subagent: model ⇄ tools until the
model answers without calling a tool, or the round limit is hit.

Everything a turn needs arrives in `TurnDeps`. The loop reads the agent's context
(`AgentContext`) and never writes it: it emits events to `deps.events`, a session (a
`LiveSession`, or a `MemorySession` off disk) that journals each event's record and folds
it into that same context. So the context after a crash, folded from the journal, is the
context the run had, by construction.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Protocol

import orjson
import trio
from pydantic import BaseModel, ValidationError

from orchestrator.errors import (
    CompactionFailed,
    ContextTooLong,
    HostCallbackFailed,
    ToolFailed,
    WorkspaceEscape,
)
from orchestrator.messages import AssistantMessage, ToolCall, ToolResult, ToolStatus
from orchestrator.models.base import Model, ModelEvent, ModelRequest, TextDelta, collect
from orchestrator.state.context import AgentContext
from orchestrator.state.events import (
    AssistantReplied,
    EventSink,
    PermissionGranted,
    TextStreamed,
    ToolCallFinished,
    ToolCallStarted,
    TurnEnded,
    TurnEndReason,
    TurnStarted,
    UsageUpdated,
)
from orchestrator.tools.base import AnyTool, ToolContext, ToolOutput, ToolRegistry, call_marker
from orchestrator.tools.permissions import (
    Approver,
    Denied,
    Grant,
    GrantLike,
    PermissionPolicy,
    Unasked,
    approve_all,
)
from orchestrator.tools.shell import kill_marked


class RoundHooks(Protocol):
    """What the multi-agent layer adds to a turn (see team/rounds.py): mail delivered at
    round boundaries, budgets that stop a turn, a model call an `interrupt` may cancel."""

    async def before_round(self, context: AgentContext) -> str | None:
        """Runs before each model call, with no call of the agent open. Returns why the
        turn must stop now (a spent budget), or None to go on."""
        ...

    def model_call(self, agent: str) -> AbstractContextManager[trio.CancelScope]:
        """The scope a model call runs in; cancelling it preempts that call."""
        ...

    def repeating(self, agent: str) -> bool:
        """Whether the agent makes the same call again and again: its turn ends, for the
        assessment to stop it."""
        ...

    def tool_call(self, agent: str) -> AbstractContextManager[trio.CancelScope]:
        """The scope an interruptible tool call runs in; an interrupt cancels it."""
        ...

    async def too_long(self, context: AgentContext, error: ContextTooLong) -> None:
        """The provider refused the agent's request as too long: compact its context
        (raises `CompactionFailed` when that cannot make it fit)."""
        ...


@dataclass
class TurnDeps:
    """What a turn needs. `events` must fold what it is given into the agent's context
    (a session, possibly fanned out to a screen after it)."""

    model: Model
    tools: ToolRegistry
    context: ToolContext
    events: EventSink
    policy: PermissionPolicy = field(default_factory=PermissionPolicy)
    approve: Approver = approve_all
    grants: Callable[[], Sequence[GrantLike]] = tuple  # the session's grants, as folded
    max_rounds: int = 50
    max_tokens: int | None = None
    temperature: float | None = None
    hooks: RoundHooks | None = None
    # Refuses a parsed call before it runs (a write outside the agent's write scope):
    # the reason the model should see, or None to let it run.
    guard: Callable[[ToolCall, BaseModel], Awaitable[str | None]] | None = None
    # Whether the turn's end waits for the disk. The main agent's does: its last reply is
    # what a person reads and acts on once the turn ends. A subagent's need not: nothing
    # outside the journal acts on it (session-format.md, write-ahead rule 3).
    durable_turn_end: bool = True
    # The usable input of the model's window, for the `usage` event (0: not known).
    usable: Callable[[], int] = int
    # What each request says after the context, for that request only (its agent's
    # calls running in the background): "" for nothing.
    note: Callable[[str], str] = lambda agent: ""


@dataclass(frozen=True)
class TurnOutcome:
    reason: TurnEndReason
    rounds: int
    final: AssistantMessage | None = None
    # Why the hooks stopped the turn before a round (a spent budget), with reason
    # `failed`; the turn is left open, for its caller to end as it acts on this.
    stopped: str = ""


async def run_turn(state: AgentContext, deps: TurnDeps) -> TurnOutcome:
    """Run one turn. Model errors propagate; tool errors become results the model sees."""
    await deps.events.emit(TurnStarted(agent=state.id))
    hooks = deps.hooks
    rounds = too_long = 0
    while rounds < deps.max_rounds:
        if hooks is not None:
            stopped = await hooks.before_round(state)
            if stopped is not None:
                return TurnOutcome("failed", rounds, stopped=stopped)
        try:
            reply = await _ask_model(state, deps)
        except ContextTooLong as exc:
            # Compact and ask again; twice in a row for one round means compaction does
            # not help (each must shrink the request, or the task fails).
            too_long += 1
            if hooks is None or isinstance(exc, CompactionFailed) or too_long > 2:
                raise
            await hooks.too_long(state, exc)
            continue
        too_long = 0
        if reply is None:
            continue  # preempted by an interrupt, which the next round starts with
        rounds += 1
        if not reply.tool_calls:
            await deps.events.emit(
                TurnEnded(agent=state.id, reason="completed", rounds=rounds),
                durable=deps.durable_turn_end,
            )
            return TurnOutcome("completed", rounds, reply)
        _, ends_turn = await _run_calls(state, state.pending_calls(), deps)
        if ends_turn or (hooks is not None and hooks.repeating(state.id)):
            await deps.events.emit(
                TurnEnded(agent=state.id, reason="yielded", rounds=rounds),
                durable=deps.durable_turn_end,
            )
            return TurnOutcome("yielded", rounds, reply)
    await deps.events.emit(
        TurnEnded(agent=state.id, reason="max_rounds", rounds=rounds), durable=deps.durable_turn_end
    )
    return TurnOutcome("max_rounds", rounds)


async def _ask_model(state: AgentContext, deps: TurnDeps) -> AssistantMessage | None:
    """The model's reply, journaled; None when an interrupt cancelled the call."""
    request = ModelRequest(
        messages=state.view(),
        tools=deps.tools.specs(),
        agent=state.id,
        role=state.role,
        step=state.steps,
        max_tokens=deps.max_tokens,
        temperature=deps.temperature,
        cache_key=cache_key(deps.context.session, state.role),
        note=deps.note(state.id),
    )
    scope = deps.hooks.model_call(state.id) if deps.hooks else contextlib.nullcontext()
    reply = None
    with scope as preemptible:
        async with deps.model.stream(request) as stream:

            async def forward_text() -> AsyncIterator[ModelEvent]:
                async for event in stream:
                    if isinstance(event, TextDelta):
                        await deps.events.emit(TextStreamed(agent=state.id, text=event.text))
                    yield event

            reply = await collect(forward_text())
    if reply is None:
        assert preemptible is not None
        assert preemptible.cancelled_caught
        return None
    # Write-ahead: the reply is journaled before any of its tool calls runs.
    await deps.events.emit(AssistantReplied(agent=state.id, message=reply, model=deps.model.name))
    if reply.usage is not None:
        context, usable = state.count().tokens, deps.usable()
        usage = UsageUpdated(
            agent=state.id, usage=reply.usage, total=state.usage, context=context, usable=usable
        )
        await deps.events.emit(usage)
    # The reply as folded, which is what its calls run from: a sink that scrubs secrets
    # (state/scrub.py) folds a redacted copy, and the calls run redacted, as they are
    # journaled, so a call run again after a crash does what the first run did.
    folded = state.messages[-1] if state.messages else None
    return folded if isinstance(folded, AssistantMessage) else reply


@functools.lru_cache(maxsize=64)
def cache_key(session: str, role: str) -> str:
    """A provider's prompt-cache key for the agents of `role` in `session`: stable, and
    made of nothing but those two names (hashed), so it carries no secret."""
    if not session:
        return ""
    return "orch-" + hashlib.sha256(f"{session}/{role}".encode()).hexdigest()[:24]


def _is_read_only(call: ToolCall, tools: ToolRegistry) -> bool:
    tool = tools.get(call.name)
    # An unknown tool only produces an error result: it changes nothing.
    return tool is None or tool.read_only


def _segments(
    calls: Sequence[tuple[str, ToolCall]], tools: ToolRegistry
) -> list[list[tuple[str, ToolCall]]]:
    """Group calls so each run of read-only calls runs together and every writer runs
    alone, in the order the model gave."""
    groups: list[list[tuple[str, ToolCall]]] = []
    for ref, call in calls:
        if _is_read_only(call, tools) and groups and _is_read_only(groups[-1][0][1], tools):
            groups[-1].append((ref, call))
        else:
            groups.append([(ref, call)])
    return groups


async def run_tool_calls(
    state: AgentContext, calls: Sequence[tuple[str, ToolCall]], deps: TurnDeps
) -> list[ToolResult]:
    """Run the calls (ref, call) of one reply; every call ends with exactly one result in
    the context, `cancelled` for those a cancellation cut short."""
    results, _ = await _run_calls(state, calls, deps)
    return results


async def _run_calls(
    state: AgentContext, calls: Sequence[tuple[str, ToolCall]], deps: TurnDeps
) -> tuple[list[ToolResult], bool]:
    """`run_tool_calls`, and whether one of the calls ended the agent's turn.

    A call that ends the turn (`complete`, `ask_decision`, `report_blocked`) is the last
    of its reply to run: the calls before it have finished when it runs, and those after
    it are settled `cancelled`, naming it, without running. Nothing a task does after it
    has handed in its work (or asked, and is waiting) can change what it handed in."""
    finished: dict[str, ToolResult] = {}
    ends_turn = False
    ended_by = ""  # the call that ended the turn, for the calls after it

    async def record(ref: str, call: ToolCall, outcome: _Outcome) -> None:
        nonlocal ends_turn, ended_by
        result, delivers, ends = outcome
        finished[ref] = result
        if ends and not ends_turn:
            ended_by = f"{call.name} (call {call.id})"
        ends_turn = ends_turn or ends
        await deps.events.emit(
            ToolCallFinished(agent=state.id, ref=ref, result=result, delivers=delivers)
        )

    try:
        for group in _segments(calls, deps.tools):
            if ends_turn:
                break
            # Starts are journaled in the model's order, even for calls that then overlap.
            started = [
                (ref, call, await _start_call(state, ref, call, deps)) for ref, call in group
            ]
            if len(started) == 1:
                ref, call, parsed = started[0]
                await record(ref, call, await _execute(ref, call, parsed, deps))
                continue
            async with trio.open_nursery() as nursery:
                for ref, call, parsed in started:

                    async def run_and_record(
                        ref: str = ref, call: ToolCall = call, parsed: Parsed = parsed
                    ) -> None:
                        await record(ref, call, await _execute(ref, call, parsed, deps))

                    nursery.start_soon(run_and_record)
    finally:
        unfinished = [(ref, call) for ref, call in calls if ref not in finished]
        if unfinished:
            with trio.CancelScope(shield=True), trio.move_on_after(10):
                why = (
                    f"not run: {ended_by} ended this turn before it; a call after it in "
                    "the same reply never runs"
                    if ended_by
                    else "cancelled before it finished"
                )
                for ref, call in unfinished:
                    cancelled = ToolResult(
                        call_id=call.id, name=call.name, status="cancelled", content=why
                    )
                    await record(ref, call, (cancelled, (), False))
    return [finished[ref] for ref, _ in calls], ends_turn


Parsed = tuple[AnyTool, BaseModel] | str
"""A call's tool and validated arguments, or the error the model should see instead."""


class Unapproved(str):
    """The error of a call refused for want of anyone to approve it: its result's status
    is `unapproved`, a fact the session's outcome counts (never read back from text)."""


_Outcome = tuple[ToolResult, tuple[str, ...], bool]
"""A call's result, the mailbox messages it delivers, and whether it ends the turn."""


def _parse_call(call: ToolCall, tools: ToolRegistry) -> Parsed:
    """The tool and validated arguments of a call, or the error the model should see."""
    tool = tools.get(call.name)
    if tool is None:
        known = ", ".join(tools.names()) or "none"
        return f"unknown tool {call.name!r}; available tools: {known}"
    try:
        raw = orjson.loads(call.arguments or "{}")
    except orjson.JSONDecodeError as exc:
        return f"arguments of {call.name} are not valid JSON ({exc}): {call.arguments[:200]!r}"
    if not isinstance(raw, dict):
        return f"arguments of {call.name} must be a JSON object, got {type(raw).__name__}"
    fields = tool.args_model.model_fields
    accepted = set(fields) | {f.alias for f in fields.values() if f.alias}
    unknown = [key for key in raw if key not in accepted]
    if unknown:
        # A misspelt argument silently ignored would run the call with a default instead.
        names = ", ".join(repr(key) for key in unknown)
        expected = ", ".join(f.alias or name for name, f in fields.items()) or "none"
        return f"unknown argument {names} for {call.name}; its arguments are: {expected}"
    try:
        return tool, tool.args_model.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
            for err in exc.errors()
        )
        return f"invalid arguments for {call.name}: {problems}"


async def _start_call(state: AgentContext, ref: str, call: ToolCall, deps: TurnDeps) -> Parsed:
    """Parse the call, settle its permission, and record its start. Asking comes first,
    so a crash while the user thinks is never mistaken for a half-run side effect."""
    parsed = _parse_call(call, deps.tools)
    if isinstance(parsed, tuple) and deps.guard is not None:
        refused = await deps.guard(call, parsed[1])
        if refused is not None:
            parsed = refused
    if isinstance(parsed, tuple):
        parsed = await _permit(call, parsed, deps)
    read_only = _is_read_only(call, deps.tools)
    # A call that will not run (malformed, refused) has no effect to repeat: after a
    # crash it is simply dispatched again, and asked about again.
    idempotent = parsed[0].idempotent if isinstance(parsed, tuple) else True
    outside = isinstance(parsed, tuple) and not parsed[0].journaled
    # Write-ahead: before a tool that changes anything outside the journal runs, its reply
    # is on disk, and so is its start when it must not be repeated (only such starts are
    # journaled at all: every other call is simply run again after a crash). What a
    # journaled tool (delegate, todo_write) changes is records, which follow the reply.
    await deps.events.emit(
        ToolCallStarted(
            agent=state.id, ref=ref, call=call, read_only=read_only, idempotent=idempotent
        ),
        durable=not read_only and (outside or not idempotent),
    )
    return parsed


async def _permit(call: ToolCall, parsed: tuple[AnyTool, BaseModel], deps: TurnDeps) -> Parsed:
    tool = parsed[0]
    unasked = tool.read_only or not tool.approval
    decision = deps.policy.decide(call, read_only=unasked, grants=deps.grants())
    if decision == "allow" and tool.asks_anyway(parsed[1]) is not None:
        decision = "ask"  # (a shell command asking for the network: each time)
    if decision == "allow":
        return parsed
    answer = await deps.approve(call) if decision == "ask" else False
    if isinstance(answer, Grant):
        agent = deps.context.agent
        await deps.events.emit(
            PermissionGranted(agent=agent, tool=answer.tool, pattern=answer.pattern)
        )
        return parsed
    if isinstance(answer, Unasked):
        return Unapproved(
            f"{tool.name} was not run: it needs a person's approval and nobody can be asked "
            "(no terminal, and no --yes). Do not retry it; finish what you can without it, "
            "and say what is left undone"
        )
    if answer:
        return parsed
    if isinstance(answer, Denied):
        return f"{tool.name} was not approved: {answer.reason}; do not retry it"
    how = "denied by the permission policy" if decision == "deny" else "not approved"
    return f"{tool.name} was {how}; do not retry it"


async def _execute(ref: str, call: ToolCall, parsed: Parsed, deps: TurnDeps) -> _Outcome:
    """The call's result, the mailbox messages it delivers (see mailbox.py), and whether
    it ends the turn."""

    def result(status: ToolStatus, content: str, changed: tuple[str, ...] = ()) -> _Outcome:
        return (
            ToolResult(
                call_id=call.id, name=call.name, status=status, content=content, changed=changed
            ),
            (),
            False,
        )

    if isinstance(parsed, str):
        status: ToolStatus = "unapproved" if isinstance(parsed, Unapproved) else "error"
        return result(status, str(parsed))  # a plain str: the record's codec takes no subclass
    tool, args = parsed
    hooks = deps.hooks
    scope = (
        hooks.tool_call(deps.context.agent)
        if hooks is not None and tool.interruptible
        else contextlib.nullcontext()
    )
    output = None
    try:
        with scope:
            context = dataclasses.replace(
                deps.context, call=ref, tool=call.name, events=deps.events
            )
            if _in_background(tool, args, context):
                assert context.background is not None
                output = await context.background.start(tool, args, context)
            else:
                output = await tool.run(args, context)
    except (ToolFailed, WorkspaceEscape) as exc:
        return result("error", str(exc))
    except HostCallbackFailed:
        raise  # the host program's bug, not the tool's: it stops the agent, as an approver's
    except Exception as exc:  # a tool bug must not kill the agent
        return result("error", f"{tool.name} crashed: {type(exc).__name__}: {exc}")
    if output is None:
        return result("cancelled", "stopped by an interrupting message before it finished")
    outcome = result(output.status, output.content, output.changed)
    return outcome[0], output.delivers, output.ends_turn


def _in_background(tool: AnyTool, args: BaseModel, context: ToolContext) -> bool:
    """Whether the call asked for the background and may go there (a turn without a
    team to run it there runs it in the foreground)."""
    asked = bool(getattr(args, "background", False))
    return tool.background and asked and context.background is not None


INTERRUPTED = (
    "interrupted: the session stopped while this call was running, so it may or may not "
    "have taken effect. Check the workspace before you repeat it."
)


async def settle_pending_calls(agent: AgentContext, deps: TurnDeps) -> bool:
    """Give every call of the last reply a result before the model is asked again: a call
    whose side effect started and never finished is settled by its tool when the
    workspace tells how it went (`Tool.recover`), else reported `interrupted`; any other
    call (idempotent, or never started) is dispatched now, as it would have been.
    Returns whether a call run now ended the agent's turn (an `ask_decision`, say)."""
    rerun = []
    for ref, call in agent.pending_calls():
        if ref in agent.effects:
            # What the call started may still be running (orchestrator was killed, its
            # command was not): stop it before anything else happens in the workspace.
            marker = call_marker(deps.context.session, agent.id, ref)
            await trio.to_thread.run_sync(kill_marked, marker)
            settled = await _recover(ref, call, deps)
            result = (
                ToolResult(
                    call_id=call.id, name=call.name, status="interrupted", content=INTERRUPTED
                )
                if settled is None
                else ToolResult(
                    call_id=call.id,
                    name=call.name,
                    status=settled.status,
                    content=settled.content,
                    changed=settled.changed,
                )
            )
            await deps.events.emit(ToolCallFinished(agent=agent.id, ref=ref, result=result))
        else:
            rerun.append((ref, call))
    if not rerun:
        return False
    _, ends_turn = await _run_calls(agent, rerun, deps)
    return ends_turn


async def _recover(ref: str, call: ToolCall, deps: TurnDeps) -> ToolOutput | None:
    """Let the tool of a cut-off call clean up what it left half done, and settle the
    call if it can tell how it went (`Tool.recover`); None when it cannot (best effort: a
    failure here must not stop the resume)."""
    parsed = _parse_call(call, deps.tools)
    if isinstance(parsed, str):
        return None
    tool, args = parsed
    try:
        return await tool.recover(args, dataclasses.replace(deps.context, call=ref))
    except (ToolFailed, WorkspaceEscape) as exc:
        return ToolOutput.error(str(exc))
    except Exception:
        return None
