"""Compaction by hand: `orchestrator sessions compact` on a stopped session (through the
real command line, with a scripted model), what `sessions show` says of each context
afterwards, and `Team.compact` on a live one."""

from __future__ import annotations

import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio

from orchestrator import (
    AssistantMessage,
    ContextCompacted,
    ModelRequest,
    RunResult,
    ScriptedCall,
    ScriptedModel,
    ScriptedReply,
    SystemMessage,
    Team,
    UserMessage,
    create_session,
    drive,
    load_state,
    open_session,
)
from orchestrator.errors import CompactionFailed
from orchestrator.layout import FORMAT_VERSION, LOCK
from orchestrator.loop.anchors import HEADER
from orchestrator.models.base import COMPACTOR
from orchestrator.session.live import JOURNAL
from orchestrator.state import decode_record
from orchestrator.store import SessionLock, scan_journal
from orchestrator.team.anchoring import SUMMARY_HEADER
from tests.cli.test_cli import ROOT, orchestrator, sessions_root  # noqa: F401  (an autouse fixture)
from tests.scenes import run_settings

SUMMARY = "\n\n".join(
    [
        "## Goal and constraints\nRead the files f0, f1 and f2.",
        "## User messages\n> read the files",
        "## Decisions\nRead them one by one.",
        "## Files touched\nNone.",
        "## Errors and fixes\nNone.",
        "## Current work\nAll three are read.",
        "## Next step\nSay so.",
    ]
)


def read(path: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "read_file", "arguments": {"path": path}}]}


def write_script(path: Path, main: list[dict[str, Any]], **more: Any) -> str:
    """A script whose model claims a 6,000-token window (5,000 usable: the session never
    reaches its 4,000-token trigger by itself)."""
    path.write_bytes(orjson.dumps({"window": {"context": 6_000}, "agents": {"main": main, **more}}))
    return f"scripted:{path}"


def a_session(tmp_path: Path, files: Path, **more: Any) -> str:
    """A finished session whose main agent read three files (about 3,000 tokens)."""
    main = [read("f0.txt"), read("f1.txt"), read("f2.txt"), {"text": "read them"}]
    main.append({"text": "went on from the checkpoint"})  # (for a resume)
    model = write_script(tmp_path / "script.json", main, **more)
    ran = orchestrator("run", "read the files", "--model", model, "-w", str(files), "--yes")
    assert ran.returncode == 0, ran.stderr
    return ran.stdout.split("session ", 1)[1].split()[0]


def journal_records(directory: Path) -> list[tuple[int, Any]]:
    scan = scan_journal(directory / JOURNAL)
    return [(seq, decode_record(line)) for seq, line in enumerate(scan.lines, 1)]


def test_compact_by_hand_then_resume_goes_on_from_the_checkpoint(
    tmp_path: Path, files: Path
) -> None:
    sid = a_session(tmp_path, files, compactor=[{"text": SUMMARY}])
    directory = tmp_path / "sessions" / sid
    before = load_state(directory, warn=pytest.fail).agents["main"]
    root = tmp_path / "sessions"
    compacted = orchestrator("sessions", "compact", sid, "--sessions-dir", str(root))
    assert compacted.returncode == 0, compacted.stderr
    [line] = compacted.stdout.splitlines()
    [(seq, record)] = [
        (s, r)
        for s, r in journal_records(directory)
        if s > before.start and isinstance(r, ContextCompacted)
    ]
    outputs = "1 tool output" if record.pruned == 1 else f"{record.pruned} tool outputs"
    assert line == (
        f"main: {record.before:,} → {record.after:,} tokens, summary by scripted:script.json, "
        f"{outputs} pruned"
    )
    assert (record.reason, record.method, record.attempts) == ("by_hand", "summary", 1)
    assert record.pruned >= 1
    assert record.after < record.before
    assert f"orchestrator resume {sid} --sessions-dir {root})" in compacted.stderr  # pastes

    # The checkpoint is the live context now: the system prompt, the summary the
    # compactor role wrote, the anchors, then the last turns.
    main = load_state(directory, warn=pytest.fail).agents["main"]
    assert (main.start, main.compactions, main.summary_calls) == (seq, 1, 1)
    system, summary, anchors = main.messages[:3]
    assert system == before.messages[0]
    assert isinstance(system, SystemMessage)
    assert summary == UserMessage(content=f"{SUMMARY_HEADER}\n\n{SUMMARY}")
    assert isinstance(anchors, UserMessage)
    assert anchors.content.startswith(HEADER)
    assert "read the files" in anchors.content
    assert main.messages[-1] == before.messages[-1]  # "read them", kept verbatim
    checkpoint = list(main.messages)

    resumed = orchestrator("resume", sid, "--yes", "--message", "go on")
    assert resumed.returncode == 0, resumed.stderr
    assert "went on from the checkpoint" in resumed.stdout
    after = load_state(directory, warn=pytest.fail).agents["main"]
    assert (after.start, after.compactions) == (seq, 1)
    assert after.messages[: len(checkpoint)] == checkpoint
    last = after.messages[-1]
    assert isinstance(last, AssistantMessage)
    assert last.text == "went on from the checkpoint"


