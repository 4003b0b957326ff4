"""Compaction as the command line shows it: the terminal's lines for a compaction's start
and result, `--json`'s events, and the model each role gets for its summaries."""

from __future__ import annotations

import io
from pathlib import Path

import msgspec
import orjson
import pytest

from orchestrator import (
    CompactionStarted,
    ContextCompacted,
    Definitions,
    Notice,
    TranscriptSink,
    UserMessage,
)
from orchestrator.cli.event_lines import compaction_line
from orchestrator.cli.roles import RoleModels
from orchestrator.config import AgentConfig, Config
from orchestrator.models.base import COMPACTOR
from orchestrator.models.http import make_client
from tests.cli.test_cli import orchestrator, sessions_root  # noqa: F401  (an autouse fixture)


def compacted(method: str, **fields: object) -> ContextCompacted:
    values: dict[str, object] = {"before": 12_480, "after": 2_310, "pruned": 0, **fields}
    return ContextCompacted(
        agent="main",
        messages=(UserMessage(content="summary"),),
        reason="fraction",
        method=method,  # type: ignore[arg-type]
        **values,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("event", "line"),
    [
        (
            CompactionStarted(agent="main", reason="fraction", tokens=4_120, usable=5_000),
            "⧉ compacting main: 4,120 tokens (82% of its window), near its window",
        ),
        (
            CompactionStarted(agent="t1", reason="too_long", tokens=210_000, usable=199_000),
            "⧉ compacting t1: 210,000 tokens (105% of its window), the provider found it too long",
        ),
        (
            CompactionStarted(agent="main", reason="by_hand", tokens=900, usable=0),
            "⧉ compacting main: 900 tokens, asked for by hand",
        ),
        (
            compacted("pruned", pruned=14),
            "⧉ compacted main: 12,480 → 2,310 tokens, old tool outputs pruned (14 tool outputs)",
        ),
        (compacted("summary"), "⧉ compacted main: 12,480 → 2,310 tokens, summarised"),
        (
            compacted("summary", pruned=1),
            "⧉ compacted main: 12,480 → 2,310 tokens, summarised, 1 tool output pruned",
        ),
        (
            compacted("fallback", pruned=3),
            "⧉ compacted main: 12,480 → 2,310 tokens, summarised without a model (the "
            "model's summary failed), 3 tool outputs pruned",
        ),
        (
            compacted("truncated", dropped=12),
            "⧉ compacted main: 12,480 → 2,310 tokens, summarised, its 12 oldest messages dropped",
        ),
        (
            compacted("summary", before=900, after=1_050),
            "⧉ compacted main: 900 → 1,050 tokens, summarised (it freed nothing)",
        ),
    ],
)
def test_a_compaction_reads_as_one_line(event: CompactionStarted, line: str) -> None:
    assert compaction_line(event) == line


async def test_the_transcript_shows_whose_compaction_and_its_notices() -> None:
    out = io.StringIO()
    sink = TranscriptSink(out, color=False)
    await sink.emit(CompactionStarted(agent="t1", reason="fraction", tokens=10, usable=10))
    await sink.emit(msgspec.structs.replace(compacted("summary"), agent="t1"))
    await sink.emit(Notice(agent="t1", message="automatic compaction of t1 paused until round 9"))
    assert out.getvalue().splitlines() == [
        "[t1] ⧉ compacting t1: 10 tokens (100% of its window), near its window",
        "[t1] ⧉ compacted t1: 12,480 → 2,310 tokens, summarised",
        "! automatic compaction of t1 paused until round 9",
    ]


def test_json_events_carry_a_compactions_start_and_its_checkpoint_whole(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for index in range(3):
        (ws / f"f{index}.txt").write_text(f"line {index}\n" * 500)
    reads = [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": f"f{i}.txt"}}]}
        for i in range(3)
    ]
    script = tmp_path / "script.json"
    script.write_bytes(
        orjson.dumps({"window": {"context": 3_000}, "agents": {"main": [*reads, {"text": "ok"}]}})
    )
    result = orchestrator(
        "run", "read the files", "--model", f"scripted:{script}", "-w", str(ws), "--yes", "--json"
    )
    assert result.returncode == 0, result.stderr
    events = [orjson.loads(line) for line in result.stdout.splitlines()]
    started = next(e for e in events if e["kind"] == "compaction_started")
    assert started["agent"] == "main"
    assert started["reason"] == "fraction"
    assert started["usable"] == 2_000
    assert "seq" not in started  # not journaled
    done = next(e for e in events if e["kind"] == "context_compacted")
    assert done["seq"] > 0
    assert done["before"] > done["after"]
    # The checkpoint whole, as the journal has it: the context the agent goes on from.
    assert done["messages"][0]["role"] == "system"
    assert any("read the files" in m.get("content", "") for m in done["messages"])


async def test_the_compactor_role_gets_its_configured_model_else_the_sessions(
    tmp_path: Path,
) -> None:
    for name in ("main", "writer", "worker", "given"):
        (tmp_path / f"{name}.json").write_bytes(b'{"agents": {}}')
    configured = Config(
        agents={
            COMPACTOR: AgentConfig(model=f"scripted:{tmp_path / 'writer.json'}"),
            "worker": AgentConfig(model=f"scripted:{tmp_path / 'worker.json'}"),
        }
    )
    main = f"scripted:{tmp_path / 'main.json'}"
    builtin = Definitions.builtin()
    async with make_client() as http:
        models = RoleModels(main=main, cli=None, config=configured, definitions=builtin, http=http)
        assert models(COMPACTOR).name == "scripted:writer.json"
        assert models("worker").name == "scripted:worker.json"
        assert models("main").name == "scripted:main.json"
        unset = RoleModels(main=main, cli=None, config=Config(), definitions=builtin, http=http)
        assert unset(COMPACTOR).name == "scripted:main.json"  # the session's model
        given = f"scripted:{tmp_path / 'given.json'}"
        everyone = RoleModels(
            main=main, cli=given, config=configured, definitions=builtin, http=http
        )
        assert everyone(COMPACTOR).name == "scripted:given.json"  # --model: every role's
