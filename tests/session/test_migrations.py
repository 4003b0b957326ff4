"""Migrating sessions recorded in older formats: nothing a session held is lost."""

from __future__ import annotations

import shutil
import zlib
from pathlib import Path

import msgspec
import orjson
import pytest

from orchestrator import AssistantMessage, Message, SessionState, ToolResult, load_state
from orchestrator.errors import JournalCorrupt
from orchestrator.messages import plain
from orchestrator.session import migrate, verify
from orchestrator.session.live import JOURNAL, SNAPSHOT, read_manifest
from orchestrator.session.migrations import v1_to_v2, v3_to_v4
from orchestrator.state.manifest import FORMAT_VERSION

RECORDED = Path(__file__).parents[2] / "sessions"


def v1_session(name: str, tmp_path: Path) -> Path:
    root = tmp_path / "sessions"
    shutil.copytree(RECORDED / f"v1-{name}", root)
    [directory] = [p for p in root.iterdir() if p.is_dir()]
    return directory


def test_v1_contexts_survive_migration_exactly(tmp_path: Path) -> None:
    directory = v1_session("completed", tmp_path)
    # A format-1 snapshot held whole contexts: the migrated journal must fold to them.
    old = orjson.loads((directory / SNAPSHOT).read_bytes())
    original = (directory / JOURNAL).read_bytes()
    manifest = migrate(directory, read_manifest(directory))
    assert manifest.format_version == FORMAT_VERSION
    assert (directory / "journal.v1.jsonl").read_bytes() == original
    state = load_state(directory, warn=pytest.fail)
    main = state.agents["main"]
    # Compared as structs: a field added since (with its default) is no difference; a
    # result's `ref` (format 7) is filled in by the fold, which format 1 did not keep.
    unref = [
        msgspec.structs.replace(m, ref="") if isinstance(m, ToolResult) else m
        for m in main.messages
    ]
    assert unref == msgspec.convert(old["agents"]["main"]["messages"], list[Message])
    assert (state.status, main.steps, plain(main.usage)) == (
        old["status"],
        old["agents"]["main"]["steps"],
        old["agents"]["main"]["usage"],
    )
    assert verify(directory) == []
    # Format 2 writes what format 1 wrote in 60% of the bytes.
    assert len((directory / JOURNAL).read_bytes()) < 0.7 * len(original)


def test_a_migration_cut_short_runs_again_from_the_original(tmp_path: Path) -> None:
    directory = v1_session("killed-mid-turn", tmp_path)
    v1_to_v2(directory)
    first = (directory / JOURNAL).read_bytes()
    v1_to_v2(directory)  # as if the process died before the manifest said format 2
    assert (directory / JOURNAL).read_bytes() == first
    migrate(directory, read_manifest(directory))
    main = load_state(directory, warn=pytest.fail).agents["main"]
    [(ref, call)] = main.pending_calls()
    assert call.name == "shell"
    assert ref in main.effects  # its start was durable: resume reports it interrupted


def test_a_torn_v1_tail_is_dropped_and_damage_before_it_is_refused(tmp_path: Path) -> None:
    directory = v1_session("completed", tmp_path)
    journal = directory / JOURNAL
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join(lines[:-1]) + lines[-1][:40])
    v1_to_v2(directory)
    assert len((directory / JOURNAL).read_bytes().splitlines()) < len(lines)

    directory = v1_session("killed-mid-turn", tmp_path / "again")
    journal = directory / JOURNAL
    lines = journal.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b'"agent":"main"', b'"agent":"mainx"')
    journal.write_bytes(b"".join(lines))
    with pytest.raises(JournalCorrupt, match="line 3 is damaged"):
        v1_to_v2(directory)


def test_show_and_verify_migrate_an_older_session_first(tmp_path: Path) -> None:
    import subprocess
    import sys

    directory = v1_session("completed", tmp_path)
    root = directory.parent
    for command in (["show", directory.name], ["verify", directory.name]):
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "orchestrator",
                "sessions",
                *command,
                "--sessions-dir",
                str(root),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, result.stderr
    assert read_manifest(directory).format_version == FORMAT_VERSION
    assert (directory / "journal.v1.jsonl").exists()


