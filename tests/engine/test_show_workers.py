"""`sessions show` of a session whose tasks ran on workers (issue 26): the session's
journal holds each task's start and what it posted, the engine's database the rest. Read
from there, the tasks' usage, turns and transcripts are shown as a local task's are;
when the database cannot be read, the session's own report, and one line saying why."""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio

pytest.importorskip("dbos")

from tests.crash.harness import cli
from tests.engine.sessions import TWO_TASKS
from tests.engine.workers import start_worker
from tests.scenes import journaled_session


@dataclass(frozen=True)
class Ran:
    """A session run on the command line whose two tasks ran on a worker."""

    root: Path
    session_id: str
    database: Path
    env: dict[str, str]

    def show(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            cli("sessions", "show", self.session_id, *args, sessions=self.root),
            capture_output=True,
            text=True,
            env=self.env,
            timeout=60,
            check=False,
        )
        assert "Traceback" not in done.stderr, done.stderr
        if check:
            assert done.returncode == 0, done.stdout + done.stderr
        return done


async def _run_on_a_worker(tmp: Path, env: dict[str, str]) -> Ran:
    root, workspace, database = tmp / "sessions", tmp / "ws", tmp / "engine.sqlite"
    workspace.mkdir()
    script = tmp / "script.json"
    script.write_bytes(orjson.dumps(TWO_TASKS))
    url = f"sqlite:///{database}"
    async with trio.open_nursery() as nursery:
        worker = await start_worker(nursery, url, tmp)
        with trio.fail_after(120):
            await worker.see("takes tasks from")
            run = await trio.run_process(
                cli(
                    "run",
                    "write a and b",
                    "-m",
                    f"scripted:{script}",
                    "--workspace",
                    str(workspace),
                    "--engine",
                    "dbos",
                    "--workers",
                    "--database-url",
                    url,
                    "--yes",
                    "--json",
                    sessions=root,
                ),
                capture_stdout=True,
                capture_stderr=True,
                env=env,
                check=False,
            )
        await worker.stop()
    assert run.returncode == 0, run.stderr.decode()[-3000:]
    [directory] = root.iterdir()
    return Ran(root, directory.name, database, env)


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Ran:
    tmp = tmp_path_factory.mktemp("on-workers")
    env = {**os.environ, "NO_COLOR": "1", "ORCHESTRATOR_CONFIG_DIR": str(tmp / "no-config")}
    env.pop("ORCHESTRATOR_CONFIG", None)
    return trio.run(_run_on_a_worker, tmp, env)


def test_show_reads_the_tasks_usage_and_turns_from_the_engine_s_database(ran: Ran) -> None:
    report = orjson.loads(ran.show("--json").stdout)
    assert report["on_workers"] == {
        "database": f"sqlite:///{ran.database}",
        "tasks": ["t1", "t2"],
        "unread": "",
    }
    # Each task's two model calls (its turns), from its own journal on the worker.
    for task in ("t1", "t2"):
        agent = report["agents"][task]
        assert (agent["model_calls"], agent["messages"]) == (2, 6)
        assert agent["usage"]["input_tokens"] > 0
        assert report["usage"]["by_subtree"][task]["calls"] == 2
        assert report["usage"]["by_agent"][task] == report["usage"]["by_subtree"][task]
    main_calls = report["agents"]["main"]["model_calls"]
    assert report["usage"]["session"]["calls"] == main_calls + 4

    text = ran.show().stdout
    assert (
        f"on workers t1, t2: their transcripts and usage read from sqlite:///{ran.database}\n"
        in text
    )
    assert f"engine     dbos on sqlite:///{ran.database}, its tasks on workers\n" in text
    rows = {line.split()[1]: line.split() for line in text.splitlines() if "─ t" in line}
    assert [rows[task][2] for task in ("t1", "t2")] == ["completed", "completed"]  # STATE
    assert [rows[task][4] for task in ("t1", "t2")] == ["2", "2"]  # CALLS
    agents = {line.split()[0]: line.split() for line in text.splitlines() if line[2:4] == "t1"}
    assert agents["t1"][3:5] == ["6", "2"]  # MESSAGES, CALLS


@pytest.mark.parametrize("full", [False, True], ids=["live", "full"])
def test_the_transcripts_of_tasks_on_workers(ran: Ran, full: bool) -> None:
    out = ran.show("--transcript", *(["--full"] if full else [])).stdout
    assert out.startswith(
        f"(the transcripts of its tasks on workers are read from sqlite:///{ran.database})\n"
    )
    for task, name in (("t1", "a"), ("t2", "b")):
        section = out.split(f"── {task} (worker) ")[1].split("── ")[0]
        call = f'→ write_file (call_{task}_0_0) {{"path":"{name}.txt","content":"{name.upper()}"}}'
        assert call in section
        assert f"wrote 1 bytes to {name}.txt" in section
        assert f"→ complete (call_{task}_1_0)" in section
        assert f"your turn ends here ({task}.m1)" in section


