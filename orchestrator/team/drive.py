"""Drive a session from wherever its journal left it (a fresh start, the middle of a turn
cut off by a crash, or a finished session): its main agent, and the subagents it
delegates to, until the main agent's work is done; record the outcome."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import trio

from orchestrator.errors import (
    CompactionFailed,
    ConfigError,
    ContextTooLong,
    ModelError,
    ProviderAuthError,
    ProviderBadRequest,
    ProviderRateLimited,
    ScriptError,
)
from orchestrator.loop.plan import check
from orchestrator.messages import SystemMessage, Usage, UserMessage
from orchestrator.prices.cost import call_cost
from orchestrator.session.checkpoints import FILE_TOOLS, SCANNED, Checkpointer
from orchestrator.session.live import LiveSession
from orchestrator.session.memory import MemorySession
from orchestrator.state.events import (
    AgentStarted,
    Event,
    EventSink,
    FanOut,
    SessionStatusChanged,
)
from orchestrator.state.mailbox import Mail
from orchestrator.state.manifest import SessionStatus
from orchestrator.state.mcp import waiting_answer
from orchestrator.state.scrub import scrubbing
from orchestrator.state.settings import SessionSettings, SettingsChosen
from orchestrator.team import queries
from orchestrator.team.asking import (
    ApprovalRequest,
    check_decisions,
    decide,
    offer_open_questions,
    pending_requests,
)
from orchestrator.team.main_agent import MainOutcome, open_team, run_main
from orchestrator.team.planning import run_planning
from orchestrator.team.prompts import main_agent_prompt, plain_agent_prompt, with_instructions
from orchestrator.team.queries import MAIN, PLANNER
from orchestrator.team.runtime import Team
from orchestrator.team.settings import RunSettings, Seat, check_definitions
from orchestrator.tools import Workspace

Driven = LiveSession | MemorySession
"""A session `drive` runs: one on disk, or one kept in memory only (`in_memory`)."""


@dataclass(frozen=True)
class RunResult:
    status: SessionStatus
    detail: str = ""
    # What the person should do next, when a plain resume would only fail the same way.
    advice: str = ""
    resume_helps: bool = True
    # Questions that park a task and that no agent will answer (a `blocked` session): each
    # names the task that asks (`sender`), what (`summary`) and whom (`recipient`). The
    # person answers the oldest with `resume --message` (`RunSettings.message`).
    questions: tuple[Mail, ...] = ()
    # Calls parked for a person's decision (their approver answered `Later`), oldest
    # first: give each its decision with `resume(..., approvals={request.id: True |
    # Denied("why")})`.
    approvals: tuple[ApprovalRequest, ...] = field(default=(), compare=False)
    # What the session holds once the run ends (not compared: two results are equal
    # when the runs ended the same way). The main agent's final answer, the text of its
    # last reply ("" if it has none); the tokens of every model call of the session (all
    # runs) and their cost in dollars by `RunSettings.prices` (None: a model that was
    # called has no price); where the session is.
    output: str = field(default="", compare=False)
    usage: Usage = field(default_factory=Usage, compare=False)
    cost: float | None = field(default=None, compare=False)
    session_id: str = field(default="", compare=False)
    session_dir: Path | None = field(default=None, compare=False)


def _model_failure(exc: ModelError, redact: Callable[[str], str]) -> RunResult:
    detail = redact(f"model call failed: {exc}")
    match exc:
        case ProviderAuthError():
            return RunResult("failed", detail, "check the key (orchestrator models), then resume")
        case ProviderRateLimited(retry_after=wait) if wait:
            return RunResult("failed", detail, f"wait {_duration(wait)}, then resume")
        case CompactionFailed():
            return RunResult(
                "blocked",
                detail,
                "even compacted, the context does not fit this model's window: resume with "
                "a model that has a larger one (--model)",
                resume_helps=False,
            )
        case ContextTooLong():
            return RunResult(
                "failed",
                detail,
                "the provider kept refusing the request as too long after compacting it: "
                "resume with a model that has a larger context (--model), or set its window "
                "([windows] in the config; docs/compaction.md)",
                resume_helps=False,
            )
        case ScriptError() | ProviderBadRequest():
            return RunResult("failed", detail, resume_helps=False)
        case _:
            return RunResult("failed", detail)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


async def drive(live: Driven, settings: RunSettings) -> RunResult:
    """Run (or go on running) the main agent until its turn ends; record the status."""
    # Every event, before the journal, the state and the screen: no secret in any.
    watcher = _Watcher(settings.ui, live.warn)
    sink = scrubbing(FanOut([live, watcher]), settings.redact)
    screen = scrubbing(watcher, settings.redact)  # what is journaled elsewhere: only shown
    if (
        live.state.status == "completed"
        and not settings.message
        and not live.state.mailbox.undelivered(MAIN)
    ):
        return _finished(RunResult("completed", "already finished"), live, settings)
    try:
        result = await _drive(live, settings, sink, screen)
    except ModelError as exc:
        result = _model_failure(exc, settings.redact)
    except BaseException as exc:
        stopped = _only_stops(exc)
        status = (
            RunResult("interrupted", "stopped by the user")
            if stopped
            else RunResult("failed", settings.redact(f"{type(exc).__name__}: {exc}"))
        )
        # Best effort: the journal itself may be what failed; the original error matters more.
        with (
            trio.CancelScope(shield=True),
            trio.move_on_after(10),
            contextlib.suppress(Exception),
        ):
            await _record_status(live, sink, status)
        raise
    await _record_status(live, sink, result)
    return _finished(result, live, settings)


def _finished(result: RunResult, live: Driven, settings: RunSettings) -> RunResult:
    """The result with what the session holds: the answer, the usage, where it is."""
    state = live.state
    usage = sum(state.usage_by_model.values(), Usage())
    costs = [
        call_cost(settings.prices, model, used) for model, used in state.usage_by_model.items()
    ]
    return dataclasses.replace(
        result,
        output=queries.final_answer(state),
        approvals=pending_requests(state),
        usage=usage,
        cost=None if None in costs else sum(c for c in costs if c is not None),
        session_id=live.id,
        session_dir=live.directory,
    )


class _Watcher:
    """The caller's sink, after the journal: an error in it is a warning (once), never a
    failed tool call, since what the event says has already happened and is journaled."""

    def __init__(self, sink: EventSink, warn: Callable[[str], None]) -> None:
        self._sink = sink
        self._warn = warn
        self._warned = False

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        try:
            await self._sink.emit(event, durable=durable)
        except Exception as exc:
            if not self._warned:
                self._warned = True
                self._warn(
                    f"the event sink failed ({type(exc).__name__}: {exc}); the "
                    "session goes on, and further sink errors are not reported"
                )


def _only_stops(exc: BaseException) -> bool:
    """True for Ctrl+C or a cancellation, bare or grouped by nurseries."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_only_stops(inner) for inner in exc.exceptions)
    return isinstance(exc, KeyboardInterrupt | trio.Cancelled)


