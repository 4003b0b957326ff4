"""The cost of one `orc.run` (issue 39, item 6), against pydantic-ai's in-memory run.

    .venv-peers/bin/python tests/benchmarks/bench_call.py [--runs 30] [--tree DIR]

T1: one agent with one custom tool, `lookup(key) -> str`; a zero-latency model calls
`lookup` once, then answers with text. Each round runs every way once, in turn (A B C A
B C), in this one process, so that each way sees the machine at the same moments:

    durable      `orc.run(goal, model=..., tools=[lookup], sessions_dir=...)`, the default
                 way, its sessions in a temporary directory
    in-memory    the same with `in_memory=True`: nothing written
    pydantic-ai  `Agent(FunctionModel(...), tools=[lookup]).run(goal)`, as T1 is written
                 (the agent made in the call); `pydantic-ai, agent made once` beside it
                 for reference

Each call is timed from inside its event loop (trio for ours, asyncio for pydantic-ai),
the loop's own start excluded. The figures are the median and p10 / p90 of each way, the
ratio of ours to pydantic-ai's medians, and the bytes of session files one durable run
leaves. pydantic-ai is not a dependency: `make peers` builds `.venv-peers` with it and
this package (without it, its ways are skipped, and said so).

`--tree DIR` times another checkout's durable (and in-memory, if it has it) runs too, in
a child process of its own (two checkouts cannot be imported in one), its calls
interleaved with these; the last lines are this checkout's medians over DIR's.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import inspect
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

ROOT = Path(__file__).resolve().parents[2]
GOAL = "What does the key k hold? Look it up."
ANSWER = "The key k holds 42."
PEER = "pydantic-ai"
PEER_ONCE = "pydantic-ai, agent made once"


def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: the key.
    """
    return "42" if key == "k" else "nothing"


class Ours:
    """`orc.run` of T1, in the checkout `orchestrator` is imported from."""

    def __init__(self, work: Path) -> None:
        import orchestrator as orc

        self.orc = orc
        self.tool = orc.tool(read_only=True, idempotent=True)(lookup)
        self.sessions, self.workspace = work / "sessions", work / "workspace"
        self.sessions.mkdir(parents=True)
        self.workspace.mkdir()
        self.ways = ["durable"]
        if "in_memory" in inspect.signature(orc.run).parameters:
            self.ways.append("in-memory")

    def answer(self, request: Any) -> Any:
        """The model: `lookup` first, then the answer, made of what it returned."""
        orc = self.orc
        results = [m for m in request.messages if isinstance(m, orc.ToolResult)]
        if not results:
            call = orc.ScriptedCall(name="lookup", arguments={"key": "k"})
            return orc.ScriptedReply(tool_calls=(call,))
        return orc.ScriptedReply(text=f"The key k holds {results[-1].content}.")

    def once(self, way: str) -> tuple[float, int]:
        """(seconds, bytes of session files) of one run."""
        took, directory = trio.run(self._once, way)
        written = 0
        if directory is not None:
            written = sum(p.stat().st_size for p in Path(directory).rglob("*") if p.is_file())
            shutil.rmtree(directory)  # (each run starts beside as few others as the first)
        return took, written

    async def _once(self, way: str) -> tuple[float, Path | None]:
        where: dict[str, Any] = (
            {"in_memory": True} if way == "in-memory" else {"sessions_dir": self.sessions}
        )
        model = self.orc.ScriptedModel(self.answer)
        start = time.perf_counter()
        result = await self.orc.run(
            GOAL, model=model, tools=[self.tool], workspace=self.workspace, **where
        )
        took = time.perf_counter() - start
        assert result.status == "completed", result
        assert result.output == ANSWER, result.output
        return took, result.session_dir


