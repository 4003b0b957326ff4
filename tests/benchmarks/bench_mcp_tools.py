"""MCP tool definitions all up front against on demand, measured (issue 40, item 4): the
bytes of each request and how much of its input the provider's prompt cache reads, for one
agent with 5 servers of 20 tools each, before and after its loads.

    .venv/bin/python tests/benchmarks/bench_mcp_tools.py [--rounds 12] [--servers 5] [--tools 20]

Real MCP servers (tests/mcp/server_app.py, written with the SDK, `--many N`: N read-only
tools of three arguments each, over stdio), opened, pinned and made tools as a session
does (orchestrator/mcp/); the real Anthropic adapter (`cache = "auto"`) against the
loopback server of the caching benchmark, which keeps a prompt cache as Anthropic
documents it (tests/providers/anthropic_cache.py); the real turn loop over a
`MemorySession`. The same conversation twice:

- up front: every definition in every request;
- on demand (tools/deferred.py): the agent is offered `search_tools` (the tools named
  with a one-line summary each) and loads three tools of one server in its first round,
  two of another halfway; the other rounds call a loaded tool (up front, the search
  rounds call one too). The last round answers with a summary.

It prints each run's request bytes (the HTTP bodies), its input tokens with the cache
reads and writes, and, round by round, the tools offered, the bytes, and the tokens read,
written and uncached: the rounds after each load show what a load costs the cache.
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

from anthropic_cache import CachingMessagesServer, Served, ToolUse  # noqa: E402
from bench_cache import PRICE  # noqa: E402
from provider_server import LoopbackServer, Recorded, Reply  # noqa: E402

from orchestrator.agent import TurnDeps, run_turn  # noqa: E402
from orchestrator.config import parse_config  # noqa: E402
from orchestrator.mcp import McpServer, open_servers  # noqa: E402
from orchestrator.messages import SystemMessage, UserMessage  # noqa: E402
from orchestrator.models.http import make_client  # noqa: E402
from orchestrator.models.resolve import resolve_model  # noqa: E402
from orchestrator.session.memory import MemorySession  # noqa: E402
from orchestrator.state.events import AgentStarted  # noqa: E402
from orchestrator.team.prompts import single_agent_prompt  # noqa: E402
from orchestrator.tools import ToolContext, ToolRegistry, Workspace, workspace_tools  # noqa: E402
from orchestrator.tools.deferred import on_demand, tokens_of  # noqa: E402

MODEL = "anthropic:claude-sonnet-4-5"
APP = ROOT / "tests" / "mcp" / "server_app.py"
GOAL = "Gather the open issues and recent builds of our projects, then sum them up."
Mode = Literal["up front", "on demand"]


@dataclass
class Round:
    tools: int
    bytes: int
    served: Served


@dataclass
class Run:
    mode: Mode
    rounds: list[Round]
    loads: list[int]  # the rounds (from 1) that loaded tools

    def total(self, what: Callable[[Round], int]) -> int:
        return sum(map(what, self.rounds))

    def cost(self) -> float:
        usage = [r.served.usage for r in self.rounds]
        dollars = (
            sum(u.input_tokens for u in usage) * PRICE["input"]
            + sum(u.cache_read for u in usage) * PRICE["read"]
            + sum(u.cache_write_5m for u in usage) * PRICE["write_5m"]
            + sum(u.cache_write_1h for u in usage) * PRICE["write_1h"]
            + sum(r.served.output_tokens for r in self.rounds) * PRICE["output"]
        )
        return dollars / 1e6


def servers(count: int, tools: int) -> list[McpServer]:
    return [
        McpServer.stdio(
            f"s{n}",
            sys.executable,
            [str(APP), "stdio", "--name", f"s{n}", "--many", str(tools)],
            tools=["op_*"],
        )
        for n in range(1, count + 1)
    ]


def script(rounds: int, count: int) -> list[list[str | ToolUse]]:
    """What the model answers each round, on demand: loads (by name) in the first round
    and halfway, a loaded tool called in the others, a summary last."""
    first = ["s1__op_00", "s1__op_07", "s1__op_14"]
    later = [f"s{count}__op_03", f"s{count}__op_10"]
    middle = max(1, rounds // 2)
    answers: list[list[str | ToolUse]] = []
    for n in range(rounds - 1):
        if n in (0, middle):
            names = first if n == 0 else later
            answers.append(
                ["I load the tools I need.", ToolUse("search_tools", {"query": " ".join(names)})]
            )
        else:
            known = first + (later if n > middle else [])
            tool = known[n % len(known)]
            answers.append([f"Next: {tool}.", ToolUse(tool, {"target": f"project-{n}"})])
    answers.append(["Summary: 3 projects have open issues; every build of the week passed."])
    return answers


class Recording:
    """The caching server, keeping each request's bytes and tools as it answers."""

    def __init__(self, answers: list[list[str | ToolUse]], mode: Mode) -> None:
        self.answers = answers
        self.mode = mode
        self.sizes: list[tuple[int, int]] = []  # (bytes, tools offered) per request
        self.handler = CachingMessagesServer(self._decide)

    def _decide(self, body: dict[str, Any]) -> list[str | ToolUse]:
        done = sum(m["role"] == "assistant" for m in body["messages"])
        answer = self.answers[done]
        if self.mode == "up front":  # no search: the round calls the tool it would load
            answer = [
                ToolUse(p.input["query"].split()[0], {"target": "project-0"})
                if isinstance(p, ToolUse) and p.name == "search_tools"
                else p
                for p in answer
            ]
        return answer

    def __call__(self, request: Recorded) -> Reply:
        body = request.json()
        self.sizes.append((len(request.body), len(body.get("tools") or ())))
        return self.handler(request)


