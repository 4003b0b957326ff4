"""What one MCP tool call costs through the orchestrator over stdio, against a direct call
of the `mcp` SDK's client in the same run (issue 40's benchmark).

    .venv/bin/python tests/benchmarks/bench_mcp_call.py [--calls 200] [--rounds 4]

Real MCP servers (tests/mcp/server_app.py, written with the SDK, over stdio), started once:
one for the SDK's client, one for ours, one with `pin_check = 0`; then rounds alternate
(A B C D A B C D ...), each `--calls` calls of the server's read-only `search`, one after
another:

- `sdk`: the SDK's `Client.call_tool`, nothing of ours (the floor);
- `ours, no pin check`: the session's `McpTool.run` (arguments checked, the call through
  our connection, its output bounded) without the definition check;
- `ours`: the same, checked against the session's pin before each call, as a session
  calls it (mcp/pins.py): against the server's last listing (`pin_check`, 60 s);
- `ours, pin_check 0`: the same with the server listed before each call (a second
  server, `pin_check = 0`).

It prints the median of each way's per-call times, each round's median, and the ratios
to `sdk` measured in the same run; the session's own journaling of a call (the same as
any tool's) is not in it (`bench_call.py` measures that).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TextIO

import trio

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)]

import mcp  # noqa: E402

from orchestrator.mcp import McpServer, open_servers  # noqa: E402
from orchestrator.mcp.tools import McpTool  # noqa: E402
from orchestrator.session.memory import MemorySession  # noqa: E402
from orchestrator.tools import ToolContext, Workspace  # noqa: E402

APP = ROOT / "tests" / "mcp" / "server_app.py"
ARGUMENTS = {"query": "journal"}

Call = Callable[[], Awaitable[object]]


async def timed(call: Call, calls: int) -> list[float]:
    """The seconds each of `calls` calls took, one after another."""
    times = []
    for _ in range(calls):
        began = time.perf_counter()
        await call()
        times.append(time.perf_counter() - began)
    return times


async def measure(
    calls: int, rounds: int, workspace: Path, errlog: TextIO
) -> dict[str, list[list[float]]]:
    server = McpServer.stdio("docs", sys.executable, [str(APP), "stdio", "--name", "docs"])
    listing = McpServer.stdio("each", sys.executable, [str(APP), "stdio"], pin_check=0)
    params = mcp.StdioServerParameters(command=sys.executable, args=server.args)
    ctx = ToolContext(workspace=Workspace(workspace))
    async with (
        mcp.Client(mcp.stdio_client(params, errlog=errlog)) as client,
        open_servers([server, listing]) as opened,
    ):
        pinned = await opened.pinned(MemorySession())
        [checked, each] = [t for t in pinned.tools if t.info.name == "search"]
        bare = McpTool(checked.connection, checked.info)  # the same, without pins
        args = checked.args_model.model_validate(ARGUMENTS)

        async def sdk() -> object:
            return await client.call_tool("search", ARGUMENTS)

        async def ours_bare() -> object:
            return await bare.run(args, ctx)

        async def ours() -> object:
            return await checked.run(args, ctx)

        async def ours_listing() -> object:
            return await each.run(args, ctx)

        ways: dict[str, Call] = {
            "sdk": sdk,
            "ours, no pin check": ours_bare,
            "ours": ours,
            "ours, pin_check 0": ours_listing,
        }
        for call in ways.values():  # warm up each way (imports, first messages)
            await timed(call, 5)
        found: dict[str, list[list[float]]] = {name: [] for name in ways}
        for _ in range(rounds):
            for name, call in ways.items():
                found[name].append(await timed(call, calls))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="calls a round, each way")
    parser.add_argument("--rounds", type=int, default=4, help="rounds, ways alternating")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="bench-mcp-call-") as workspace,
        open(os.devnull, "w") as errlog,  # (the SDK wants a text file for the server's stderr)
    ):
        found = trio.run(measure, args.calls, args.rounds, Path(workspace), errlog)
    floor = statistics.median(t for times in found["sdk"] for t in times)
    print(f"{args.calls} calls a round, {args.rounds} rounds, ways alternating (A B C D ...)")
    print(f"{'way':<20} {'median/call':>12} {'/ sdk':>7}  per round")
    for name, rounds in found.items():
        median = statistics.median(t for times in rounds for t in times)
        each = " ".join(f"{statistics.median(times) * 1000:.2f}" for times in rounds)
        print(f"{name:<20} {median * 1000:>9.2f} ms {median / floor:>7.2f}  {each} ms")
    ours = statistics.median(t for times in found["ours"] for t in times)
    print(f"ours over sdk: {(ours - floor) * 1000:.2f} ms a call")


if __name__ == "__main__":
    main()