def test_the_transcript_shows_the_live_context_and_full_shows_every_message(
    tmp_path: Path, files: Path
) -> None:
    sid = a_session(tmp_path, files)
    assert orchestrator("sessions", "compact", sid).returncode == 0
    live = orchestrator("sessions", "show", sid, "--transcript")
    assert live.returncode == 0, live.stderr
    full = orchestrator("sessions", "show", sid, "--transcript", "--full")
    assert full.returncode == 0, full.stderr
    # f0's output was pruned and summarised away; the journal still has it.
    assert "line 0" not in live.stdout
    assert "line 0" in full.stdout
    assert "its live context, from its checkpoint at seq" in live.stdout
    assert live.stdout.count(SUMMARY_HEADER) == full.stdout.count(SUMMARY_HEADER) == 1
    assert full.stdout.count("══ checkpoint (seq ") == 1
    # In order: what came before, the checkpoint, its summary and anchors.
    text = full.stdout
    assert text.index("line 0") < text.index("══ checkpoint") < text.index(SUMMARY_HEADER)
    assert text.index(SUMMARY_HEADER) < text.index(HEADER)
    alone = orchestrator("sessions", "show", sid, "--full")
    assert alone.returncode == 2
    assert "--full goes with --transcript" in alone.stderr


def test_sessions_show_has_each_contexts_size_window_and_compactions(
    tmp_path: Path, files: Path
) -> None:
    sid = a_session(tmp_path, files)
    assert orchestrator("sessions", "compact", sid).returncode == 0
    info = orjson.loads(orchestrator("sessions", "show", sid, "--json").stdout)
    main = info["agents"]["main"]
    tokens = main["tokens"]
    assert (
        tokens
        == load_state(tmp_path / "sessions" / sid, warn=pytest.fail).agents["main"].count().tokens
    )
    assert main["model"] == "scripted:script.json"
    assert main["window"] == {"context": 6_000, "output": 0, "usable": 5_000}
    assert main["window_share"] == round(tokens / 5_000, 4)
    assert (main["compactions"], main["summary_calls"]) == (1, 1)
    assert main["breaker"] == {"failures": 0, "paused_until": 0, "paused": False}
    [compaction] = info["compactions"]
    assert (compaction["agent"], compaction["reason"], compaction["method"]) == (
        "main",
        "by_hand",
        "summary",
    )
    # The summary call's tokens are the session's too.
    assert info["usage"]["session"]["calls"] == 5  # four turns' calls and the summary's
    text = orchestrator("sessions", "show", sid).stdout
    share = f"{main['window_share']:.0%}"
    assert f"  {tokens:,} tokens, {share} of 5,000, 1 compaction\n" in text
    assert "\ncompactions\n" in text
    assert " main   by_hand  summary " in text