async def _record_status(live: Driven, sink: EventSink, result: RunResult) -> None:
    await sink.emit(
        SessionStatusChanged(agent=MAIN, status=result.status, detail=result.detail),
        durable=True,
    )
    # The main agent's turn is over: its answer goes to the manifest with the status.
    await live.set_status(result.status, output=queries.final_answer(live.state))


async def _chosen_settings(
    live: Driven, given: SessionSettings | None, sink: EventSink
) -> SessionSettings:
    """The settings this run goes with: the journal's, unless `given` differs from them
    (then `given`, journaled first); the defaults, journaled, when neither has any."""
    journaled = live.state.settings
    chosen = given or journaled or SessionSettings()
    if chosen != journaled:
        source = "start" if journaled is None else "override"
        await sink.emit(SettingsChosen(agent=MAIN, settings=chosen, source=source), durable=True)
    return chosen


async def _say_or_answer(team: Team, text: str) -> None:
    """What the person says as a run starts answers one question, the one a blocked
    run's advice names first (`_main_result`): the oldest no agent will answer (the
    main agent's turn is over and it reported nothing blocked itself), sent to the task
    that asked it; else a server's question nobody could answer (docs/mcp.md), when the
    text fits its form, and said to the main agent too; else a message to the main
    agent."""
    state = team.state
    main_idle = (
        MAIN in state.agents
        and team.oversight.turn_over(MAIN)
        and not queries.progress(state, MAIN).blocked
    )
    questions = queries.unanswerable(state, main_idle=main_idle)
    if questions:
        await team.answer(questions[0].message_id, text)
        return
    answered = waiting_answer(state.mcp, text)
    if answered is not None:
        await team.sink.emit(answered, durable=True)
    await team.say(text)