def test_verify_finds_a_snapshot_that_disagrees_with_the_journal(tmp_path: Path) -> None:
    directory = v1_session("completed", tmp_path)
    migrate(directory, read_manifest(directory))
    load_state(directory, warn=pytest.fail)
    state = load_state(directory, warn=pytest.fail)
    snapshot = msgspec.structs.replace(state.snapshot(), seq=6)
    (directory / SNAPSHOT).write_bytes(msgspec.json.encode(snapshot))
    [problem] = verify(directory)  # steps and usage at seq 6 are not the final ones
    assert "does not match the journal folded to seq 6" in problem


def test_verify_finds_a_journal_mark_the_journal_does_not_hold(tmp_path: Path) -> None:
    directory = v1_session("completed", tmp_path)
    migrate(directory, read_manifest(directory))
    state = load_state(directory, warn=pytest.fail)
    data = (directory / JOURNAL).read_bytes()
    good = (state.seq, len(data), zlib.crc32(data))
    (directory / SNAPSHOT).write_bytes(state.snapshot_json(good))
    assert verify(directory) == []
    for wrong in ((state.seq, len(data), good[2] ^ 1), (state.seq - 1, *good[1:])):
        (directory / SNAPSHOT).write_bytes(state.snapshot_json(wrong))
        [problem] = verify(directory)
        assert f"marks the journal as {list(wrong)}" in problem
        # Resume does not trust it: it checks every line, and loads the same state.
        assert load_state(directory, warn=pytest.fail).describe() == state.describe()