def test_compacting_a_context_of_last_turns_only_is_refused_as_nothing_to_do(
    tmp_path: Path,
    files: Path,
    sessions_root: Path,  # noqa: F811  (the fixture)
) -> None:
    """A context smaller than what a compaction keeps verbatim would only grow by a
    summary and anchors: nothing is journaled, and the breaker is left alone."""
    model = write_script(tmp_path / "script.json", [{"text": "hello"}])
    ran = orchestrator("run", "say hello", "--model", model, "-w", str(files), "--yes")
    sid = ran.stdout.split("session ", 1)[1].split()[0]
    refused = orchestrator("sessions", "compact", sid)
    assert refused.returncode == 0, refused.stderr
    assert refused.stdout.startswith("main: nothing to compact: the context of main is all")
    as_json = orjson.loads(orchestrator("sessions", "compact", sid, "--json").stdout)
    assert as_json["agent"] == "main"
    assert "nothing_to_compact" in as_json
    directory = sessions_root / sid
    assert not [r for _, r in journal_records(directory) if isinstance(r, ContextCompacted)]


def test_compactions_that_free_nothing_pause_the_automatic_trigger_and_show_says_so(
    tmp_path: Path, files: Path
) -> None:
    """A goal that fills most of the window, which the anchors carry whole: no compaction
    frees a fifth of the context, two in a row pause the trigger, `show` says until when."""
    for index in range(3):
        (files / f"small{index}.txt").write_text(str(index) * 100)
    main = [read(f"small{i % 3}.txt") for i in range(12)] + [{"text": "done"}]
    model = write_script(tmp_path / "script.json", main)
    ran = orchestrator("run", "g" * 13_000, "--model", model, "-w", str(files), "--yes")
    assert ran.returncode == 0, ran.stderr
    assert "automatic compaction of main paused until round 14" in ran.stdout
    sid = ran.stdout.split("session ", 1)[1].split()[0]
    info = orjson.loads(orchestrator("sessions", "show", sid, "--json").stdout)
    assert info["agents"]["main"]["breaker"] == {
        "failures": 0,
        "paused_until": 14,
        "paused": True,
    }
    text = orchestrator("sessions", "show", sid).stdout
    assert "  main: automatic compaction paused until round 14 (its last compactions freed" in text


def test_the_compactor_role_writes_with_its_own_model(tmp_path: Path, files: Path) -> None:
    sid = a_session(tmp_path, files)
    writer = tmp_path / "writer.json"
    writer.write_bytes(orjson.dumps({"agents": {"compactor": [{"text": SUMMARY}] * 3}}))
    config = tmp_path / "config.toml"
    config.write_text(f'[agents.compactor]\nmodel = "scripted:{writer}"\n')
    by_config = orchestrator("sessions", "compact", sid, "--json", "--config", str(config))
    assert by_config.returncode == 0, by_config.stderr
    assert orjson.loads(by_config.stdout)["model"] == "scripted:writer.json"
    other = tmp_path / "other.json"
    shutil.copy(writer, other)
    # Each on a session of its own: a context compacted once is all last turns.
    given = orchestrator(
        "sessions",
        "compact",
        a_session(tmp_path, files),
        "--json",
        "--config",
        str(config),
        "--model",
        f"scripted:{other}",
    )
    assert given.returncode == 0, given.stderr
    assert orjson.loads(given.stdout)["model"] == "scripted:other.json"
    plain = orchestrator("sessions", "compact", a_session(tmp_path, files), "--json")
    assert orjson.loads(plain.stdout)["model"] == "scripted:script.json"


