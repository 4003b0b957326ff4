"""Resume time: a session's journal back to a runnable state (manifest read, journal
scanned and checked, events folded into agent contexts), with and without a snapshot.

    .venv/bin/python tests/benchmarks/bench_resume.py [--records 1000 100000]

Targets (issue 3): 100,000 records (~100 MB) under 1 s; 1,000 records under 50 ms.
Process start is excluded. Each figure is the best of several runs.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import trio

from orchestrator.events import (
    AgentStarted,
    AssistantReplied,
    Event,
    ToolCallFinished,
    ToolCallStarted,
)
from orchestrator.messages import (
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
)
from orchestrator.session import JOURNAL, SNAPSHOT, create_session, events_of, load_state
from orchestrator.state import SessionState
from orchestrator.store import Durability, open_journal, scan_journal, write_json_atomic

FILLER = "lorem ipsum dolor sit amet " * 45  # ~1 KB per record once framed


def events(count: int) -> list[Event]:
    out: list[Event] = [
        AgentStarted(
            agent="main",
            role="main",
            messages=(SystemMessage(content="system"), UserMessage(content="goal")),
        )
    ]
    step = 0
    while len(out) < count:
        call = ToolCall(id=f"call_{step}", name="read_file", arguments='{"path": "a.py"}')
        out.append(
            AssistantReplied(
                agent="main", message=AssistantMessage(text=FILLER[:1000], tool_calls=(call,))
            )
        )
        out.append(ToolCallStarted(agent="main", call=call, read_only=True, idempotent=True))
        out.append(
            ToolCallFinished(
                agent="main",
                result=ToolResult(call_id=call.id, name="read_file", content=FILLER[:1100]),
            )
        )
        step += 1
    return out[:count]


async def write_journal(directory: Path, count: int) -> None:
    async with open_journal(directory / JOURNAL, durability=Durability.OFF) as journal:
        batch = []
        for event in events(count):
            body = event.model_dump(mode="json", exclude={"kind", "agent"})
            batch.append((event.kind, event.agent, body))
            if len(batch) == 1000:
                await journal.append_batch(batch)
                batch = []
        if batch:
            await journal.append_batch(batch)


def best_of(runs: int, fn: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def state_at(directory: Path, seq: int) -> SessionState:
    state = SessionState()
    path = directory / JOURNAL
    frames = [f for f in scan_journal(path).records if f.seq <= seq]
    for at, event in events_of(path, frames):
        state.apply(at, event)
    return state


def bench(count: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-resume-"))
    try:
        script = root / "s.json"
        script.write_text('{"agents": {}}')
        _, directory = create_session(
            root, goal="bench", model=f"scripted:{script}", workspace=None, now=datetime.now(UTC)
        )
        trio.run(write_journal, directory, count)
        size = (directory / JOURNAL).stat().st_size
        runs = 3 if count > 10_000 else 20
        full = load_state(directory, warn=print)
        without = best_of(runs, lambda: load_state(directory, warn=print))
        # A snapshot taken 100 records before the end: resume replays only those.
        write_json_atomic(directory / SNAPSHOT, state_at(directory, full.seq - 100).snapshot())
        snapshot_size = (directory / SNAPSHOT).stat().st_size
        with_snapshot = best_of(runs, lambda: load_state(directory, warn=print))
        assert load_state(directory, warn=print) == full
        print(
            f"{count:>7} records, journal {size / 1e6:6.1f} MB, "
            f"snapshot {snapshot_size / 1e6:6.1f} MB: "
            f"without snapshot {without * 1000:8.1f} ms, "
            f"with snapshot {with_snapshot * 1000:8.1f} ms"
        )
    finally:
        shutil.rmtree(root)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, nargs="+", default=[1000, 100_000])
    for count in parser.parse_args().records:
        bench(count)


if __name__ == "__main__":
    main()
