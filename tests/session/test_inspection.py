"""Inspecting sessions from Python: `list_sessions` (what `sessions list` prints) and
`session_report` (what `sessions show` prints, as text, as JSON and typed), on sessions
made by the scripted model: finished, interrupted, killed, in use, unreadable."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
import trio

import orchestrator as orc
from orchestrator import Price, Usage
from orchestrator.cli import main
from orchestrator.errors import SessionError, SessionNotFound
from orchestrator.layout import FORMAT_VERSION, JOURNAL, LOCK
from orchestrator.session.listing import latest_session_id, session_ids
from orchestrator.state import Manifest, read_manifest, write_manifest
from orchestrator.store import SessionLock
from tests.scenes import c, reply

RECORDED = Path(__file__).parents[2] / "sessions"
SPENT = Usage(input_tokens=100, output_tokens=10)  # every reply's usage: figures to check
LEAD = orc.AgentDefinition(
    name="lead", description="delegates a part", prompt="Lead.", tools=(), may_delegate=True
)


def respond(request: orc.ModelRequest) -> orc.ScriptedReply:
    """A two-level tree: main delegates t1 (a lead), which delegates t2 (a worker); each
    waits for its task, then ends (main ticks its last todo first). Answers from the
    context only."""
    last = request.messages[-1]
    waited = last.role == "tool" and last.name == "wait_tasks" and last.status == "ok"
    if request.agent == "main":
        if request.step == 0:
            return reply("", c("delegate", description="lead the part", prompt="Lead it.",
                                 agent_type="lead", write_scope=[]), usage=SPENT)  # fmt: skip
        if last.role == "tool" and last.name == "todo_update":
            return reply("The tree is done.", usage=SPENT)
        if waited:
            return reply(
                "", c("todo_update", id="2", status="completed", result="said"), usage=SPENT
            )
        return reply("", c("wait_tasks"), usage=SPENT)
    if request.agent == "t1":
        if request.step == 0:
            return reply("", c("delegate", description="do the leaf", prompt="Do it.",
                                 agent_type="worker", write_scope=[]), usage=SPENT)  # fmt: skip
        if waited:
            return reply("", c("complete", summary="the part is led"), usage=SPENT)
        return reply("", c("wait_tasks"), usage=SPENT)
    return reply("", c("complete", summary="the leaf is done"), usage=SPENT)


def run_settings() -> orc.RunSettings:
    return orc.RunSettings(
        model=orc.ScriptedModel(respond),
        tools=orc.workspace_tools(),
        ui=orc.NullSink(),
        policy=orc.PermissionPolicy(),
        approve=orc.approve_all,
        definitions=orc.Definitions([*orc.Definitions.builtin(), LEAD]),
    )


def new_session(root: Path, day: int) -> str:
    session_id, _ = orc.create_session(
        root, goal=f"goal of day {day}", model="python:respond", workspace=None,
        now=datetime(2031, 1, day, tzinfo=UTC),
    )  # fmt: skip
    return session_id


async def finished_tree(root: Path) -> str:
    session_id = new_session(root, 3)
    async with orc.open_session(root, session_id, warn=pytest.fail) as live:
        done = orc.TodoItem(id="1", content="delegate the tree", status="completed")
        await orc.seed_todos(live, [done, orc.TodoItem(id="2", content="say so")])
        with trio.fail_after(30):
            result = await orc.drive(live, run_settings())
    assert result.status == "completed", result
    return session_id


@pytest.fixture(autouse=True)
def no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`sessions show` reads prices from the user's config: none here."""
    monkeypatch.setenv("ORCHESTRATOR_CONFIG_DIR", str(tmp_path / "no-config"))
    monkeypatch.delenv("ORCHESTRATOR_CONFIG", raising=False)


