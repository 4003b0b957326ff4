"""One stream for people (issue 24, item 4), read as a program without a terminal reads
it (plain pipes): the lines for people are on stdout with the transcript, the session id
and its resume command first and the summary last (how it ended, where the results are,
what it cost, what to do next); under `--json` stdout is JSON lines only and the lines
for people are on stderr; `plan` keeps stdout for the plan; an error is on stderr."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from orchestrator import Price, Usage, load_state
from orchestrator.cli.summary import spent, summary
from orchestrator.loop.plan_markdown import parse_markdown
from tests.cli.test_cli import ROOT, orchestrator, sessions_root  # noqa: F401  (autouse)
from tests.cli.test_cli_assessment import script, workspace
from tests.plans.test_handoff import SCRIPT as PLAN_SCRIPT
from tests.scenes import call

HELLO = f"scripted:{ROOT / 'examples' / 'hello-script.json'}"  # a write, then a shell call


def first_line(out: str, root: Path) -> str:
    """The session id, checked to be said first with the command that resumes it."""
    line = out.splitlines()[0]
    found = re.fullmatch(
        r"session (\S+) \(in (.+)\); to resume it: orchestrator resume (\S+)( --.*)?", line
    )
    assert found, line
    assert found.group(2) == str(root)
    assert found.group(3) == found.group(1)
    return found.group(1)


def test_without_a_terminal_stdout_has_the_session_first_and_the_summary_last(
    tmp_path: Path,
    sessions_root: Path,  # noqa: F811
) -> None:
    ws = workspace(tmp_path)
    config = tmp_path / "prices.toml"
    config.write_text('[prices."scripted:hello-script.json"]\ninput = 1.0\noutput = 2.0\n')
    result = orchestrator(
        "run", "hello", "--model", HELLO, "-w", str(ws), "--yes", "--config", str(config)
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # nothing for people is lost to `2>/dev/null`
    sid = first_line(result.stdout, sessions_root)
    lines = result.stdout.splitlines()
    assert "● main (main)" in lines[1:3]  # the transcript follows, on the same stream
    assert lines[-4:-1] == [
        f"session {sid} completed",
        f"  workspace  {ws}",
        f"  session    {sessions_root / sid}",
    ]
    # What it cost, in the one notation, by the config's prices; how long the run took.
    usage = load_state(sessions_root / sid, warn=pytest.fail).usage_by_model
    price = Price(input=1.0, output=2.0)
    cents = price.cost(usage["scripted:hello-script.json"])
    assert re.fullmatch(rf"  spent      \S+ tokens, \${cents:.4f}; this run \d+\.\ds", lines[-1])
    assert "tasks:" not in result.stdout  # no tree without tasks


def test_a_blocked_run_says_what_to_do_next(
    tmp_path: Path,
    sessions_root: Path,  # noqa: F811
) -> None:
    model = script(
        tmp_path, {"tool_calls": [call("report_blocked", category="input", reason="which db?")]}
    )
    result = orchestrator("run", "set up the db", "--model", model, "-w", str(workspace(tmp_path)))
    assert result.returncode == 3, result.stderr
    sid = first_line(result.stdout, sessions_root)
    ending = result.stdout.splitlines()[-5:]
    assert ending[0] == f"session {sid} blocked (reported blocked: input: which db?)"
    assert ending[1:3] == [f"  workspace  {tmp_path / 'ws'}", f"  session    {sessions_root / sid}"]
    assert re.fullmatch(r"  spent      \d+ tokens, unpriced; this run \d+\.\ds", ending[3])
    assert ending[4] == (
        f"  next       answer it: orchestrator resume {sid} --message 'what it needs' (or "
        "change what blocks it, then resume)"
    )


def test_with_json_stdout_is_json_lines_only_and_people_read_stderr(
    tmp_path: Path,
    sessions_root: Path,  # noqa: F811
) -> None:
    model = script(
        tmp_path,
        {"tool_calls": [call("report_blocked", category="input", reason="which db?")]},
        {"text": "Postgres it is; done."},
    )
    result = orchestrator("run", "db", "--model", model, "-w", str(workspace(tmp_path)), "--json")
    assert result.returncode == 3, result.stderr
    events = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert events[-1]["kind"] == "session_status"
    sid = first_line(result.stderr, sessions_root)
    # (The sandbox's protection is said where the machine has one: docs/security.md.)
    people = [line for line in result.stderr.splitlines() if not line.startswith("note: shell")]
    assert people[1].startswith("no terminal and no --yes: calls of ")
    assert people[-5] == f"session {sid} blocked (reported blocked: input: which db?)"
    assert people[-1].startswith("  next       answer it: orchestrator resume ")
    # A resume, and a resume of a finished session, say nothing on stdout but JSON.
    again = orchestrator("resume", sid, "--json", "--message", "use postgres")
    assert again.returncode == 0, again.stderr
    assert all(orjson.loads(line)["session"] == sid for line in again.stdout.splitlines())
    assert again.stderr.splitlines()[0].startswith(f"resuming session {sid} (in ")
    assert again.stderr.splitlines()[-4] == f"session {sid} completed"
    done = orchestrator("resume", sid, "--json")
    assert (done.returncode, done.stdout) == (0, "")
    assert "already finished (completed)" in done.stderr
    # An error is on stderr, and stdout stays empty.
    wrong = orchestrator("resume", "20200101T000000-abcdef", "--json")
    assert (wrong.returncode, wrong.stdout) == (2, "")
    assert wrong.stderr.startswith("error: ")


def test_the_demo_with_json_prints_only_json_on_stdout(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    result = orchestrator("demo", "-w", str(tmp_path / "ws"), "--json", "--sessions-dir", str(root))
    assert result.returncode == 0, result.stderr
    kinds = [orjson.loads(line)["kind"] for line in result.stdout.splitlines()]
    assert kinds.count("tool_call_started") > 10  # the child's events, then this process's
    people = result.stderr.splitlines()
    assert people[0].startswith("session ")
    assert people[1] == f"demo workspace: {tmp_path / 'ws'}"
    assert any(line.startswith("resuming session ") for line in people)
    assert "tasks:" in people
    assert f"  workspace  {tmp_path / 'ws'}" in people


def test_plan_keeps_stdout_for_the_plan(
    tmp_path: Path,
    sessions_root: Path,  # noqa: F811
) -> None:
    path = tmp_path / "script.json"
    path.write_bytes(orjson.dumps(PLAN_SCRIPT))
    ws = workspace(tmp_path)
    planned = orchestrator("plan", "write two files", "-m", f"scripted:{path}", "-w", str(ws))
    assert planned.returncode == 0, planned.stderr
    assert [t.id for t in parse_markdown(planned.stdout).tasks] == ["a", "b"]
    sid = first_line(planned.stderr, sessions_root)
    assert "◆ plan v1 by the planner: 2 task(s)" in planned.stderr  # the transcript too
    assert planned.stderr.splitlines()[-5:-2] == [
        f"session {sid} planned (plan v1 awaits approval)",
        f"  plan     {sessions_root / sid / 'plan.md'}",
        f"  session  {sessions_root / sid}",
    ]


@pytest.mark.parametrize(
    ("prices", "said"),
    [
        ({}, "1.5k tokens, unpriced"),
        ({"a": Price(input=1, output=1)}, "1.5k tokens, $0.0010+"),
        ({"a": Price(input=1, output=1), "b": Price(input=1, output=1)}, "1.5k tokens, $0.0015"),
    ],
    ids=["none", "some", "all"],
)
def test_what_a_session_spent_in_the_one_notation(prices: dict[str, Price], said: str) -> None:
    usage = {"a": Usage(input_tokens=900, output_tokens=100), "b": Usage(input_tokens=500)}
    assert spent(usage, prices) == said
    assert spent({}, prices) == "no model calls"


def test_a_summary_keeps_its_lines_one_line_each() -> None:
    lines = summary(
        "s1",
        "failed",
        "model said:\n\x1b[2Jgone",
        places=[("workspace", Path("/tmp/w\nx"))],
        spent="10 tokens, unpriced",
        seconds=72,
        steps=["continue it with: orchestrator resume s1"],
    )
    assert lines == [
        "session s1 failed (model said:\\n\\x1b[2Jgone)",
        "  workspace  /tmp/w\\nx",
        "  spent      10 tokens, unpriced; this run 1m12s",
        "  next       continue it with: orchestrator resume s1",
    ]