def test_without_the_database_the_session_s_own_report_and_why(ran: Ran) -> None:
    away = ran.database.with_name("elsewhere.sqlite")
    ran.database.rename(away)
    try:
        report = orjson.loads(ran.show("--json").stdout)
        text = ran.show().stdout
        transcript = ran.show("--transcript").stdout
    finally:
        away.rename(ran.database)
    assert report["on_workers"]["unread"] == f"no database file {ran.database}"
    assert report["on_workers"]["tasks"] == []
    # Its start alone in the session, and its model calls as the session counted them
    # (`task_usage`): no transcript.
    assert report["agents"]["t1"]["model_calls"] == 2
    assert report["status"] == "completed"
    assert (
        f"on workers its tasks' transcripts and usage are in sqlite:///{ran.database}, not "
        f"shown: no database file {ran.database}\n" in text
    )
    assert transcript.startswith(
        f"(the transcripts of its tasks on workers are in sqlite:///{ran.database}; not "
        f"shown: no database file {ran.database})\n"
    )
    # `--database-url` names where it is now.
    moved = ran.database.with_name("moved.sqlite")
    ran.database.rename(moved)
    try:
        again = orjson.loads(ran.show("--json", "--database-url", f"sqlite:///{moved}").stdout)
    finally:
        moved.rename(ran.database)
    assert again["on_workers"]["tasks"] == ["t1", "t2"]
    assert again["agents"]["t1"]["model_calls"] == 2


def test_a_database_that_does_not_answer_is_one_line_without_its_password(ran: Ran) -> None:
    with socket.socket() as free:  # a port nothing listens on
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    url = f"postgresql://me:s3cret@127.0.0.1:{port}/orch"
    text = ran.show("--database-url", url).stdout
    [line] = [line for line in text.splitlines() if line.startswith("on workers")]
    assert line.startswith(
        f"on workers its tasks' transcripts and usage are in postgresql://me:***@127.0.0.1:"
        f"{port}/orch, not shown: it cannot be read ((psycopg.OperationalError) connection "
        "failed:"
    )
    assert "Connection refused" in line
    assert "s3cret" not in text


def test_without_the_extra_the_note_names_it(ran: Ran) -> None:
    """A Python where SQLAlchemy (the dbos extra's) cannot be imported."""
    code = (
        "import sys; sys.modules['sqlalchemy'] = None\n"
        "from orchestrator.cli.main import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    command = cli("sessions", "show", ran.session_id, sessions=ran.root)
    done = subprocess.run(
        [sys.executable, "-c", code, *command[3:]],
        capture_output=True,
        text=True,
        env=ran.env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (
        "not shown: the dbos extra is not installed: pip install 'orchestrator[dbos]'\n"
        in done.stdout
    )


def test_a_hidden_password_is_asked_for_by_its_flag(tmp_path: Path, ran: Ran) -> None:
    """A session whose journaled URL had a password (hidden): shown, with the one line
    saying which flag gives it."""
    root, script = tmp_path / "sessions", tmp_path / "s.json"
    script.write_bytes(orjson.dumps(TWO_TASKS))
    settings: dict[str, Any] = {
        "engine": "dbos",
        "engine_database": "postgresql://me:***@db.invalid/orch",
        "engine_workers": True,
    }
    session_id = journaled_session(root, script, **settings)
    shown = Ran(root, session_id, ran.database, ran.env).show().stdout
    assert (
        "on workers its tasks' transcripts and usage are in postgresql://me:***@db.invalid/"
        "orch, not shown: the session's engine database postgresql://me:***@db.invalid/orch "
        "needs its password, which is never journaled: give --database-url URL or [engine] "
        "database_url\n" in shown
    )


def test_the_library_s_report_reads_them_with_a_reader(ran: Ran) -> None:
    """`session_report(..., workers=...)`: the reader of the engine's database is handed
    in (session/ reads none); without one, the report says they are not read."""
    from orchestrator import session_report
    from orchestrator.engine.shown import read_worker_records
    from orchestrator.session.inspection import OnWorkers
    from orchestrator.session.on_workers import NO_READER

    url = f"sqlite:///{ran.database}"
    unread = session_report(ran.root, ran.session_id)
    assert unread.on_workers == OnWorkers(url, (), NO_READER)
    assert unread.agents["t1"].model_calls == 2  # as the session counted them (task_usage)
    report = session_report(
        ran.root, ran.session_id, workers=lambda session_id, _: read_worker_records(url, session_id)
    )
    assert report.on_workers == OnWorkers(url, ("t1", "t2"), "")
    assert [report.agents[task].model_calls for task in ("t1", "t2")] == [2, 2]
    assert [node.usage.calls for node in report.task_tree] == [2, 2]
    assert "on workers t1, t2: their transcripts and usage read from" in report.text()


def test_a_task_journal_that_does_not_check_is_named_and_the_others_shown(
    tmp_path: Path, ran: Ran
) -> None:
    copy = tmp_path / "copy.sqlite"
    shutil.copyfile(ran.database, copy)
    with sqlite3.connect(copy) as db:
        db.execute(
            "update orchestrator_task_records "
            "set line = cast(replace(line, 'wrote', 'WROTE') as blob) where task = ? and seq = 7",
            (f"{ran.session_id}/t1",),
        )
    report = orjson.loads(ran.show("--json", "--database-url", f"sqlite:///{copy}").stdout)
    assert report["on_workers"]["tasks"] == ["t2"]
    assert report["on_workers"]["unread"].startswith(f"remote task {ran.session_id}/t1: record 7 ")
    assert report["agents"]["t1"]["model_calls"] == 2  # as the session counted them
    assert report["agents"]["t2"]["model_calls"] == 2