def test_a_v2_session_resumes_after_the_v3_step(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    shutil.copytree(RECORDED / "v2-killed-mid-turn", root)
    [directory] = [p for p in root.iterdir() if p.is_dir()]
    before = load_state(directory, warn=pytest.fail).describe()
    manifest = migrate(directory, read_manifest(directory))
    assert manifest.format_version == FORMAT_VERSION
    after = load_state(directory, warn=pytest.fail).describe()
    assert after == before
    assert after["tasks"] == []
    assert after["mailbox"]["live"] == []


def test_a_v3_session_loses_only_its_snapshot_to_the_v4_step(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    shutil.copytree(RECORDED / "v3-completed", root)
    [directory] = [p for p in root.iterdir() if p.is_dir()]
    assert (directory / SNAPSHOT).exists()
    journal = (directory / JOURNAL).read_bytes()
    manifest = migrate(directory, read_manifest(directory))
    assert manifest.format_version == FORMAT_VERSION
    assert not (directory / SNAPSHOT).exists()  # it lacked format 4's counters
    assert (directory / JOURNAL).read_bytes() == journal
    state = load_state(directory, warn=pytest.fail)
    # The session's counters are folded from the whole journal, not left at zero.
    assert state.rounds == sum(a.steps for a in state.agents.values()) > 0
    assert state.tasks.tasks  # the v3 recording delegated
    assert state.todos == {}
    assert verify(directory) == []
    v3_to_v4(directory)  # a step run again (cut short before the manifest) is no error


@pytest.fixture(params=["completed", "killed-mid-turn"])
def name(request: pytest.FixtureRequest) -> str:
    """Each recording of a format (tests/recordings/record.py), by name."""
    return str(request.param)


def migrated_untouched(tmp_path: Path, recorded: str) -> Path:
    """The recorded session copied and migrated: checks that nothing but the manifest's
    version is rewritten and that it folds to what it folded to before; its directory."""
    root = tmp_path / "sessions"
    shutil.copytree(RECORDED / recorded, root)
    [directory] = [p for p in root.iterdir() if p.is_dir()]
    files = {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}
    before = load_state(directory, warn=pytest.fail)
    manifest = migrate(directory, read_manifest(directory))
    assert manifest.format_version == FORMAT_VERSION
    after = {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}
    assert after.keys() == files.keys()
    assert {k for k in files if files[k] != after[k]} == {"session.json"}
    assert load_state(directory, warn=pytest.fail).describe() == before.describe()
    return directory


def untouched(tmp_path: Path, recorded: str) -> tuple[Path, SessionState]:
    """`migrated_untouched`, checked by `verify` as well, and what its directory folds
    to: (directory, state)."""
    directory = migrated_untouched(tmp_path, recorded)
    assert verify(directory) == []
    return directory, load_state(directory, warn=pytest.fail)


def test_a_v8_session_becomes_v9_untouched_its_tasks_subagents_and_calls_in_the_foreground(
    tmp_path: Path, name: str
) -> None:
    _, state = untouched(tmp_path, f"v8-{name}")
    assert state.tasks.tasks
    assert all(t.kind == "agent" for t in state.tasks.tasks.values())
    # Its journaled settings read with the background settings at their defaults.
    assert state.settings is not None
    assert (
        state.settings.background_per_agent,
        state.settings.background_per_session,
        state.settings.background_after,
    ) == (4, 16, None)


def test_a_v9_session_becomes_v10_untouched_on_the_local_engine(tmp_path: Path, name: str) -> None:
    _, state = untouched(tmp_path, f"v9-{name}")
    # Its settings read with the local engine, and no task says where it ran.
    assert state.settings is not None
    assert (state.settings.engine, state.settings.engine_database) == ("local", "")
    assert state.tasks.tasks
    assert all(t.ran_on is None for t in state.tasks.tasks.values())


def test_a_v10_session_becomes_v11_untouched_its_sandbox_unset_and_nothing_approved_ahead(
    tmp_path: Path, name: str
) -> None:
    _, state = untouched(tmp_path, f"v10-{name}")
    # Its settings read with the sandbox and network unset (the next run's flags and
    # config give them) and no plan approval given in advance (a resume gives --approve
    # again, as a format-10 one had to).
    assert state.settings is not None
    settings = state.settings
    assert (settings.sandbox, settings.network) == (None, None)
    assert (settings.approve, settings.approve_through) == ("", 0)


def test_a_v11_session_becomes_v12_untouched_nothing_parked_and_no_output_yet(
    tmp_path: Path, name: str
) -> None:
    directory, state = untouched(tmp_path, f"v11-{name}")
    # No call of a format-11 session was parked, and its manifest has no answer until
    # its next run ends.
    assert state.approvals.pending == {}
    assert state.approvals.decided == {}
    assert read_manifest(directory).output == ""


def test_a_v12_session_becomes_v13_untouched_no_chain_moved_nothing_cut(
    tmp_path: Path, name: str
) -> None:
    _, state = untouched(tmp_path, f"v12-{name}")
    # A format-12 session had no fallback chain, no thinking said whose it was, and no
    # call was cut at the output limit.
    assert state.fallbacks.chains == {}
    replies = [
        m for a in state.agents.values() for m in a.messages if isinstance(m, AssistantMessage)
    ]
    assert replies
    assert all(block.source is None for m in replies for block in m.thinking)
    assert all(call.cut is None for m in replies for call in m.tool_calls)


def test_a_v13_session_becomes_v14_untouched_no_hook_pin_checkpoint_trace_or_fork(
    tmp_path: Path, name: str
) -> None:
    directory, state = untouched(tmp_path, f"v13-{name}")
    assert msgspec.to_builtins(state.hooks) == msgspec.to_builtins(type(state.hooks)())
    assert msgspec.to_builtins(state.mcp) == msgspec.to_builtins(type(state.mcp)())
    assert msgspec.to_builtins(state.checkpoints) == msgspec.to_builtins(type(state.checkpoints)())
    manifest = read_manifest(directory)
    assert (manifest.parent, manifest.parent_seq) == ("", 0)
    assert manifest.trace_id is msgspec.UNSET


def test_a_v14_session_becomes_v15_untouched_nothing_asked_by_a_server(
    tmp_path: Path, name: str
) -> None:
    assert FORMAT_VERSION == 15
    directory, state = untouched(tmp_path, f"v14-{name}")
    assert (state.mcp.waiting, state.mcp.answers, state.mcp.sampled) == ({}, {}, {})
    assert state.mcp.resources == {}
    assert not (directory / "files" / "index-behind").exists()
