"""What is fsynced, and what need not be (issue 39, item 6): a derived file's rename is
left to the next commit, a new session's journal is made with its manifest under one
fsync of its directory, and an empty journal that was there is opened without one. Each
fsync is recorded as the file or the directory it was of (`os.fsync` wrapped: it is
called in worker threads too; the journal's appends, synced by the `fdatasync` that
store/_fs.py took at its import, are not seen)."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

import orchestrator as orc
from orchestrator import ModelRequest, ScriptedModel, ScriptedReply, ToolResult
from orchestrator.store import Durability, open_journal, write_atomic
from tests.scenes import c

Synced = list[tuple[str, str]]  # ("dir" or "file", its name)


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> Synced:
    seen: Synced = []
    lock = threading.Lock()
    real_fsync = os.fsync

    def record(fd: int) -> None:
        kind = "dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file"
        name = Path(os.readlink(f"/proc/self/fd/{fd}")).name
        with lock:
            seen.append((kind, name))

    def fsync(fd: int) -> None:
        record(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return seen


def test_an_atomic_write_syncs_its_bytes_and_its_rename(tmp_path: Path, synced: Synced) -> None:
    write_atomic(tmp_path / "a.json", b"{}")
    assert [kind for kind, _ in synced] == ["file", "dir"]
    assert synced[1] == ("dir", tmp_path.name)


def test_a_derived_file_syncs_its_bytes_and_leaves_its_rename(
    tmp_path: Path, synced: Synced
) -> None:
    write_atomic(tmp_path / "snapshot.json", b"{}", sync_rename=False)
    assert [kind for kind, _ in synced] == ["file"]
    assert (tmp_path / "snapshot.json").read_bytes() == b"{}"
    write_atomic(tmp_path / "view.json", b"{}", sync=False, sync_rename=True)  # nothing
    assert len(synced) == 1


async def test_opening_an_empty_journal_that_was_there_syncs_nothing(
    tmp_path: Path, synced: Synced
) -> None:
    path = tmp_path / "journal.jsonl"
    path.touch()
    async with open_journal(path, durability=Durability.BATCH):
        pass
    assert synced == []


async def test_opening_a_new_journal_syncs_it_and_its_directory(
    tmp_path: Path, synced: Synced
) -> None:
    async with open_journal(tmp_path / "journal.jsonl", durability=Durability.BATCH):
        pass
    assert synced == [("file", "journal.jsonl"), ("dir", tmp_path.name)]


async def test_opening_a_journal_with_records_syncs_what_a_predecessor_wrote(
    tmp_path: Path, synced: Synced
) -> None:
    path = tmp_path / "journal.jsonl"
    async with open_journal(path, durability=Durability.OFF) as journal:
        await journal.append("note", "main", {})
    assert synced == []
    async with open_journal(path, durability=Durability.BATCH):
        pass
    assert synced == [("file", "journal.jsonl")]


def answer(request: ModelRequest) -> ScriptedReply:
    if request.step == 0:
        return ScriptedReply(tool_calls=(c("read_file", path="in.txt"),))
    [result] = [m for m in request.messages if isinstance(m, ToolResult)]
    return ScriptedReply(text=f"it says {result.content}")


async def test_a_run_of_one_tool_call_syncs_its_session_directory_once(
    tmp_path: Path, synced: Synced
) -> None:
    """At its creation, covering the manifest and the journal; the rest is the journal's
    write-ahead and the bytes of the manifests and the snapshot."""
    workspace = tmp_path / "work"
    workspace.mkdir()
    (workspace / "in.txt").write_text("hello")
    result = await orc.run(
        "read in.txt",
        model=ScriptedModel(answer),
        workspace=workspace,
        sessions_dir=tmp_path / "sessions",
        tools=orc.workspace_tools(),
    )
    assert (result.status, result.output) == ("completed", "it says hello")
    assert result.session_dir is not None
    directories = [name for kind, name in synced if kind == "dir"]
    assert directories == [result.session_dir.name]
    # Still whole from what is on disk, as after a kill once the run ended.
    assert orc.load_state(result.session_dir, warn=print).status == "completed"
