"""The end of a run, for people: how it ended (and why), where its results are, what it
cost, and what to do next when it did not complete. A few lines under the task tree, in
the one notation of `session/shown.py`:

```
session 20261127T081955-fa4b52 blocked (2 calls refused for want of approval ...)
  workspace  /home/me/src/tool
  session    /home/me/.local/share/orchestrator/sessions/20261127T081955-fa4b52
  spent      1.2k tokens, unpriced; this run 0.4s
  next       to let them run, resume with approval and say so: orchestrator resume ...
```
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.cli.out import command, session_ref
from orchestrator.messages import Usage
from orchestrator.session.ledger import usage_ledger
from orchestrator.session.shown import duration, tokens, totals_cost, totals_tokens
from orchestrator.state.mailbox import MAIN
from orchestrator.text import label

if TYPE_CHECKING:
    from orchestrator.prices.cost import Price
    from orchestrator.team.drive import RunResult

DETAIL_WIDTH = 400


def spent(usage_by_model: Mapping[str, Usage], prices: Mapping[str, Price]) -> str:
    """The session's tokens and their cost by `prices` (`unpriced` when no model had a
    price, a trailing `+` when some had none)."""
    totals = _totals(usage_by_model, prices)
    if not totals["calls"]:
        return "no model calls"
    return f"{tokens(totals_tokens(totals))} tokens, {totals_cost(totals)}"


def spent_cells(
    usage_by_model: Mapping[str, Usage], prices: Mapping[str, Price]
) -> tuple[str, str]:
    """The session's tokens and their cost by `prices`, as the task tree's cells."""
    totals = _totals(usage_by_model, prices)
    return tokens(totals_tokens(totals)), totals_cost(totals)


def _totals(usage_by_model: Mapping[str, Usage], prices: Mapping[str, Price]) -> dict[str, Any]:
    calls = [(MAIN, model, used) for model, used in usage_by_model.items()]
    totals: dict[str, Any] = usage_ledger(calls, prices)["session"]
    return totals


def next_steps(result: RunResult, session_id: str, args: argparse.Namespace) -> list[str]:
    """What to do about a run that did not complete: the result's advice, its `ID`s made
    the session's, and the resume command when a plain resume would help."""
    if result.status == "completed":
        return []
    steps = []
    if result.advice:
        advice = result.advice
        for verb in ("resume", "execute"):
            advice = advice.replace(f"orchestrator {verb} ID", command(verb, session_id, args))
            advice = advice.replace(f"{verb} ID", f"{verb} {session_ref(session_id, args)}")
        steps.append(advice)
    if result.resume_helps:
        steps.append(f"continue it with: {command('resume', session_id, args)}")
    return steps


def summary(
    session_id: str,
    status: str,
    detail: str = "",
    *,
    places: Sequence[tuple[str, Path]] = (),
    spent: str = "",
    seconds: float | None = None,
    steps: Sequence[str] = (),
) -> list[str]:
    """The summary's lines: `session ID STATUS (detail)`, then each of `places` (what,
    where), what the session `spent` and how long this run took, and the `steps` to take
    next."""
    why = f" ({label(detail, DETAIL_WIDTH)})" if detail else ""
    lines = [f"session {label(session_id, 80)} {status}{why}"]
    rows = [(what, label(str(where), DETAIL_WIDTH)) for what, where in places]
    took = f"this run {duration(seconds)}" if seconds is not None else ""
    if spent or took:
        rows.append(("spent", "; ".join(part for part in (spent, took) if part)))
    rows += [("next", label(step, DETAIL_WIDTH)) for step in steps]
    width = max((len(what) for what, _ in rows), default=0)
    lines += [f"  {what:<{width}}  {value}" for what, value in rows]
    return lines