async def _plan_first(team: Team, settings: RunSettings, goal: str) -> RunResult | None:
    """Plan until the builder may run (None), or the result the run stops with: a plan
    that waits for a decision, or the plan only that was asked for."""
    state = team.state
    if settings.seed_plan is not None and not state.plans.versions:
        warnings = check(settings.seed_plan, settings.plan_limits)
        await team.planning.submit(MAIN, settings.seed_plan, warnings, source=settings.seed_source)
    outcome = await run_planning(
        team, settings.approve_plan, goal=goal, plan_only=settings.plan_only
    )
    if outcome.state == "build":
        return None
    return _awaiting_approval(outcome.awaits)


def _awaiting_approval(detail: str) -> RunResult:
    """A run stopped with a plan nobody has decided on, and how to decide."""
    return RunResult(
        "blocked",
        detail,
        "see it in the session's plan.md; build it with: orchestrator execute ID --approve "
        "(or resume ID at a terminal to be asked)",
        resume_helps=False,
    )


def seat_of(live: Driven, settings: SessionSettings) -> Seat:
    """Where a team over `live` sits: its workspace, id, directory, goal and recall, and
    the settings its journal holds."""
    return Seat(
        workspace=Workspace(live.workspace),
        settings=settings,
        session_id=live.id,
        directory=live.directory,
        goal=live.manifest.goal,
        recall=live.recall,
    )


async def _with_checkpoints(
    live: Driven, seat: Seat, sink: EventSink, settings: RunSettings
) -> Seat:
    """The seat with the session's workspace checkpoints, a restore a kill cut short
    finished before any agent or task runs. A session in memory takes none, nor one none
    of whose tools is one a checkpoint follows (a plain agent given its own functions):
    its first run would store the whole workspace for nothing."""
    if not isinstance(live, LiveSession):
        return seat
    if not (FILE_TOOLS | SCANNED) & set(settings.all_tools.names()):
        return seat
    checkpoints = Checkpointer.of(live.directory, live.workspace, live.state, live.warn)
    if checkpoints is not None:
        await checkpoints.finish_restore(sink)
    return dataclasses.replace(seat, checkpoints=checkpoints)


async def _start_checkpoint(seat: Seat, sink: EventSink, *, end: bool = False) -> None:
    """The workspace as the run starts (the first run's stores every file), or with
    `end` as the main agent's work ends."""
    if seat.checkpoints is not None:
        await seat.checkpoints.at_start(sink, why="end" if end else "start")