def test_agent_all_compacts_every_agent_with_a_context(tmp_path: Path) -> None:
    root = tmp_path / "recorded"
    shutil.copytree(ROOT / "sessions" / f"v{FORMAT_VERSION}-completed", root)
    [sid] = [p.name for p in root.iterdir()]
    result = orchestrator("sessions", "compact", sid, "--agent", "all", "--sessions-dir", str(root))
    assert result.returncode == 0, result.stderr
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == [
        "planner",
        "main",
        "t1",
        "t2",
        "t3",
        "t4",
        "planner-2",
    ]
    state = load_state(root / sid, warn=pytest.fail)
    assert {a: c.compactions for a, c in state.agents.items()} == {
        "planner": 0,  # all last turns: nothing to compact
        "main": 2,  # one while it ran
        # Their summaries and anchors would outweigh the turns they replace: refused.
        "t1": 0,
        "t2": 0,
        "t3": 0,
        "t4": 0,
        "planner-2": 0,
    }
    assert "t1: nothing to compact: compacting t1 would not shrink its context" in result.stdout
    assert "t4: nothing to compact: the context of t4 is all last turns" in result.stdout
    one = orchestrator("sessions", "compact", sid, "--agent", "t4", "--sessions-dir", str(root))
    assert one.returncode == 0
    assert one.stdout.startswith("t4: ")


@pytest.mark.parametrize(
    ("case", "code", "message"),
    [
        ("unknown session", 2, "no session '20200101T000000-abcdef'"),
        (
            "unknown agent",
            2,
            "has no agent 'nobody' with a context (its agents: planner, main, t1, t2, t3, t4, "
            "planner-2)",
        ),
        ("in use", 1, "is in use"),
        ("open calls", 1, "have a tool call that was never answered"),  # (which: as recorded)
    ],
)
def test_what_cannot_be_compacted_is_refused_clearly(
    tmp_path: Path, case: str, code: int, message: str
) -> None:
    recording = "killed-mid-turn" if case == "open calls" else "completed"
    root = tmp_path / "recorded"
    shutil.copytree(ROOT / "sessions" / f"v{FORMAT_VERSION}-{recording}", root)
    [sid] = [p.name for p in root.iterdir()]
    args = ["sessions", "compact", sid, "--sessions-dir", str(root)]
    match case:
        case "unknown session":
            args[2] = "20200101T000000-abcdef"
        case "unknown agent":
            args += ["--agent", "nobody"]
        case "open calls":
            args += ["--agent", "all"]
    journal = (root / sid / JOURNAL).read_bytes()
    if case == "in use":
        with SessionLock(root / sid / LOCK):
            result = orchestrator(*args)
    else:
        result = orchestrator(*args)
    assert result.returncode == code, result.stderr
    assert message in result.stderr
    if case == "open calls":
        assert f"resume it first (orchestrator resume {sid}), then compact" in result.stderr
    assert result.stdout == ""
    assert (root / sid / JOURNAL).read_bytes() == journal  # nothing journaled


# --- the library: Team.compact on a live session ------------------------------------------


def reader(requests: list[ModelRequest], asked: trio.Event) -> ScriptedModel:
    """A main agent that reads three files, then answers; `asked` is set at its second
    model call, when the test asks for a compaction."""

    def respond(request: ModelRequest) -> ScriptedReply:
        requests.append(request)
        if request.role == COMPACTOR:
            return ScriptedReply(text=SUMMARY)
        if request.step == 1:
            asked.set()
        if request.step < 3:
            arguments = {"path": f"f{request.step}.txt"}
            return ScriptedReply(tool_calls=(ScriptedCall(name="read_file", arguments=arguments),))
        return ScriptedReply(text="done")

    return ScriptedModel(respond)


async def drive_asking(
    root: Path,
    files: Path,
    model: ScriptedModel,
    ready: trio.Event,
    ask: Callable[[Team], Awaitable[None]],
    goal: str = "read the files",
) -> tuple[RunResult, Path]:
    """A session in `files` driven with `model`, and beside it `ask(team)` once `ready` is
    set (by the model): the result and the session's directory."""
    sid, directory = create_session(root, goal=goal, model="m", workspace=files)
    teams: list[Team] = []

    async def asker() -> None:
        await ready.wait()
        await ask(teams[0])

    async with open_session(root, sid, warn=pytest.fail) as live, trio.open_nursery() as nursery:
        nursery.start_soon(asker)
        result = await drive(live, run_settings(model, on_team=teams.append))
    return result, directory


