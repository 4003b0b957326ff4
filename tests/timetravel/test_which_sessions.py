"""Which sessions take workspace checkpoints: one whose tools a checkpoint follows
(`write_file`, `edit_file`, `shell`), not a plain agent given only its own functions,
whose first run would otherwise store the whole workspace for nothing."""

from __future__ import annotations

from pathlib import Path

import orjson

import orchestrator as orc
from orchestrator.session.shadow import available

KINDS = ("workspace_checkpoint",)


def lookup(city: str) -> str:
    """The weather in `city`."""
    return f"sunny in {city}"


def checkpoints(session_dir: Path) -> list[dict[str, object]]:
    lines = (session_dir / "journal.jsonl").read_bytes().splitlines()
    return [r for r in map(orjson.loads, lines) if r["k"] in KINDS]


async def test_a_plain_agent_with_its_own_functions_takes_none(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "big.txt").write_text("x" * 1000)
    model = orc.ScriptedModel(lambda r: orc.ScriptedReply(text="ok"))
    result = await orc.run(
        "hi", model=model, tools=[orc.tool(lookup)], workspace=tmp_path / "ws",
        sessions_dir=tmp_path / "s",
    )  # fmt: skip
    assert result.session_dir is not None
    assert checkpoints(result.session_dir) == []
    assert not (result.session_dir / "files").exists()


async def test_a_session_with_the_workspace_tools_takes_them(tmp_path: Path) -> None:
    if not available():
        return
    (tmp_path / "ws").mkdir()
    model = orc.ScriptedModel(lambda r: orc.ScriptedReply(text="ok"))
    result = await orc.run(
        "hi", model=model, tools=orc.workspace_tools(), workspace=tmp_path / "ws",
        sessions_dir=tmp_path / "s",
    )  # fmt: skip
    assert result.session_dir is not None
    assert [r["why"] for r in checkpoints(result.session_dir)][:1] == ["start"]