class Peer:
    """pydantic-ai's `Agent.run` of T1 over a zero-latency `FunctionModel`."""

    def __init__(self) -> None:
        self.ways = [PEER, PEER_ONCE]
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
        from pydantic_ai.models.function import FunctionModel

        def answer(messages: list[Any], info: Any) -> ModelResponse:
            returned = [
                part.content
                for message in messages
                for part in getattr(message, "parts", ())
                if isinstance(part, ToolReturnPart)
            ]
            if not returned:
                return ModelResponse(parts=[ToolCallPart("lookup", {"key": "k"})])
            return ModelResponse(parts=[TextPart(f"The key k holds {returned[-1]}.")])

        self.make: Callable[[], Any] = lambda: Agent(FunctionModel(answer), tools=[lookup])
        self.agent = self.make()

    def once(self, way: str) -> tuple[float, int]:
        return asyncio.run(self._once(way)), 0

    async def _once(self, way: str) -> float:
        start = time.perf_counter()
        agent = self.agent if way == PEER_ONCE else self.make()
        result = await agent.run(GOAL)
        took = time.perf_counter() - start
        assert result.output == ANSWER, result.output
        return took


class Child:
    """Another checkout's `Ours`, in a process of its own (`--serve`)."""

    def __init__(self, tree: Path, work: Path) -> None:
        self.tree = tree
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(tree), str(work)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.ways = self._read().split()

    def once(self, way: str) -> tuple[float, int]:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{way}\n")
        self.process.stdin.flush()
        took, written = self._read().split()
        return float(took), int(written)

    def _read(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the child process for {self.tree} ended")
        return line

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


def serve(tree: str, work: str) -> None:
    """The child's side: say the ways, then run each way asked for, one a line."""
    sys.path.insert(0, tree)
    ours = Ours(Path(work))
    print(" ".join(ours.ways), flush=True)
    for line in sys.stdin:
        took, written = ours.once(line.strip())
        print(took, written, flush=True)


def main() -> None:
    if sys.argv[1:2] == ["--serve"]:
        serve(*sys.argv[2:4])
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=30, help="rounds (30)")
    parser.add_argument("--tree", type=Path, action="append", default=[])
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-call-"))
    children: list[Child] = []
    try:
        ours = Ours(work / "here")
        runners: list[tuple[str, Ours | Peer | Child]] = [(way, ours) for way in ours.ways]
        if importlib.util.find_spec("pydantic_ai") is None:
            print(f"{PEER}: skipped, not installed here (make peers; run with .venv-peers)")
        else:
            peer = Peer()
            runners += [(way, peer) for way in peer.ways]
        for number, tree in enumerate(args.tree):
            child = Child(tree.resolve(), work / f"tree-{number}")
            children.append(child)
            runners += [(f"{way} @ {tree}", child) for way in child.ways]
        for name, runner in runners:  # once each before timing: imports, caches
            runner.once(name.split(" @ ")[0])
        times: dict[str, list[float]] = {name: [] for name, _ in runners}
        written: list[int] = []
        for _ in range(args.runs):
            for name, runner in runners:
                took, wrote = runner.once(name.split(" @ ")[0])
                times[name].append(took)
                if name == "durable":
                    written.append(wrote)
        report(times, written, args.runs)
    finally:
        for child in children:
            child.close()
        shutil.rmtree(work)


def report(times: dict[str, list[float]], written: list[int], runs: int) -> None:
    load = " ".join(f"{n:.2f}" for n in _load())
    print(f"T1, {runs} rounds interleaved in one process; load average {load}")
    print(f"{'way':<46}{'median':>9}{'p10':>9}{'p90':>9}  ms")
    medians = {}
    for name, taken in times.items():
        ordered = sorted(taken)
        medians[name] = statistics.median(ordered)
        p10 = ordered[int(0.1 * (len(ordered) - 1))]
        p90 = ordered[int(0.9 * (len(ordered) - 1))]
        cells = "".join(f"{x * 1000:>9.2f}" for x in (medians[name], p10, p90))
        print(f"{name:<46}{cells}")
    print(f"session files of one durable run: {statistics.median(written):,.0f} bytes")
    for ours in ("durable", "in-memory"):
        if PEER in medians and ours in medians:
            print(f"{ours} / {PEER}: {medians[ours] / medians[PEER]:.2f}")
        for name in medians:
            if name.startswith(f"{ours} @ "):
                print(f"{ours} / {name}: {medians[ours] / medians[name]:.2f}")


def _load() -> tuple[float, ...]:
    try:
        return tuple(float(n) for n in Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return ()


if __name__ == "__main__":
    main()