async def test_team_compact_compacts_a_live_agent_at_its_next_round(
    tmp_path: Path, files: Path
) -> None:
    requests: list[ModelRequest] = []
    asked = trio.Event()
    got: list[ContextCompacted | None] = []

    async def ask(team: Team) -> None:
        with pytest.raises(ValueError, match="no agent 'nobody' has a context"):
            await team.compact("nobody")
        got.append(await team.compact("main"))

    model = reader(requests, asked)
    result, directory = await drive_asking(tmp_path / "sessions", files, model, asked, ask)
    assert result.status == "completed", result.detail
    [record] = got
    assert record is not None
    assert (record.reason, record.method) == ("by_hand", "summary")
    # Made at the round boundary after the second call's results: the third call is the
    # first to see the checkpoint, and nothing of the second round is lost.
    calls = [r for r in requests if r.role != COMPACTOR]
    assert [r.step for r in requests if r.role == COMPACTOR] == [0]
    assert requests.index(next(r for r in requests if r.role == COMPACTOR)) == 2
    third = list(calls[2].messages)
    assert third == list(record.messages)
    assert any(isinstance(m, UserMessage) and m.content.startswith(SUMMARY_HEADER) for m in third)
    state = load_state(directory, warn=pytest.fail)
    assert (state.agents["main"].compactions, state.status) == (1, "completed")


async def test_an_asker_that_gives_up_takes_its_ask_back(tmp_path: Path, files: Path) -> None:
    requests: list[ModelRequest] = []
    asked = trio.Event()
    outcomes: list[ContextCompacted | None] = []

    async def ask_then_give_up(team: Team) -> None:
        with trio.move_on_after(0) as scope:
            outcomes.append(await team.compact("main"))
        assert scope.cancelled_caught

    model = reader(requests, asked)
    root = tmp_path / "sessions"
    result, directory = await drive_asking(root, files, model, asked, ask_then_give_up)
    assert result.status == "completed", result.detail
    assert outcomes == []
    assert not [r for r in requests if r.role == COMPACTOR]
    assert load_state(directory, warn=pytest.fail).agents["main"].compactions == 0


async def test_team_compact_returns_none_when_the_agent_takes_no_more_rounds(
    tmp_path: Path, files: Path
) -> None:
    got: list[ContextCompacted | None] = []
    last = trio.Event()

    def respond(request: ModelRequest) -> ScriptedReply:
        last.set()  # its only call: the turn ends with it, and so does the session
        return ScriptedReply(text="done")

    async def ask(team: Team) -> None:
        got.append(await team.compact())

    model = ScriptedModel(respond)
    result, _ = await drive_asking(tmp_path / "sessions", files, model, last, ask)
    assert result.status == "completed"
    assert got == [None]


async def test_a_compaction_by_hand_that_cannot_fit_fails_to_the_asker_not_the_agent(
    tmp_path: Path, files: Path
) -> None:
    """With no window known, a compaction by hand aims at the context's own size; a
    context hardly bigger than its system prompt cannot shrink below it: the asker gets
    `CompactionFailed`, and the agent goes on with its context as it was."""
    asked = trio.Event()
    errors: list[Exception] = []
    steps: list[int] = []

    def respond(request: ModelRequest) -> ScriptedReply:
        steps.append(request.step)
        if request.step == 0:
            asked.set()
            return ScriptedReply(tool_calls=(ScriptedCall(name="list_files", arguments={}),))
        return ScriptedReply(text="done")

    async def ask(team: Team) -> None:
        try:
            await team.compact()
        except CompactionFailed as exc:
            errors.append(exc)

    result, directory = await drive_asking(
        tmp_path / "sessions", files, ScriptedModel(respond), asked, ask, goal="list the files"
    )
    [error] = errors
    assert "does not fit" in str(error)
    assert result.status == "completed"
    assert steps == [0, 1]
    assert load_state(directory, warn=pytest.fail).agents["main"].compactions == 0
