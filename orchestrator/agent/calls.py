"""The calls of one reply, run: each parsed, its permission settled and its start
recorded, then run (read-only calls together, every other alone, in the model's order),
and each ended with exactly one result in the context; or, when its approver answers
`Later`, parked: it and the calls after it in the reply stay open, without a result,
until a person's decision is journaled (state/approvals.py) and the agent runs them."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import assert_never

import msgspec
import trio
from pydantic import BaseModel

from orchestrator.agent.deps import TurnDeps
from orchestrator.agent.parsing import Parked, Parsed, Ready, Refused, Unapproved, parse_call
from orchestrator.errors import HostCallbackFailed, ToolFailed, ToolInterrupted, WorkspaceEscape
from orchestrator.messages import ToolCall, ToolResult, ToolStatus
from orchestrator.state.approvals import ApprovalParked
from orchestrator.state.context import AgentContext
from orchestrator.state.events import PermissionGranted, ToolCallFinished, ToolCallStarted
from orchestrator.text import escaped
from orchestrator.tools.base import AnyTool, ToolContext, ToolRegistry
from orchestrator.tools.permissions import Answer, Denied, Grant, Later, Unasked

_NO_SCOPE = contextlib.nullcontext()  # (reusable: it keeps nothing)


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


class Outcome(msgspec.Struct, frozen=True):
    """How a call ended: its result, the mailbox messages it delivers (journaled with the
    result, as their delivery: see mailbox.py), and whether it ends the agent's turn."""

    result: ToolResult
    delivers: tuple[str, ...] = ()
    ends_turn: bool = False


async def run_tool_calls(
    state: AgentContext, calls: Sequence[tuple[str, ToolCall]], deps: TurnDeps
) -> list[ToolResult]:
    """Run the calls (ref, call) of one reply; every call ends with exactly one result in
    the context, `cancelled` for those a cancellation cut short."""
    results, _, _ = await run_calls(state, calls, deps)
    return results


async def run_calls(
    state: AgentContext, calls: Sequence[tuple[str, ToolCall]], deps: TurnDeps
) -> tuple[list[ToolResult], bool, bool]:
    """`run_tool_calls`, whether one of the calls ended the agent's turn, and whether one
    parked (its approver answered `Later`).

    A call that ends the turn (`complete`, `ask_decision`, `report_blocked`) is the last
    of its reply to run: the calls before it have finished when it runs, and those after
    it are settled `cancelled`, naming it, without running. Nothing a task does after it
    has handed in its work (or asked, and is waiting) can change what it handed in.

    A call that parks gets no result, and nor do the calls after it: they stay open, to
    run in the model's order once the person has decided (the results list has only
    the calls that ended)."""
    finished: dict[str, ToolResult] = {}
    parked = False
    ends_turn = False
    ended_by = ""  # the call that ended the turn, for the calls after it

    async def record(ref: str, call: ToolCall, outcome: Outcome) -> None:
        nonlocal ends_turn, ended_by
        finished[ref] = outcome.result
        if outcome.ends_turn and not ends_turn:
            ended_by = f"{call.name} (call {call.id})"
        ends_turn = ends_turn or outcome.ends_turn
        await _checkpoint(state, ref, call, outcome.result, deps)
        await deps.events.emit(
            ToolCallFinished(
                agent=state.id, ref=ref, result=outcome.result, delivers=outcome.delivers
            )
        )

    try:
        for group in _segments(calls, deps.tools):
            if ends_turn or parked:
                break
            # Starts are journaled in the model's order, even for calls that then overlap.
            started = [
                (ref, call, await _start_call(state, ref, call, deps)) for ref, call in group
            ]
            parked = any(isinstance(parsed, Parked) for _, _, parsed in started)
            started = [item for item in started if not isinstance(item[2], Parked)]
            if not started:
                continue
            if len(started) == 1:
                ref, call, parsed = started[0]
                await record(ref, call, await _noted(ref, call, parsed, deps))
                continue
            async with trio.open_nursery() as nursery:
                for ref, call, parsed in started:

                    async def run_and_record(
                        ref: str = ref, call: ToolCall = call, parsed: Parsed = parsed
                    ) -> None:
                        await record(ref, call, await _noted(ref, call, parsed, deps))

                    nursery.start_soon(run_and_record)
    finally:
        # (Calls left open by a parked call wait for the person's decision.)
        unfinished = [(ref, call) for ref, call in calls if ref not in finished and not parked]
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
                    await record(ref, call, Outcome(cancelled))
    return [finished[ref] for ref, _ in calls if ref in finished], ends_turn, parked