def shown(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> str:
    assert main(["sessions", *args, "--sessions-dir", str(root)]) == 0
    return capsys.readouterr().out


async def test_the_listing_says_which_sessions_a_resume_would_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "sessions"
    finished = await finished_tree(root)
    fresh = new_session(root, 2)  # made, never run: `running`, and nobody holds it
    interrupted = new_session(root, 1)
    async with orc.open_session(root, interrupted, warn=pytest.fail) as live:
        with trio.CancelScope() as stop:
            stop.cancel()  # the library user stopping it from outside
            await orc.drive(live, run_settings())
    killed_recording = RECORDED / f"v{FORMAT_VERSION}-killed-mid-turn"
    shutil.copytree(killed_recording, root, dirs_exist_ok=True)
    [killed] = [p.name for p in killed_recording.iterdir()]
    unreadable = "20300101T000000-abcdef"
    (root / unreadable).mkdir()
    (root / unreadable / "session.json").write_text('{"id": "torn')
    (root / "notes").mkdir()  # not a session
    (root / "20300102T000000-abcdef").mkdir()  # a session's name, but no manifest

    listed = orc.list_sessions(str(root))
    assert [(s.id, s.status, s.resumable) for s in listed] == [
        (finished, "completed", False),
        (fresh, "stopped (resumable)", True),
        (interrupted, "interrupted", True),
        (unreadable, "unreadable", False),
        (killed, "stopped (resumable)", True),
    ]
    first = listed[0]
    assert first == orc.SessionInfo(
        id=finished, directory=root / finished, status="completed", resumable=False,
        goal="goal of day 3", created=first.created, model="python:respond",
        workspace=root / finished / "workspace", size=first.size, output="The tree is done.",
    )  # fmt: skip
    # (`now` names the id and stamps the manifest, to the microsecond.)
    assert first.created == datetime.fromisoformat(read_manifest(root / finished).created)
    assert first.size > 0
    assert listed[3].created == datetime(2030, 1, 1, tzinfo=UTC)  # from its id
    assert f"{root / unreadable / 'session.json'} is not a readable manifest" in listed[3].error

    with SessionLock(root / fresh / LOCK):  # a process runs it: nothing to resume now
        [in_use] = [s for s in orc.list_sessions(root) if s.id == fresh]
        assert (in_use.status, in_use.resumable) == ("running", False)

    # `sessions list --json` is the same listing, line by line.
    lines = [orjson.loads(line) for line in shown(capsys, root, "list", "--json").splitlines()]
    assert [(e["id"], e.get("status"), e.get("resumable")) for e in lines] == [
        (s.id, None if s.error else s.status, None if s.error else s.resumable) for s in listed
    ]
    assert lines[3] == {"id": unreadable, "error": listed[3].error}
    text = shown(capsys, root, "list")
    assert f"{unreadable:<24} unreadable: " in text
    assert f"{killed:<24} " in text
    assert orc.list_sessions(tmp_path / "nowhere") == []


def test_sessions_of_one_second_sort_by_creation_not_by_their_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ids name the second: two sessions of the same second sort by their manifests'
    microseconds, or (manifests written to the second, before) by their journals' first
    record; what `--last` picks is the one made last, not the larger random suffix."""
    root = tmp_path / "sessions"
    second = "2031-01-01T00:00:00"

    def made(session_id: str, created: str, first_record: int | None = None) -> None:
        directory = root / session_id
        directory.mkdir(parents=True)
        manifest = Manifest(
            id=session_id, goal=session_id, model="m", workspace="w", created=created,
            updated=created,
        )  # fmt: skip
        write_manifest(directory, manifest)
        if first_record is not None:
            record = {"seq": 1, "t": first_record, "k": "settings", "a": "main"}
            (directory / JOURNAL).write_bytes(orjson.dumps(record) + b"\n")

    made("20310101T000000-ffffff", f"{second}.100000+00:00")  # made first
    made("20310101T000000-000000", f"{second}.200000+00:00")  # then this one
    assert latest_session_id(root) == "20310101T000000-000000"
    assert session_ids(root) == ["20310101T000000-000000", "20310101T000000-ffffff"]

    made("20310101T000001-eeeeee", f"{second[:-1]}1+00:00", first_record=1924992001100)
    made("20310101T000001-111111", f"{second[:-1]}1+00:00", first_record=1924992001900)
    made("20310101T000001-aaaaaa", f"{second[:-1]}1+00:00")  # no journal: the oldest of three
    newest = ["20310101T000001-111111", "20310101T000001-eeeeee", "20310101T000001-aaaaaa"]
    order = [*newest, "20310101T000000-000000", "20310101T000000-ffffff"]
    assert session_ids(root) == order
    assert [s.id for s in orc.list_sessions(root)] == order
    listed = shown(capsys, root, "list").splitlines()[1:]
    assert [line.split()[0] for line in listed] == order
    assert listed[-1].split()[1] == "2031-01-01T00:00:00+00:00"  # (the list shows seconds)
    assert latest_session_id(root) == "20310101T000001-111111"


async def test_the_report_of_a_two_level_tree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "sessions"
    session_id = await finished_tree(root)
    price = Price(input=1.0, output=2.0)  # dollars per million tokens
    report = orc.session_report(root, session_id, {"scripted": price})
    assert (report.status, report.resumable, report.goal) == ("completed", False, "goal of day 3")
    assert report.created == datetime.fromisoformat(read_manifest(root / session_id).created)

    # The tree: t1 (main's) above t2 (t1's); each subtree's usage is its own and below.
    [lead] = report.task_tree
    [leaf] = lead.children
    assert (lead.task.task_id, lead.task.agent_type, leaf.task.task_id) == ("t1", "lead", "t2")
    assert (leaf.task.owner, leaf.children) == ("t1", ())
    assert report.tasks["t2"].completion is not None
    by_agent, by_subtree = report.usage.by_agent, report.usage.by_subtree
    assert leaf.usage == by_subtree["t2"] == by_agent["t2"]
    assert lead.usage == by_subtree["t1"]
    assert lead.usage.calls == by_agent["t1"].calls + by_agent["t2"].calls
    assert lead.usage.usage == by_agent["t1"].usage + by_agent["t2"].usage
    calls = lead.usage.calls
    assert lead.usage.usage == Usage(input_tokens=100 * calls, output_tokens=10 * calls)
    one_call = (100 * 1.0 + 10 * 2.0) / 1e6
    assert lead.usage.cost_usd == pytest.approx(one_call * lead.usage.calls)
    assert report.usage.session.calls == sum(t.calls for t in by_agent.values())
    assert by_agent["main"].cost_usd == pytest.approx(one_call * by_agent["main"].calls)
    assert orc.session_report(root, session_id).usage.session.cost_usd is None  # no prices

    # Every message, delivered ones too; the todo list; the verdicts; the agents.
    assert [(m.kind, m.sender, m.recipient) for m in report.mail] == [
        ("completed", "t2", "t1"),
        ("completed", "t1", "main"),
    ]
    assert all(m.delivered for m in report.mail)
    todos = report.todos["main"]
    assert [(item.id, item.status) for item in todos.items.values()] == [
        ("1", "completed"),
        ("2", "completed"),
    ]
    assert report.assessments[-1].action == "completed"
    assert set(report.agents) == {"main", "t1", "t2"}
    assert report.agents["t1"].model_calls == by_agent["t1"].calls
    assert report.plan is None
    assert report.compactions == ()

    # What `sessions show` prints, text and JSON, is the report's.
    plain = orc.session_report(root, session_id)
    assert shown(capsys, root, "show", session_id) == plain.text() == str(plain)
    assert shown(capsys, root, "show", session_id, "--json") == plain.to_json()
    assert "subtree t1" in plain.text()  # its row in the usage table
    assert "subtree t2" not in plain.text()  # a leaf's subtree is its agent's row
    # A session directory does as well as its root and id.
    assert orc.session_report(root / session_id).data == plain.data


def test_a_killed_session_reads_back_stopped_and_resumable(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    shutil.copytree(RECORDED / f"v{FORMAT_VERSION}-killed-mid-turn", root)
    [session_id] = [p.name for p in root.iterdir()]
    report = orc.session_report(root, session_id, last=0)
    assert (report.status, report.resumable) == ("stopped (resumable)", True)
    assert report.last_events == ()
    live = [t.task_id for t in report.tasks.values() if t.state == "running"]
    assert live  # cut off with tasks at work
    history = orc.mail_history(root / session_id)  # every message, from the journal
    assert [m.message_id for m in report.mail] == [m.message_id for m in history]


def test_an_unknown_session_is_named_with_its_root(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    with pytest.raises(SessionNotFound, match=f"no session '20261123T030617-ffffff' under {root}"):
        orc.session_report(root, "20261123T030617-ffffff")
    with pytest.raises(SessionError, match="is not a session id"):
        orc.session_report(root, "../etc")