async def _drive(
    live: Driven, settings: RunSettings, sink: EventSink, screen: EventSink
) -> RunResult:
    root = live.workspace
    if not await trio.Path(root).is_dir():
        raise ConfigError(f"the session's workspace {root} does not exist (moved or deleted?)")
    check_decisions(live.state, settings.approvals)  # (an unknown id: before any record)
    chosen = await _chosen_settings(live, settings.session, sink)
    usable = settings.definitions.usable(settings.tools.names())
    if usable is not settings.definitions:  # built-in types the session's tools cannot serve
        settings = dataclasses.replace(settings, definitions=usable)
    seat = seat_of(live, chosen)
    seat.policy(settings)  # the session's rules parse, else a ConfigError now
    check_definitions(settings)  # before any model call
    seat = await _with_checkpoints(live, seat, sink, settings)
    state = live.state
    planning = bool(
        settings.plan
        or chosen.plan
        or settings.seed_plan
        or PLANNER in state.agents
        or state.plans.versions
    )
    async with open_team(live, sink, settings, seat, screen=screen) as team:
        if MAIN not in state.agents and not planning:
            tools = team.turn_deps(MAIN).tools.names()
            types = [(d.name, d.description) for d in settings.definitions]
            prompt = (
                plain_agent_prompt(tools) if settings.plain else main_agent_prompt(tools, types)
            )
            system = with_instructions(prompt, settings.instructions)
            goal = UserMessage(content=live.manifest.goal)
            # A plain agent with nothing to be told has no system message at all.
            messages = (SystemMessage(content=system), goal) if system else (goal,)
            await sink.emit(AgentStarted(agent=MAIN, role="main", messages=messages))
        await sink.emit(SessionStatusChanged(agent=MAIN, status="running"), durable=True)
        await live.set_status("running")  # `sessions list` shows it running, or stopped if killed
        await _start_checkpoint(seat, sink)
        await decide(state, settings.approvals, sink)  # before the decided calls run
        if settings.on_team is not None:
            called = settings.on_team(team)
            if called is not None:
                await called
        message = settings.message
        if planning and MAIN not in state.agents and PLANNER in state.agents and message:
            await team.port.turns.nudge(PLANNER, message)  # said before a build: the planner's
            message = ""
        if planning:
            planned = await _plan_first(team, settings, live.manifest.goal)
            if planned is not None:
                return planned
        if message:
            await _say_or_answer(team, message)
        if settings.answer is not None:
            await offer_open_questions(team.state, settings.answer, team.answer)
        outcome = await run_main(team)
        await _start_checkpoint(seat, sink, end=True)  # (what calls in the background did)
    return _main_result(outcome, live)


def _main_result(outcome: MainOutcome, live: Driven) -> RunResult:
    """What the run ends with, from how the main agent's work ended."""
    parked = pending_requests(live.state)
    match outcome.reason:
        case "completed":
            return RunResult("completed", outcome.detail)
        case "blocked" if parked:
            first = parked[0].id
            return RunResult(
                "blocked",
                outcome.detail,
                f"decide: orchestrator resume ID --approve-call {first} (or --deny-call "
                f"{first} --reason 'why'); from Python, resume(..., approvals={{id: True}})",
                resume_helps=False,
            )
        case "blocked" if outcome.questions:
            asker = outcome.questions[0].sender
            return RunResult(
                "blocked",
                outcome.detail,
                f"answer task {asker}: orchestrator resume ID --message 'your answer' (it "
                f"goes to task {asker} as the answer to {outcome.questions[0].message_id})",
                resume_helps=False,
                questions=outcome.questions,
            )
        case "blocked" if live.state.mcp.waiting:
            asked = next(iter(live.state.mcp.waiting.values()))
            return RunResult(
                "blocked",
                outcome.detail,
                f"MCP server {asked.server!r} asks the person: {asked.message!r}; answer it: "
                "orchestrator resume ID --message 'your answer' (a JSON object for a form "
                "of several fields)",
                resume_helps=False,
            )
        case "blocked" if live.state.plans.pending is not None:
            return _awaiting_approval(outcome.detail)
        case "blocked" if live.state.refused:
            return RunResult(
                "blocked",
                outcome.detail,
                "to let them run, resume with approval and say so: orchestrator resume ID "
                "--yes --message 'the refused calls are allowed now' (or --allow "
                "TOOL=allow instead of --yes)",
                resume_helps=False,
            )
        case "blocked":
            return RunResult(
                "blocked",
                outcome.detail,
                "answer it: orchestrator resume ID --message 'what it needs' (or change what "
                "blocks it, then resume)",
                resume_helps=False,
            )
        case "budget_exhausted":
            return RunResult(
                "budget_exhausted",
                outcome.detail,
                "to go on, resume with a larger budget: orchestrator resume ID "
                "--max-auto-continues N (or --budget-rounds, --budget-tokens, --budget-cost, "
                "--budget-time)",
                resume_helps=False,
            )
    return RunResult("failed", outcome.detail or f"stopped: {outcome.reason}")