async def _checkpoint(
    state: AgentContext, ref: str, call: ToolCall, result: ToolResult, deps: TurnDeps
) -> None:
    """The workspace's files as the call left them, journaled just before its result, so
    the result's point holds them (session/checkpoints.py)."""
    if deps.checkpoint is not None:
        taken = await deps.checkpoint(state.id, ref, call, deps.tools.get(call.name), result)
        if taken is not None:
            await deps.events.emit(taken)


async def _start_call(state: AgentContext, ref: str, call: ToolCall, deps: TurnDeps) -> Parsed:
    """Parse the call, settle its permission, and record its start. Asking comes first,
    so a crash while the user thinks is never mistaken for a half-run side effect."""
    parsed: Parsed = parse_call(call, deps.tools)
    asked = False  # (a pre_tool hook asked for the person)
    if isinstance(parsed, Ready) and deps.tool_hooks is not None:
        parsed, checked, asked = await _hooked(ref, call, parsed, deps)
    else:
        checked = call
    if isinstance(parsed, Ready) and deps.guard is not None:
        refused = await deps.guard(checked, parsed.args)
        if refused is not None:
            parsed = Refused(refused)
    if isinstance(parsed, Ready):
        parsed = await _permit(ref, checked, parsed, deps, asked=asked)
    if isinstance(parsed, Parked):
        if deps.journaled(ref) is None:  # (parked before a restart: already on disk)
            await deps.events.emit(ApprovalParked(agent=state.id, ref=ref), durable=True)
        return parsed
    read_only = _is_read_only(call, deps.tools)
    # A call that will not run (malformed, refused) has no effect to repeat: after a
    # crash it is simply dispatched again, and asked about again.
    idempotent = parsed.tool.idempotent if isinstance(parsed, Ready) else True
    outside = isinstance(parsed, Ready) and not parsed.tool.journaled
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


async def _hooked(
    ref: str, call: ToolCall, parsed: Ready, deps: TurnDeps
) -> tuple[Parsed, ToolCall, bool]:
    """The call as the `pre_tool` hooks leave it (docs/hooks.md): refused, or with the
    arguments they gave, parsed again against the tool's schema (the guard and the
    permission rules then check that call); and whether they asked for the person."""
    assert deps.tool_hooks is not None
    verdict = await deps.tool_hooks.before(deps.context.agent, ref, call)
    if verdict.refused:
        return Refused(verdict.refused), call, False
    if verdict.arguments is None:
        return parsed, call, verdict.ask
    changed = msgspec.structs.replace(call, arguments=verdict.arguments)
    reparsed = parse_call(changed, deps.tools)
    if isinstance(reparsed, Refused):
        reparsed = Refused(
            f"{call.name} was not run: a hook changed its arguments: {reparsed.error}"
        )
    return reparsed, changed, verdict.ask


async def _permit(
    ref: str, call: ToolCall, parsed: Ready, deps: TurnDeps, *, asked: bool = False
) -> Parsed:
    tool = parsed.tool
    unasked = tool.read_only or not tool.approval
    decision = deps.policy.decide(call, read_only=unasked, grants=deps.grants())
    if decision == "allow" and (asked or tool.asks_anyway(parsed.args) is not None):
        decision = "ask"  # (a shell command asking for the network: each time)
    if decision == "allow":
        return parsed
    answer = await _answer(ref, call, deps) if decision == "ask" else False
    if isinstance(answer, Later):
        if deps.parks:
            return Parked()
        answer = Unasked()  # (only the main agent's calls wait: docs/library.md)
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
        return Refused(f"{tool.name} was not approved: {answer.reason}; do not retry it")
    how = "denied by the permission policy" if decision == "deny" else "not approved"
    return Refused(f"{tool.name} was {how}; do not retry it")


