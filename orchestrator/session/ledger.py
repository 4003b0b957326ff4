"""The usage and cost of a session's model calls, summed for the session, per agent, per
model and per task subtree (a task's own calls and its descendants'), and the small table
`sessions show` prints of them. Plain data, as `sessions show --json` prints it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from orchestrator.messages import Usage, plain

if TYPE_CHECKING:
    from orchestrator.prices.cost import Price

Call = tuple[str, str, Usage]
"""A model call's `(agent, model, usage)`."""


def usage_ledger(
    calls: Iterable[Call], prices: Mapping[str, Price], owners: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The usage and cost of `calls`: `{"session": totals, "by_agent": {agent: totals},
    "by_model": {model: totals}, "by_subtree": {task: totals}}`, each totals `{"calls",
    "usage", "cost_usd", "unpriced_calls"}`. A call of a model without a price counts as
    unpriced: the cost is then a lower bound, and None when no call had a price.

    `owners` maps each task to the agent that delegated it (a subagent's id is its
    task's): a call counts for its own agent's task and every task above it, so a task's
    subtree totals are its own calls and its descendants'. Every task has an entry."""
    owners = owners or {}
    session = _Totals()
    by_agent: dict[str, _Totals] = {}
    by_model: dict[str, _Totals] = {}
    by_subtree = {task: _Totals() for task in owners}
    cost_of = _pricing(prices)
    for agent, model, usage in calls:
        cost = cost_of(model, usage)
        for totals in (
            session,
            by_agent.setdefault(agent, _Totals()),
            by_model.setdefault(model, _Totals()),
            *(by_subtree[task] for task in _lineage(agent, owners)),
        ):
            totals.add(usage, cost)
    return {
        "session": session.dump(),
        "by_agent": {agent: t.dump() for agent, t in by_agent.items()},
        "by_model": {model: t.dump() for model, t in by_model.items()},
        "by_subtree": {task: t.dump() for task, t in by_subtree.items()},
    }


def _lineage(agent: str, owners: Mapping[str, str]) -> Iterable[str]:
    """The task `agent` works and every task above it (none for the main agent)."""
    seen: set[str] = set()
    while agent in owners and agent not in seen:  # (a cycle is no tree: stop there)
        seen.add(agent)
        yield agent
        agent = owners[agent]


class _Totals:
    __slots__ = ("calls", "cost_usd", "unpriced_calls", "usage")

    def __init__(self) -> None:
        self.calls = 0
        self.usage = Usage()
        self.cost_usd = 0.0
        self.unpriced_calls = 0

    def add(self, usage: Usage, cost: float | None) -> None:
        self.calls += 1
        self.usage += usage
        self.cost_usd += cost or 0.0
        self.unpriced_calls += cost is None

    def dump(self) -> dict[str, Any]:
        unpriced = self.calls and self.unpriced_calls == self.calls
        return {
            "calls": self.calls,
            "usage": plain(self.usage),
            "cost_usd": None if unpriced else self.cost_usd,
            "unpriced_calls": self.unpriced_calls,
        }


def cache_share(totals: dict[str, Any]) -> float | None:
    """The share of prompt tokens read from the provider's cache (None without any
    prompt tokens): cache reads over all input, read, written or plain."""
    usage = totals["usage"]
    prompt = usage["input_tokens"] + usage["cache_read_tokens"] + usage["cache_write_tokens"]
    return usage["cache_read_tokens"] / prompt if prompt else None


def _pricing(prices: Mapping[str, Price]) -> Callable[[str, Usage], float | None]:
    """A call's cost, or None without a price (no prices in the config: the known
    models' table alone, and pydantic is not imported)."""
    if not prices:
        from orchestrator.prices.known import known_cost

        return known_cost
    from orchestrator.prices.cost import call_cost

    return lambda model, usage: call_cost(prices, model, usage)


def usage_table(ledger: dict[str, Any]) -> str:
    """A ledger (as `usage_ledger` makes it) as a table under a header: the session, each
    agent, each model, and each task's subtree where it has subtasks that made calls."""
    from orchestrator.session.shown import NONE, table, totals_cost
    from orchestrator.text import label

    def row(name: str, totals: dict[str, Any]) -> list[str]:
        u = totals["usage"]
        share = cache_share(totals)
        return [
            label(name, 120),
            f"{totals['calls']:,}",
            f"{u['input_tokens']:,}",
            f"{u['output_tokens']:,}",
            f"{u['cache_read_tokens']:,}/{u['cache_write_tokens']:,}",
            NONE if share is None else f"{share:.0%}",
            totals_cost(totals),
        ]

    session, by_agent = ledger["session"], ledger["by_agent"]
    rows = [row("session", session)]
    rows += [row(f"agent {name}", t) for name, t in sorted(by_agent.items())]
    rows += [row(f"model {name}", t) for name, t in sorted(ledger["by_model"].items())]
    rows += [
        row(f"subtree {task}", t)
        for task, t in sorted(ledger.get("by_subtree", {}).items())
        if t["calls"] > by_agent.get(task, {"calls": 0})["calls"]  # else: its agent's row
    ]
    header = ("", "CALLS", "INPUT", "OUTPUT", "CACHE R/W", "CACHED", "COST")
    lines = table(header, rows, right={1, 2, 3, 4, 5, 6})
    if session["unpriced_calls"] and session["calls"] != session["unpriced_calls"]:
        lines.append("  + some calls had no price in the config: the cost is a lower bound")
    return "\n".join(lines)