async def scenario(
    opened_tools: ToolRegistry, workspace: Path, mode: Mode, rounds: int, count: int
) -> Run:
    recording = Recording(script(rounds, count), mode)
    server = LoopbackServer(handler=recording)
    session = MemorySession()
    async with trio.open_nursery() as nursery, make_client(trust_env=False) as http:
        await nursery.start(server.serve)
        config = parse_config(f'[providers.anthropic]\nbase_url = "{server.url}"\ncache = "auto"\n')
        model = resolve_model(MODEL, env={"ANTHROPIC_API_KEY": "x"}, http=http, config=config)
        agent = "main"
        tools = opened_tools
        if mode == "on demand":
            tools = on_demand(opened_tools, 0, lambda a: session.state.mcp.loaded.get(a, ()), agent)
            assert "search_tools" in tools, "the budget did not defer the tools"
        system = single_agent_prompt(tools.names())
        messages = (SystemMessage(content=system), UserMessage(content=GOAL))
        await session.emit(AgentStarted(agent=agent, role="main", messages=messages))
        deps = TurnDeps(
            model=model,
            tools=tools,
            context=ToolContext(workspace=Workspace(workspace), agent=agent, session="bench"),
            events=session,
            max_rounds=rounds,
        )
        outcome = await run_turn(session.state.agents[agent], deps)
        nursery.cancel_scope.cancel()
    assert outcome.reason == "completed", outcome
    served = recording.handler.served
    assert len(served) == rounds == len(recording.sizes)
    made = [Round(tools, size, s) for (size, tools), s in zip(recording.sizes, served, strict=True)]
    loads = [n + 1 for n in range(rounds) if n in (0, max(1, rounds // 2))]
    return Run(mode, made, loads if mode == "on demand" else [])


def report(run: Run) -> None:
    tokens = run.total(lambda r: r.served.usage.total)
    read = run.total(lambda r: r.served.usage.cache_read)
    wrote = run.total(lambda r: r.served.usage.cache_write)
    sent = run.total(lambda r: r.bytes)
    print(
        f"{run.mode}: request bytes {sent:,} ({sent // len(run.rounds):,} a request, the first"
        f" {run.rounds[0].bytes:,}); input {tokens:,} tokens: cache reads {read:,}"
        f" ({read / tokens:.1%}), writes {wrote:,}, uncached"
        f" {run.total(lambda r: r.served.usage.input_tokens):,}; cost ${run.cost():.4f}"
    )
    print("  round  tools    bytes     read    wrote  uncached")
    for n, r in enumerate(run.rounds, 1):
        u = r.served.usage
        mark = "  (after a load)" if n - 1 in run.loads else ""
        print(
            f"  {n:5d}  {r.tools:5d}  {r.bytes:7,d}  {u.cache_read:7,d}  {u.cache_write:7,d}"
            f"  {u.input_tokens:8,d}{mark}"
        )


async def main_async(args: argparse.Namespace, workspace: Path) -> None:
    async with open_servers(servers(args.servers, args.tools)) as opened:
        assert not opened.failed, opened.failed
        pinned = await opened.pinned(MemorySession())
        registry = pinned.added_to(workspace_tools())
        mcp = [t for t in registry if t.deferrable]
        definitions = sum(map(tokens_of, mcp))
        print(
            f"# {args.servers} servers, {len(mcp)} MCP tools (about {definitions:,} tokens of"
            f" definitions) beside the 6 workspace tools, {args.rounds} rounds"
        )
        runs = [
            await scenario(registry, workspace, mode, args.rounds, args.servers)
            for mode in ("up front", "on demand")
        ]
    for run in runs:
        report(run)
    front, demand = runs
    ratio = demand.total(lambda r: r.bytes) / front.total(lambda r: r.bytes)
    print(
        f"on demand / up front: request bytes {ratio:.2f}x,"
        f" cost {demand.cost() / front.cost():.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--servers", type=int, default=5)
    parser.add_argument("--tools", type=int, default=20, help="tools of each server")
    args = parser.parse_args()
    print(f"# {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.platform()}")
    print(f"# {os.cpu_count()} CPUs, Python {platform.python_version()}, model {MODEL}")
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as directory:
        trio.run(main_async, args, Path(directory))


if __name__ == "__main__":
    main()
