"""What one `run` does not do when it need not (issue 39, item 6): with a `Model` object
it makes no HTTP client, whose TLS context (the system's certificates, read anew for each
client) was two thirds of a call's time."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

import orchestrator as orc
from orchestrator import ScriptedModel, ScriptedReply
from orchestrator.errors import ConfigError


@pytest.mark.parametrize("in_memory", [False, True])
async def test_a_run_with_a_model_object_makes_no_http_client(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_memory: bool
) -> None:
    def refused(self: httpx.AsyncClient, *args: object, **kwargs: object) -> None:
        raise AssertionError("an HTTP client was made")

    monkeypatch.setattr(httpx.AsyncClient, "__init__", refused)
    where = {"in_memory": True} if in_memory else {"sessions_dir": tmp_path / "s"}
    result = await orc.run(
        "hi",
        model=ScriptedModel(lambda r: ScriptedReply(text="Hi.")),
        workspace=workspace,
        **where,  # type: ignore[arg-type]
    )
    assert (result.status, result.output) == ("completed", "Hi.")


async def test_a_run_with_a_providers_spec_still_makes_one(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[httpx.AsyncClient] = []
    real = httpx.AsyncClient.__init__

    def counted(self: httpx.AsyncClient, *args: object, **kwargs: object) -> None:
        made.append(self)
        real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(httpx.AsyncClient, "__init__", counted)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        await orc.run(
            "hi", model="openai:gpt-4.1", workspace=workspace, sessions_dir=tmp_path / "s"
        )
    assert len(made) == 1
