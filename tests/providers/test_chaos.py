"""The chaos test (issue 41): `orchestrator run` with a team of eight workers on a fallback
chain of an Anthropic model and an OpenAI-compatible one, each served on loopback by a
server that fails a seeded 30% of its requests (tests/providers/chaos.py). The session
completes, every side effect happens once, each reply's model is journaled, and the
requests stay within the retry bounds. `tests/benchmarks/bench_chaos.py` measures it
against the same run with no failures."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson
import trio
from chaos import Chaos, TeamModel, handler, run_team
from provider_server import LoopbackServer
from sdk_types import check_anthropic_request, check_openai_request


async def test_a_team_on_a_chain_of_failing_providers_completes_with_every_effect_once(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    workspace, sessions = tmp_path / "ws", tmp_path / "sessions"
    workspace.mkdir()
    model, chaos = TeamModel(workspace), Chaos(seed=41, share=0.3)
    anthropic = LoopbackServer(handler=handler(model, chaos, "anthropic"))
    openai = LoopbackServer(handler=handler(model, chaos, "openai"))
    await nursery.start(anthropic.serve)
    await nursery.start(openai.serve)

    ran = await run_team(workspace, sessions, anthropic, openai)

    assert ran.returncode == 0, ran.stdout.decode()[-3000:]
    for name, content in model.expected().items():
        assert (workspace / name).read_text() == content
    (journal,) = sessions.rglob("journal.jsonl")
    records = [orjson.loads(line) for line in journal.read_bytes().splitlines()]
    # Every side effect once: one delegation per file, one write of each file.
    created = [r for r in records if r["k"] == "task_created"]
    assert len(created) == model.files
    writes = Counter(
        orjson.loads(r["message"]["tool_calls"][0]["arguments"])["path"]
        for r in records
        if r["k"] == "assistant_replied"
        and r["message"].get("tool_calls")
        and r["message"]["tool_calls"][0]["name"] == "write_file"
    )
    assert writes == Counter(model.expected().keys())
    results = Counter(r["ref"] for r in records if r["k"] == "call_result")
    assert set(results.values()) == {1}
    # Each reply's model journaled: a model of the chain, never the chain.
    replied = Counter(r["model"] for r in records if r["k"] == "assistant_replied")
    assert set(replied) <= {"anthropic:claude-chaos", "openai:gpt-chaos"}
    switched = [r for r in records if r["k"] == "model_switched"]
    assert switched
    assert {r["chain"] for r in switched} == {"anthropic:claude-chaos,openai:gpt-chaos"}
    # Failures of every kind happened, and were outlasted within the bounds: a call is
    # sent at most 1 + 4 retries times to a model, a reply cut mid-stream is asked for
    # again at most twice, and one cut at its output limit recovered at most twice.
    assert "output limit" in ran.stdout.decode()  # a reply cut at its limit, recovered
    kinds = {f.split()[1].removesuffix("-bare") for f in chaos.faults}
    assert kinds == {"429", "500", "overloaded", "quota", "cut", "limit"}
    requests = len(anthropic.requests) + len(openai.requests)
    replies = sum(replied.values())
    assert requests == replies + sum(chaos.faults.values())
    assert requests <= replies * 2 * 5 * 3
    # What moved between the providers stayed valid on each one's wire.
    for request in anthropic.requests:
        check_anthropic_request(request.json())
    for request in openai.requests:
        check_openai_request(request.json())