async def _answer(ref: str, call: ToolCall, deps: TurnDeps) -> Answer:
    """The journaled answer for a call that parked (the person's decision, or `Later`
    while there is none: a parked call is not asked about again), else the approver's."""
    journaled = deps.journaled(ref)
    return await deps.approve(call) if journaled is None else journaled


async def _noted(ref: str, call: ToolCall, parsed: Parsed, deps: TurnDeps) -> Outcome:
    """How the call ends (`_execute`), with the `post_tool` hooks' note, when a call that
    ran got one, after its output."""
    outcome = await _execute(ref, call, parsed, deps)
    if deps.tool_hooks is None or not isinstance(parsed, Ready):
        return outcome
    note = await deps.tool_hooks.after(deps.context.agent, ref, call, outcome.result)
    if not note:
        return outcome
    result = outcome.result
    noted = msgspec.structs.replace(result, content=f"{result.content}\n\n{note}")
    return msgspec.structs.replace(outcome, result=noted)


async def _execute(ref: str, call: ToolCall, parsed: Parsed, deps: TurnDeps) -> Outcome:
    """How the call ends: run when it is ready, else its error."""

    def result(status: ToolStatus, content: str, changed: tuple[str, ...] = ()) -> ToolResult:
        return tool_result(call, status, content, changed)

    match parsed:
        case Ready(tool, args):
            pass
        case Refused(error):
            return Outcome(result("error", error))
        case Unapproved(error):
            return Outcome(result("unapproved", error))
        case Parked():
            raise AssertionError("a parked call is not run")
        case _:
            assert_never(parsed)
    hooks = deps.hooks
    scope = (
        hooks.tool_call(deps.context.agent)
        if hooks is not None and tool.interruptible
        else _NO_SCOPE
    )
    output = None
    try:
        with scope:
            context = deps.context.for_call(ref, call.name, deps.events)
            if _in_background(tool, args, context):
                assert context.background is not None
                output = await context.background.start(tool, args, context)
            else:
                output = await tool.run(args, context)
    except (ToolFailed, WorkspaceEscape) as exc:
        return Outcome(result("error", str(exc)))
    except ToolInterrupted as exc:
        return Outcome(result("interrupted", str(exc)))
    except HostCallbackFailed:
        raise  # the host program's bug, not the tool's: it stops the agent, as an approver's
    except Exception as exc:  # a tool bug must not kill the agent
        return Outcome(result("error", f"{tool.name} crashed: {type(exc).__name__}: {exc}"))
    if output is None:
        return Outcome(result("cancelled", "stopped by an interrupting message before it finished"))
    return Outcome(
        result(output.status, output.content, output.changed), output.delivers, output.ends_turn
    )


def tool_result(
    call: ToolCall, status: ToolStatus, content: str, changed: tuple[str, ...] = ()
) -> ToolResult:
    """The result of `call`. A file name that is not UTF-8 anywhere in it (in an error's
    text, a tool's output) is escaped (`text.escaped`): the journal cannot encode it as
    it comes, and a session must neither stop on it nor again on every resume."""
    changed = tuple(escaped(path) for path in changed)
    return ToolResult(
        call_id=call.id, name=call.name, status=status, content=escaped(content), changed=changed
    )


def _in_background(tool: AnyTool, args: BaseModel, context: ToolContext) -> bool:
    """Whether the call asked for the background and may go there (a turn without a
    team to run it there runs it in the foreground). The tool's flag first: most tools
    have none, and reading the arguments costs more."""
    return (
        tool.background
        and context.background is not None
        and bool(getattr(args, "background", False))
    )
