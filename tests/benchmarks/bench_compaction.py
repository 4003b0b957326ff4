"""Compaction (issue 21): what it keeps, what work it makes an agent do again, and what
it costs besides the model.

    .venv/bin/python tests/benchmarks/bench_compaction.py retention [--window 8000]
        [--compactions 10]
    .venv/bin/python tests/benchmarks/bench_compaction.py repeat [--windows 8000 6000 4000]
        [--module-chars 1200 3000]
    .venv/bin/python tests/benchmarks/bench_compaction.py overhead [--messages 100 1000 10000]
        [--runs 20]

- **retention**: the session of `long_session.py` (a goal, 20 todos in mixed states with
  blockers, 3 live subagent tasks with progress, an open question and a message that waits
  for an answer, a correction from the user, 5 file edits), its model claiming a small
  window, the main agent filling its context with big reads until it has compacted
  `--compactions` times. For each compaction: how (pruned, summary, fallback, truncated),
  the context's tokens before and after (the record's estimates), the summary's size,
  the anchors' size, and which planted facts the next request the model gets does not
  show (`long_session.missing`: structural checks, not text similarity). The summaries
  are the scripted model's `default_summary`, which quotes the user's messages it finds
  in the transcript (300 characters each) and says nothing else specific.
- **repeat**: the same session, the main agent working the open todo items in order and
  deciding every step from its request (`long_session.worker`): it reads an item's module
  and test unless the request shows them read (the calls still in the context, or the
  paths in the summary or the anchors), writes the module unless shown written, then
  marks the item completed. The share of its tool calls made after a compaction that
  repeat, with the same arguments, a call made before that compaction (target: under
  5%), for each window and module size: a lost fact shows as work done twice. A run
  that is still compacting after 100 compactions is stopped and said to loop.
- **overhead**: `Compactor.compact` on a context of N messages (the shape of `shape.py`:
  a call and its 200-byte result a round, made by a real session, then loaded), with a
  compactor model that answers at once with a fixed summary, and a window the context
  fills to 80% (the trigger): the median ms per compaction, with the checkpoint folded
  into a session in memory, and journaled in the session on disk (`batch`: the
  checkpoint is durable, one fsync). Beside it, one round's time in the same session
  (median ms per round while it was made, `batch`), and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from orchestrator.loop.compaction import MARGIN_TOKENS, Window  # noqa: E402
from orchestrator.loop.summary import SECTIONS  # noqa: E402
from orchestrator.messages import Message  # noqa: E402
from orchestrator.models.scripted import ScriptedModel, ScriptedReply  # noqa: E402
from orchestrator.session.live import MemorySession, load_state, open_session  # noqa: E402
from orchestrator.state.context import AgentContext  # noqa: E402
from orchestrator.state.settings import SessionSettings  # noqa: E402
from orchestrator.store import Durability  # noqa: E402
from orchestrator.team.compactor import Compactor  # noqa: E402
from orchestrator.team.port import SessionLike  # noqa: E402
from orchestrator.team.queries import MAIN  # noqa: E402
from orchestrator.tools import Workspace  # noqa: E402
from tests.benchmarks import long_session  # noqa: E402
from tests.benchmarks.shape import RoundClock, run_session  # noqa: E402

LOOPING = 100  # compactions after which the repeat run is stopped as a loop


def retention(window: int, compactions: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-compaction-") as tmp:
        root = Path(tmp)
        scene = long_session.Scene(
            long_session.make_workspace(root / "ws"),
            long_session.filler,
            compactions=compactions,
            window=window,
        )
        result = trio.run(scene.run, root / "sessions")
    usable = Window(window).usable
    facts = long_session.FACTS
    print(
        f"window {window} tokens ({usable} usable, compaction at 80%: "
        f"{int(usable * 0.8)}); session {result.status}; {len(scene.records)} compactions "
        f"of the main agent; {facts} planted facts"
    )
    print(" n  method   before  after  freed  summary  anchors  request  kept   facts  missing")
    print("             tokens tokens          chars    chars    chars  msgs")
    lost: dict[str, list[int]] = defaultdict(list)
    for check in scene.checks:
        r = check.record
        freed = (r.before - r.after) / r.before if r.before else 0.0
        kept = len(r.messages)
        found = facts - len(check.missing)
        print(
            f"{check.compactions:>2}  {r.method:<8} {r.before:>6} {r.after:>6} {freed:>6.0%} "
            f"{r.summary_chars:>8} {check.anchors_chars:>8} {check.chars:>8} {kept:>5} "
            f"{found:>3}/{facts} {'; '.join(check.missing) or '-'}"
        )
        for fact in check.missing:
            lost[fact].append(check.compactions)
    for n in (1, 3, 10):
        for check in (c for c in scene.checks if c.compactions == n):
            share = (facts - len(check.missing)) / facts
            print(f"after {n:>2} compactions: {share:.1%} of the planted facts in the next request")
    for fact, at in lost.items():
        print(f"lost: {fact} (after compactions {', '.join(map(str, at))})")


def repeat(windows: list[int], module_chars: list[int]) -> None:
    print(
        "window  tail tokens  module chars  compactions  calls  after a compaction  repeats  "
        "share  status"
    )
    for window in windows:
        for chars in module_chars:
            long_session.MODULE_CHARS = chars
            with tempfile.TemporaryDirectory(prefix="bench-compaction-") as tmp:
                root = Path(tmp)
                scene = long_session.Scene(
                    long_session.make_workspace(root / "ws"),
                    long_session.worker,
                    compactions=LOOPING,
                    window=window,
                )
                result = trio.run(scene.run, root / "sessions")
            after, repeated = repeats(scene.calls)
            share = len(repeated) / after if after else 0.0
            status = "looping" if len(scene.records) >= LOOPING else result.status
            # The last turns kept verbatim: `keep_recent` (8,000 tokens) or a quarter of
            # the usable input, whichever is less (team/compactor.py).
            tail = min(8_000, Window(window).usable // 4)
            print(
                f"{window:>6} {tail:>12} {chars:>13} {len(scene.records):>12} "
                f"{len(scene.calls):>6} {after:>19} {len(repeated):>8} {share:>6.1%}  {status}"
            )
            for k, name, arguments in repeated[:3]:
                print(f"{'':>34}after compaction {k}: {name}({arguments})")
    long_session.MODULE_CHARS = 1_200


def repeats(calls: list[tuple[int, str, str]]) -> tuple[int, list[tuple[int, str, str]]]:
    """The calls made after a compaction, and those of them that repeat, with the same
    arguments, a call made before the last compaction they follow."""
    first_made: dict[tuple[str, str], int] = {}
    after = 0
    repeated = []
    for compactions, name, arguments in calls:
        made = first_made.setdefault((name, arguments), compactions)
        if compactions >= 1:
            after += 1
            if made < compactions:
                repeated.append((compactions, name, arguments))
    return after, repeated


SUMMARY = "\n\n".join(
    f"## {name}\nWhat the conversation said of it, in a sentence or two." for name in SECTIONS
)


def overhead(sizes: list[int], runs: int) -> None:
    print(
        "messages  tokens  method   kept  memory ms  journal ms  round ms  "
        "memory / round  journal / round"
    )
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="bench-compaction-") as tmp:
            root = Path(tmp)
            clock = RoundClock()
            directory = trio.run(run_session, root, (size - 3) // 2, Durability.BATCH, clock)
            round_ms = statistics.median(clock.round_ms())
            state = load_state(directory, warn=print)
            messages = list(state.agents[MAIN].messages)
            memory, method, kept, tokens = trio.run(
                _compactions, MemorySession(state), messages, root, runs
            )
            journal = trio.run(_journaled, root, directory.name, messages, runs)
        print(
            f"{len(messages):>8} {tokens:>7}  {method:<8} {kept:>4} {memory:>10.2f} "
            f"{journal:>11.2f} {round_ms:>9.3f} {memory / round_ms:>15.1f} "
            f"{journal / round_ms:>16.1f}"
        )


async def _compactions(
    session: SessionLike, messages: list[Message], root: Path, runs: int
) -> tuple[float, str, int, int]:
    context = session.state.agents[MAIN]
    context.reset(messages)
    tokens = context.count().tokens
    # The window this context fills to 80% of: the fraction trigger's point.
    window = Window(int(tokens / 0.8) + MARGIN_TOKENS)
    model = ScriptedModel(lambda request: ScriptedReply(text=SUMMARY), name="compactor")
    compactor = Compactor(
        session,
        session,
        Workspace(root),
        models=lambda role: model,
        window=lambda role: window,
        files=lambda agent: set(),
        settings=SessionSettings(),
    )
    times = []
    record = None
    for _ in range(runs):
        context.reset(messages)
        start = time.perf_counter()
        record = await compactor.compact(context, "fraction")
        times.append((time.perf_counter() - start) * 1000)
    assert record is not None
    return statistics.median(times), record.method, len(record.messages), tokens


async def _journaled(root: Path, session_id: str, messages: list[Message], runs: int) -> float:
    async with open_session(root, session_id, durability=Durability.BATCH, warn=print) as live:
        context: AgentContext = live.state.agents[MAIN]
        context.reset(messages)
        window = Window(int(context.count().tokens / 0.8) + MARGIN_TOKENS)
        model = ScriptedModel(lambda request: ScriptedReply(text=SUMMARY), name="compactor")
        compactor = Compactor(
            live,
            live,
            Workspace(root),
            models=lambda role: model,
            window=lambda role: window,
            files=lambda agent: set(),
            settings=live.state.settings or SessionSettings(),
        )
        times = []
        for _ in range(runs):
            context.reset(messages)
            start = time.perf_counter()
            await compactor.compact(context, "fraction")
            times.append((time.perf_counter() - start) * 1000)
        context.reset(messages)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    kept = commands.add_parser("retention")
    kept.add_argument("--window", type=int, default=long_session.WINDOW)
    kept.add_argument("--compactions", type=int, default=10)
    again = commands.add_parser("repeat")
    again.add_argument("--windows", type=int, nargs="+", default=[8_000, 6_000, 4_000])
    again.add_argument("--module-chars", type=int, nargs="+", default=[1_200, 3_000])
    cost = commands.add_parser("overhead")
    cost.add_argument("--messages", type=int, nargs="+", default=[100, 1_000, 10_000])
    cost.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    if args.command == "retention":
        retention(args.window, args.compactions)
    elif args.command == "repeat":
        repeat(args.windows, args.module_chars)
    else:
        overhead(args.messages, args.runs)


if __name__ == "__main__":
    main()
