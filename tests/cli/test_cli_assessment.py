"""How a session ends, from the command line: `blocked` and `budget_exhausted` each with
their exit code and advice, `resume` going on with an answer or a larger budget, the todo
list and the assessments in `sessions show`, and the views on disk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from tests.cli.test_cli import orchestrator, sessions_root  # noqa: F401  (an autouse fixture)
from tests.scenes import call

# A main agent's replies: one todo written, then done, then the end.
ONE_TODO_DONE = (
    {"tool_calls": [call("todo_write", todos=[{"content": "a"}])]},
    {"tool_calls": [call("todo_update", id="1", status="completed")]},
    {"text": "done"},
)


def script(tmp_path: Path, *replies: dict[str, Any]) -> str:
    path = tmp_path / "script.json"
    path.write_bytes(orjson.dumps({"agents": {"main": list(replies)}}))
    return f"scripted:{path}"


def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir(exist_ok=True)
    return path


def session_id(out: str) -> str:
    return out.split("session ", 1)[1].split()[0]


def test_a_blocked_session_exits_3_and_goes_on_with_an_answer(tmp_path: Path) -> None:
    model = script(
        tmp_path,
        {"tool_calls": [call("report_blocked", category="input", reason="which database?")]},
        {"text": "Postgres it is; done."},
    )
    first = orchestrator(
        "run", "set up the db", "--model", model, "-w", str(workspace(tmp_path)), "--yes"
    )
    assert first.returncode == 3, first.stderr
    sid = session_id(first.stdout)
    assert "blocked (reported blocked: input: which database?)" in first.stdout
    assert f"orchestrator resume {sid} --yes --message" in first.stdout  # as it ran: --yes
    again = orchestrator("resume", sid, "--yes")
    assert again.returncode == 3  # nothing answered it: still blocked
    answered = orchestrator("resume", sid, "--yes", "--message", "use postgres")
    assert answered.returncode == 0, answered.stderr
    assert "Postgres it is" in answered.stdout


def test_an_exhausted_budget_exits_4_and_goes_on_with_a_larger_one(tmp_path: Path) -> None:
    plan = call("todo_write", todos=[{"content": "a"}, {"content": "b"}])
    model = script(
        tmp_path,
        {"tool_calls": [plan]},
        {"text": "thinking about a"},
        {"text": "still thinking"},
        {"tool_calls": [call("todo_update", id="1", status="completed")]},
        {"tool_calls": [call("todo_update", id="2", status="completed")]},
        {"text": "both done"},
    )
    args = ("--model", model, "-w", str(workspace(tmp_path)), "--yes")
    first = orchestrator("run", "do a and b", *args, "--max-auto-continues", "1")
    assert first.returncode == 4, first.stderr
    assert "all 1 automatic continuations used" in first.stdout
    assert "--max-auto-continues N" in first.stdout
    sid = session_id(first.stdout)
    # The run's own flags are kept: a plain resume has the same limit, and stops again.
    plain = orchestrator("resume", sid, "--yes")
    assert plain.returncode == 4, plain.stderr
    more = orchestrator("resume", sid, "--yes", "--max-auto-continues", "3")
    assert more.returncode == 0, more.stderr
    assert "auto-continuing 2/3" in more.stdout
    # Both choices are in the journal, the override keeping the rest of the run's.
    journal = (tmp_path / "sessions" / sid / "journal.jsonl").read_bytes().splitlines()
    chosen = [r for r in map(orjson.loads, journal) if r["k"] == "settings"]
    assert [(r["source"], r["settings"]["max_auto_continues"]) for r in chosen] == [
        ("run", 1),
        ("override", 3),
    ]
    assert chosen[0]["settings"] == {**chosen[1]["settings"], "max_auto_continues": 1}

    shown = orchestrator("sessions", "show", sid, "--json")
    assert shown.returncode == 0, shown.stderr
    data = orjson.loads(shown.stdout)
    items = data["todos"]["main"]["items"]
    assert [(i["id"], i["content"], i["status"], i["blocked_by"]) for i in items] == [
        ("1", "a", "completed", []),
        ("2", "b", "completed", []),
    ]
    actions = [a["action"] for a in data["assessments"]]
    assert actions == [
        "continue_from_context",
        "budget_exhausted",
        "budget_exhausted",
        "continue_from_context",
        "completed",
    ]
    assert all(a["agent"] == "main" and isinstance(a["reasons"], list) for a in data["assessments"])
    text = orchestrator("sessions", "show", sid)
    assert "Tasks 2/2" in text.stdout
    rows = [row.split(maxsplit=3) for row in text.stdout.splitlines()]
    assert any(
        r[2:3] == ["budget_exhausted"] and r[3].startswith("all 1 automatic continuations used")
        for r in rows
    )

    view = tmp_path / "sessions" / sid / "todos" / "main.json"
    assert orjson.loads(view.read_bytes())["progress"] == {"completed": 2, "total": 2}


def test_json_streams_todo_and_assessment_events(tmp_path: Path) -> None:
    model = script(tmp_path, *ONE_TODO_DONE)
    run = orchestrator(
        "run", "a", "--model", model, "-w", str(workspace(tmp_path)), "--yes", "--json"
    )
    assert run.returncode == 0, run.stderr
    events = [orjson.loads(line) for line in run.stdout.splitlines()]
    todos = [e for e in events if e["kind"] == "todos_changed"]
    assert [item["status"] for e in todos for item in e["items"]] == ["pending", "completed"]
    [verdict] = [e for e in events if e["kind"] == "assessed"]
    assert (verdict["action"], verdict["reasons"]) == ("completed", ["all 1 todos done"])
    assert isinstance(verdict["seq"], int)
