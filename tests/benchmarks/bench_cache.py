"""Prompt caching with Anthropic, measured (issue 9): what share of the input is billed as
cache reads, and what a session costs with caching and without.

    .venv/bin/python tests/benchmarks/bench_cache.py [--rounds 30] [--workers 8] [--fan-out 12]

Real requests from the real adapter (`resolve_model("anthropic:claude-sonnet-4-5")`,
pointed at a loopback server) and the real turn loop (`run_turn`, the real system prompt
and workspace tools, reading real files in a temporary workspace). The server
(tests/providers/anthropic_cache.py) keeps a prompt cache as Anthropic documents it
(breakpoints, the 20-block lookback, the 1,024-token minimum of Sonnet-class models,
lifetimes) and bills each request in its `usage`. It answers each round with a sentence
and a `read_file` call, and the last round with a summary. Scenarios, each run with
`cache = "auto"` and again with `cache = "off"`, so the comparison is measured:

- one agent (role `main`), `--rounds` rounds;
- `--workers` agents of role `worker`, run concurrently on one model: the same system
  prompt and tools, each its own first user message, `--rounds` rounds each;
- one agent whose every round calls `--fan-out` tools at once (wide rounds).

For each it prints the input tokens (all of them: plain, read and written), the cache
reads and writes, the plain (uncached) input, the share of the input of every round
after each agent's first that was read from the cache (target: at least 90%), and the
cost at Sonnet's prices ($3/Mtok input, writes 1.25x (2x for a 1-hour entry), reads 0.1x,
$15/Mtok output) with caching against without. A round is one model request.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import trio

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "providers")]

from anthropic_cache import (  # noqa: E402
    MIN_TOKENS,
    CachingMessagesServer,
    Served,
    ToolUse,
    block_tokens,
)
from provider_server import LoopbackServer  # noqa: E402

from orchestrator.agent import TurnDeps, TurnOutcome, run_turn  # noqa: E402
from orchestrator.config import parse_config  # noqa: E402
from orchestrator.messages import SystemMessage, Usage, UserMessage  # noqa: E402
from orchestrator.models.anthropic import to_wire  # noqa: E402
from orchestrator.models.base import ModelRequest  # noqa: E402
from orchestrator.models.http import make_client  # noqa: E402
from orchestrator.models.resolve import resolve_model  # noqa: E402
from orchestrator.session.live import MemorySession  # noqa: E402
from orchestrator.state.events import AgentStarted, FanOut, ListSink, UsageUpdated  # noqa: E402
from orchestrator.team.prompts import single_agent_prompt  # noqa: E402
from orchestrator.tools import ToolContext, Workspace, workspace_tools  # noqa: E402

MODEL = "anthropic:claude-sonnet-4-5"
FILES = 30
PRICE = {  # dollars per million tokens
    "input": 3.0,
    "write_5m": 3.0 * 1.25,
    "write_1h": 3.0 * 2,
    "read": 3.0 * 0.1,
    "output": 15.0,
}
Caching = Literal["auto", "off"]


def make_workspace(root: Path) -> None:
    """FILES modules of a few hundred bytes each: what read_file returns."""
    (root / "src").mkdir()
    for n in range(FILES):
        (root / "src" / f"mod_{n:02d}.py").write_text(
            f'"""Module {n}: parsing and checking of the settings of part {n}."""\n\n'
            "from __future__ import annotations\n\n\n"
            f"def parse_{n}(text: str) -> dict[str, str]:\n"
            '    """Each `key = value` line of `text`, stripped."""\n'
            "    pairs = (line.split('=', 1) for line in text.splitlines() if '=' in line)\n"
            "    return {k.strip(): v.strip() for k, v in pairs}\n\n\n"
            f"def check_{n}(settings: dict[str, str]) -> list[str]:\n"
            f"    return [k for k in settings if not k.startswith('part{n}.')]\n"
        )


def decider(rounds: int, fan_out: int) -> Callable[[dict[str, Any]], list[str | ToolUse]]:
    """The server's side of the conversation: a sentence and `fan_out` read_file calls a
    round, and a summary in round `rounds`."""

    def decide(body: dict[str, Any]) -> list[str | ToolUse]:
        done = sum(m["role"] == "assistant" for m in body["messages"])
        if done + 1 >= rounds:
            return [f"Summary: read {done * fan_out} modules; each parses key = value lines."]
        paths = [f"src/mod_{(done * fan_out + i) % FILES:02d}.py" for i in range(fan_out)]
        calls: list[str | ToolUse] = [ToolUse("read_file", {"path": p}) for p in paths]
        return [f"Next I read {', '.join(paths)} to see how it parses its settings.", *calls]

    return decide


def goal(role: str, n: int) -> str:
    if role == "main":
        return "Find out how the modules under src/ parse their settings and summarise it."
    return (
        f"Task {n + 1}: review src/mod_{n:02d}.py and the modules it resembles. Report how "
        "each parses and checks its settings, and anything that looks wrong, in a short "
        "list. Do not change any file."
    )


@dataclass
class Run:
    """What one scenario cost, as the server billed it and the adapter reported it."""

    served: list[Served]
    rounds: dict[str, list[Usage]]  # per agent, each round's usage as the adapter read it

    def totals(self) -> dict[str, int]:
        s = self.served
        return {
            "input": sum(x.usage.total for x in s),
            "read": sum(x.usage.cache_read for x in s),
            "write_5m": sum(x.usage.cache_write_5m for x in s),
            "write_1h": sum(x.usage.cache_write_1h for x in s),
            "plain": sum(x.usage.input_tokens for x in s),
            "output": sum(x.output_tokens for x in s),
        }

    def share_after_first(self) -> float:
        later = [u for usages in self.rounds.values() for u in usages[1:]]
        read = sum(u.cache_read_tokens for u in later)
        return read / sum(_prompt(u) for u in later)

    def cost(self) -> float:
        t = self.totals()
        return (
            sum(t[k] * PRICE[k] for k in ("write_5m", "write_1h", "read", "output"))
            + t["plain"] * PRICE["input"]
        ) / 1e6


def _prompt(usage: Usage) -> int:
    return usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens


async def scenario(
    workspace: Path, *, role: str, agents: int, rounds: int, fan_out: int, caching: Caching
) -> Run:
    handler = CachingMessagesServer(decider(rounds, fan_out))
    server = LoopbackServer(handler=handler)
    sink = ListSink()
    async with trio.open_nursery() as nursery, make_client(trust_env=False) as http:
        await nursery.start(server.serve)
        config = parse_config(
            f'[providers.anthropic]\nbase_url = "{server.url}"\ncache = "{caching}"\n'
        )
        model = resolve_model(
            MODEL, env={"ANTHROPIC_API_KEY": "x"}, http=http, config=config, role=role
        )
        tools = workspace_tools()
        system = single_agent_prompt(tools.names())
        session = MemorySession()
        events = FanOut([session, sink])
        outcomes: list[TurnOutcome] = []

        async def run_agent(agent: str, deps: TurnDeps) -> None:
            outcomes.append(await run_turn(session.state.agents[agent], deps))

        async with trio.open_nursery() as agents_nursery:
            for n in range(agents):
                agent = role if agents == 1 else f"{role}-{n + 1}"
                messages = (SystemMessage(content=system), UserMessage(content=goal(role, n)))
                await events.emit(AgentStarted(agent=agent, role=role, messages=messages))
                deps = TurnDeps(
                    model=model,
                    tools=tools,
                    context=ToolContext(
                        workspace=Workspace(workspace), agent=agent, session="bench-cache"
                    ),
                    events=events,
                    max_rounds=rounds,
                )
                agents_nursery.start_soon(run_agent, agent, deps)
        nursery.cancel_scope.cancel()
    per_agent: dict[str, list[Usage]] = {}
    for event in sink.events:
        if isinstance(event, UsageUpdated):
            per_agent.setdefault(event.agent, []).append(event.usage)
    run = Run(handler.served, per_agent)
    # What the adapter decoded is what the server billed, and every agent finished.
    reported = [u for usages in per_agent.values() for u in usages]
    assert sum(map(_prompt, reported)) == run.totals()["input"]
    assert sum(u.cache_read_tokens for u in reported) == run.totals()["read"]
    assert [o.reason for o in outcomes] == ["completed"] * agents
    assert all(len(usages) == rounds for usages in per_agent.values())
    return run


def report(name: str, cached: Run, plain: Run) -> None:
    t = cached.totals()
    writes = t["write_5m"] + t["write_1h"]
    base = plain.totals()
    assert base["input"] == t["input"], "the two runs sent different prompts"
    assert base["read"] == base["write_5m"] == base["write_1h"] == 0, "caching was not off"
    share = cached.share_after_first()
    first = next(iter(cached.rounds.values()))[:3]
    opening = "; ".join(
        f"round {i}: read {u.cache_read_tokens:,}, wrote {u.cache_write_tokens:,},"
        f" uncached {u.input_tokens:,}"
        for i, u in enumerate(first, 1)
    )
    print(
        f"{name}\n"
        f"  input {t['input']:,} tokens: cache reads {t['read']:,} ({t['read'] / t['input']:.1%}),"
        f" cache writes {writes:,}, uncached {t['plain']:,}; output {t['output']:,}\n"
        f"  rounds after each agent's first: {share:.1%} of input read from the cache"
        f" ({'meets' if share >= 0.9 else 'MISSES'} the 90% target)\n"
        f"  the first agent's {opening}\n"
        f"  cost ${cached.cost():.4f} with caching, ${plain.cost():.4f} without:"
        f" {cached.cost() / plain.cost():.2f}x (saves ${plain.cost() - cached.cost():.4f})"
    )


async def main_async(args: argparse.Namespace, workspace: Path) -> None:
    rounds, workers, fan_out = args.rounds, args.workers, args.fan_out
    scenarios = [
        (f"one agent, {rounds} rounds", "main", 1, 1),
        (f"{workers} workers of one role, {rounds} rounds each", "worker", workers, 1),
        (f"one agent, {rounds} rounds of {fan_out} calls each", "main", 1, fan_out),
    ]
    for name, role, agents, fan_out in scenarios:
        runs = {}
        for caching in ("auto", "off"):
            runs[caching] = await scenario(
                workspace,
                role=role,
                agents=agents,
                rounds=args.rounds,
                fan_out=fan_out,
                caching=caching,
            )
        report(name, runs["auto"], runs["off"])


def shared_prefix_tokens() -> int:
    """The tokens of the tools and system prompt every agent sends, as the server counts."""
    tools = workspace_tools()
    system = SystemMessage(content=single_agent_prompt(tools.names()))
    request = ModelRequest(messages=(system, UserMessage(content="-")), tools=tools.specs())
    body = to_wire(request, model=MODEL)
    return sum(map(block_tokens, body["tools"])) + block_tokens(
        {"type": "text", "text": body["system"]}
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--fan-out", type=int, default=12)
    args = parser.parse_args()
    print(f"# {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.platform()}")
    print(f"# {os.cpu_count()} CPUs, Python {platform.python_version()}, model {MODEL}")
    shared = shared_prefix_tokens()
    print(f"# shared prefix (tools and system prompt): {shared:,} tokens; minimum {MIN_TOKENS:,}")
    with tempfile.TemporaryDirectory(prefix="bench-cache-") as directory:
        make_workspace(Path(directory))
        trio.run(main_async, args, Path(directory))


if __name__ == "__main__":
    main()
