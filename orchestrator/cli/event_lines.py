"""One line for an event of its own kind: a plan's submission or decision, a compaction's
start or result, a call refused for want of anyone to ask, a fallback chain's move (the
transcript's, cli/render.py)."""

from __future__ import annotations

from typing import assert_never

from orchestrator.cli.style import ARG_WIDTH
from orchestrator.loop.compaction import CompactionStarted, ContextCompacted
from orchestrator.state.approvals import RemoteRefused
from orchestrator.state.fallbacks import ModelSwitched
from orchestrator.state.plans import PlanDecided, PlanSubmitted, ReplanRequested
from orchestrator.text import label


def plan_line(event: PlanSubmitted | PlanDecided | ReplanRequested) -> str:
    """One line for a plan's submission or the decision on it."""
    match event:
        case PlanSubmitted(version=version, plan=plan, source=source, warnings=warnings):
            by = {"planner": "by the planner", "file": "from a file", "edit": "edited"}
            extra = f", {len(warnings)} warning(s)" if warnings else ""
            return (
                f"◆ plan v{version} {by.get(source, 'by the program')}: {len(plan.tasks)} "
                f"task(s){extra}"
            )
        case PlanDecided(version=version, decision=decision, by=by, feedback=feedback):
            why = f": {label(feedback, 4 * ARG_WIDTH)}" if feedback else ""
            return f"◆ plan v{version} {decision} ({label(by, 40)}){why}"
        case ReplanRequested(plan_task=task, reason=reason):
            return f"◆ re-planning task {label(task, 40)}: {label(reason, 4 * ARG_WIDTH)}"
        case _:
            assert_never(event)


def compaction_line(event: CompactionStarted | ContextCompacted) -> str:
    """A compaction's start, or its result, in a line: `⧉ compacting main: 4,120 tokens
    (85% of its window), near its window`, then `⧉ compacted main: 4,120 → 1,310 tokens,
    summarised, 6 tool outputs pruned`."""
    agent = label(event.agent, 40)
    if isinstance(event, CompactionStarted):
        share = f" ({event.tokens * 100 // event.usable}% of its window)" if event.usable else ""
        match event.reason:
            case "fraction":
                why = "near its window"
            case "too_long":
                why = "the provider found it too long"
            case "by_hand":
                why = "asked for by hand"
            case reason:
                assert_never(reason)
        return f"⧉ compacting {agent}: {event.tokens:,} tokens{share}, {why}"
    outputs = f"{event.pruned:,} tool output{'' if event.pruned == 1 else 's'}"
    match event.method:
        case "pruned":
            what = f"old tool outputs pruned ({outputs})"
        case "summary":
            what = "summarised"
        case "fallback":
            what = "summarised without a model (the model's summary failed)"
        case "truncated":
            what = f"summarised, its {event.dropped:,} oldest messages dropped"
        case method:
            assert_never(method)
    if event.pruned and event.method != "pruned":
        what += f", {outputs} pruned"
    if event.after >= event.before:
        what += " (it freed nothing)"
    return f"⧉ compacted {agent}: {event.before:,} → {event.after:,} tokens, {what}"


def warning_line(event: RemoteRefused | ModelSwitched, who: str) -> str:
    """The line of a call refused for want of anyone to ask, or of a fallback chain's move."""
    if isinstance(event, RemoteRefused):
        return f"  {who}{label(event.tool)} refused: nobody here to ask (no terminal, no --yes)"
    why = f": {label(event.why, 2 * ARG_WIDTH)}" if event.why else ""
    return f"! {who}{label(event.model)} answers instead of {label(event.instead_of)}{why}"
