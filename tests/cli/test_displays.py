"""Issue 38, item 8: what a person reads was short or untrue. The Ctrl+C summary has the
task tree, the workspace and the spend; the live view names each agent's model from its
start, whole when it fits; a task's time is the time it ran, not the days between a
crash and a resume; `plan` warns of nothing it never does; `chat --last` shows the
conversation so far."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import orjson

from orchestrator import AgentStarted, AssistantMessage, AssistantReplied, TaskCreated
from orchestrator.store._line import encode
from orchestrator.view import ViewModel, plain_frame
from orchestrator.view.history import session_view
from tests.cli.terminal import Terminal
from tests.cli.test_headless import NOTICE
from tests.cli.test_headless import orchestrator as headless
from tests.plans.test_handoff import SCRIPT as PLANNED
from tests.scenes import call, one_task_script

SLEEPS = [
    {"tool_calls": [call("shell", command="sleep 60")]},
    {"tool_calls": [call("complete", summary="slept")]},
]
DELEGATES_A_SLEEPER = one_task_script("sleeper", "sleep", 600, SLEEPS, "slept", "t1 slept")


def sleeper(tmp_path: Path) -> tuple[Path, subprocess.Popen[bytes]]:
    """A run (`--json`) whose task t1 sleeps a minute, stopped by Ctrl+C (SIGINT) as
    its shell call starts: (the sessions root, the process)."""
    script = tmp_path / "script.json"
    script.write_bytes(orjson.dumps({"agents": DELEGATES_A_SLEEPER}))
    root, ws = tmp_path / "s", tmp_path / "ws"
    ws.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", "run", "sleep", "-m", f"scripted:{script}",
         "-w", str(ws), "--yes", "--sandbox", "off", "--json", "--sessions-dir", str(root)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdout is not None
    for line in proc.stdout:
        event = orjson.loads(line)
        if event["kind"] == "tool_call_started" and event["agent"] == "t1":
            proc.send_signal(signal.SIGINT)
            break
    return root, proc


def test_ctrl_c_is_summed_up_as_the_end_of_a_run_is(tmp_path: Path) -> None:
    """The task tree, where the results are, what the session spent and how to go on."""
    root, proc = sleeper(tmp_path)
    ws = tmp_path / "ws"
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    [sid] = [p.name for p in root.iterdir()]
    people = stderr.decode().splitlines()
    tree = people[people.index("tasks:") + 1 :]
    assert tree[0].split() == ["TASK", "STATE", "TOOK", "WHAT"]
    assert tree[1].startswith("  main   interrupted  ")
    assert "the session · " in tree[1]
    assert tree[2].startswith("  └─ t1  running  ")  # as its record stands: revived on resume
    assert tree[3:6] == [
        f"session {sid} interrupted (Ctrl+C)",
        f"  workspace  {ws}",
        f"  session    {root / sid}",
    ]
    assert re.fullmatch(r"  spent      [\d.k]+ tokens, unpriced; this run \d+\.\ds", tree[6])
    assert tree[7:] == [
        f"  next       continue it with: orchestrator resume {sid} --sessions-dir {root} --yes"
    ]


def test_plan_does_not_warn_of_the_write_tools_its_planner_never_has(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_bytes(orjson.dumps(PLANNED))
    ws = tmp_path / "ws"
    ws.mkdir()
    common = ("-m", f"scripted:{script}", "-w", str(ws), "--sandbox", "off")
    planned = headless("plan", "write two files", *common, sessions=tmp_path / "s")
    assert planned.returncode == 0, planned.stderr
    assert NOTICE not in planned.stderr
    # A run that builds the plan writes: it is told, as before.
    built = headless(
        "run", "write two files", "--plan", "--approve", *common, sessions=tmp_path / "s"
    )
    assert NOTICE in built.stdout


def test_an_agent_shows_its_roles_model_before_its_first_reply(tmp_path: Path) -> None:
    """At a terminal, a model slow to answer: the main agent thinks, its model named."""
    script = tmp_path / "script.json"
    replies = {"main": [{"text": "late"}]}
    script.write_bytes(orjson.dumps({"latency": 60, "agents": replies}))
    ws = tmp_path / "ws"
    ws.mkdir()
    args = ["-m", f"scripted:{script}", "-w", str(ws), "--sessions-dir", str(tmp_path / "s")]
    terminal = Terminal(["run", "wait", *args], cols=100, rows=20)
    terminal.see_that(lambda lines: any("thinking" in line for line in lines), "thinking")
    [row] = [line for line in terminal.lines() if " main main " in line]
    assert row.split()[3:5] == ["thinking", "scripted:script.json"], row
    terminal.type(b"\x03")
    assert terminal.finish() == 130, terminal.text()


GPT = "openrouter:anthropic/claude-sonnet-4.5"


def shown_models() -> ViewModel:
    """main, its task t1 (a worker) and a call of its in the background (t2), the
    model of each role told: none has replied yet."""
    model = ViewModel(clock=lambda: 0.0)
    model.configure({"main": GPT, "worker": "openai:gpt-4.1"}.get)
    model.apply(AgentStarted(agent="main", role="main", messages=()))
    model.apply(TaskCreated(agent="main", task="t1", agent_type="worker", description="parse"))
    model.apply(
        TaskCreated(
            agent="main", task="t2", agent_type="shell", description="make", task_kind="tool"
        )
    )
    return model


def test_the_view_names_each_agents_model_from_its_start_and_a_reply_wins() -> None:
    model = shown_models()
    assert [(a.id, a.model) for a in model.agents.values()] == [
        ("main", GPT),
        ("t1", "openai:gpt-4.1"),
        ("t2", ""),  # a call in the background calls no model
    ]
    reply = AssistantReplied(agent="t1", message=AssistantMessage(text="hi"), model="x:other")
    model.apply(reply)
    assert model.agents["t1"].model == "x:other"
    # Told after the agents started (a resumed session's view): those without one get it.
    late = ViewModel(clock=lambda: 0.0)
    late.apply(AgentStarted(agent="main", role="main", messages=()))
    late.configure({"main": GPT}.get)
    assert late.agents["main"].model == GPT


def test_a_model_is_cut_only_when_the_row_has_no_room_for_it() -> None:
    from orchestrator.view.frame import MODEL_LEAST, model_in

    model = shown_models()
    wide = plain_frame(model, 0.0, width=120).splitlines()
    assert f"  {GPT}  " in wide[0]  # whole: 38 characters, where 20 were shown before
    # Narrower: the model column gives way first, its provider, then its start.
    assert "  anthropic/claude-sonnet-4.5  " in plain_frame(model, 0.0, width=92).splitlines()[0]
    narrow = plain_frame(model, 0.0, width=70).splitlines()
    [cell] = [part for part in narrow[0].split("  ") if part.startswith("…")]
    assert len(cell) == MODEL_LEAST
    assert cell.endswith("sonnet-4.5")
    assert model_in("openai:gpt-4.1", 12) == "gpt-4.1"
    assert model_in("anthropic/claude-sonnet-4.5", 12) == "…-sonnet-4.5"


DAYS = 3 * 86400


def days_earlier(directory: Path, upto_seq: int) -> None:
    """The records up to `upto_seq` written three days earlier than they were, and the
    times they carry with them (each line framed again, its checksum with it)."""
    journal = directory / "journal.jsonl"
    lines = []
    for line in journal.read_bytes().splitlines():
        fields = orjson.loads(line)
        seq, t, kind, agent = (fields.pop(k) for k in ("seq", "t", "k", "a"))
        fields.pop("crc")
        end = fields.pop("more", None) is None
        if seq <= upto_seq:
            t -= DAYS * 1000
            if isinstance(fields.get("at"), int) and fields["at"]:  # a task's own times
                fields["at"] -= DAYS * 1000
        lines.append(encode(seq, t, kind, agent, fields, end=end))
    journal.write_bytes(b"".join(lines))
    (directory / "snapshot.json").unlink()  # it copied those times: the journal alone says


def test_a_task_took_the_time_it_ran_not_the_days_between_two_runs(tmp_path: Path) -> None:
    """Stopped mid-task, resumed three days later (the first run's records moved three
    days back): the task and the session took seconds, in the resume's summary, in
    `sessions show` and in the live view of the session."""
    root, proc = sleeper(tmp_path)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    [sid] = [p.name for p in root.iterdir()]
    directory = root / sid
    records = (directory / "journal.jsonl").read_bytes().splitlines()
    days_earlier(directory, upto_seq=len(records))
    resumed = headless("resume", sid, "--yes", "--sandbox", "off", sessions=root)
    assert resumed.returncode == 0, resumed.stdout
    assert f"session {sid} completed" in resumed.stdout

    def took(lines: list[str], row: str) -> str:
        """The TOOK cell of the tree's row that starts with `row`."""
        found = next(line for line in lines if line.startswith(row))
        return found[len(row) :].split()[1]

    summary = resumed.stdout.splitlines()
    shown = headless("sessions", "show", sid, sessions=root).stdout.splitlines()
    shown = shown[shown.index("tasks") :]
    for lines in (summary, shown):
        for row in ("  main ", "  └─ t1 "):
            assert re.fullmatch(r"\d+\.\ds", took(lines, row)), lines  # seconds, not 3d00h
    # The live view of the session, as a resume at a terminal starts it.
    model = session_view(directory)
    frame = plain_frame(model, model.now(), width=200).splitlines()
    for row in ("✓ main ", "└─ ✓ t1 "):
        [line] = [line for line in frame if line.startswith(row)]
        assert re.search(r"  \d+\.\ds  ", line), frame
    assert re.search(r" · \d+\.\ds$", frame[-1]), frame


def test_a_killed_run_ends_at_its_last_record_and_the_resume_begins_at_its_own() -> None:
    """Killed at 5 s, resumed three days later (its settings journaled first): two runs
    of 5 s and 2 s, whether read from the lines or folded one record at a time."""
    from orchestrator.session.runs import Runs, journal_runs, ran, total

    d = float(DAYS)
    records = [
        (0.0, "settings", {}),
        (1.0, "session_status", {"status": "running"}),
        (5.0, "call_started", {}),
        (d, "settings", {}),
        (d + 1, "session_status", {"status": "running"}),
        (d + 3, "session_status", {"status": "completed"}),
        (d + 9, "compacted", {}),  # by hand, after the end: no run's
    ]
    lines = [
        encode(n, int(at * 1000), kind, "main", body, end=True).rstrip(b"\n")
        for n, (at, kind, body) in enumerate(records, 1)
    ]
    folded = Runs()
    for at, kind, body in records:
        folded.seen(at, str(body.get("status", "")), preamble=kind == "settings")
    for runs in (journal_runs(lines).spans(), folded.spans()):
        assert total(runs) == 7.0
        assert ran(runs, 2.0, d + 3) == 5.0  # a task from 2 s to its end in the resume


def test_chat_on_a_finished_session_shows_the_conversation_so_far(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    main = [{"text": "First reply."}, {"text": "Second reply,\nin two lines."}]
    script.write_bytes(orjson.dumps({"agents": {"main": main}}))
    root, ws = tmp_path / "s", tmp_path / "ws"
    ws.mkdir()
    model = ("-m", f"scripted:{script}")
    first = headless("run", "say hello", *model, "-w", str(ws), sessions=root)
    assert first.returncode == 0, first.stdout
    [sid] = [p.name for p in root.iterdir()]
    again = headless("resume", sid, "--message", "and again?", *model, sessions=root)
    assert again.returncode == 0, again.stdout
    terminal = Terminal(["chat", "--last", *model, "--sessions-dir", str(root)], cwd=tmp_path)
    try:
        terminal.see("Type a message")
        lines = terminal.lines()
        start = lines.index("── earlier in this session ──")
        assert lines[start : lines.index("── now ──") + 2] == [
            "── earlier in this session ──",
            "› say hello",
            "First reply.",
            "› and again?",
            "Second reply,",
            "in two lines.",
            "── now ──",
            "Type a message, /help for the commands; Ctrl+C stops a turn.",
        ]
        terminal.type(b"/quit\r")
        assert terminal.finish() == 0, terminal.text()
        assert f"  session    {root / sid}" in terminal.lines()
    finally:
        terminal.close()


def test_the_conversation_so_far_is_compact(tmp_path: Path) -> None:
    from orchestrator.cli.chat_earlier import earlier

    script = tmp_path / "script.json"
    long = "\n".join(f"line {n}" for n in range(1, 10))
    script.write_bytes(orjson.dumps({"agents": {"main": [{"text": long}]}}))
    ws = tmp_path / "ws"
    ws.mkdir()
    root = tmp_path / "s"
    done = headless("run", "two\nlines", "-m", f"scripted:{script}", "-w", str(ws), sessions=root)
    assert done.returncode == 0, done.stdout
    [directory] = root.iterdir()
    assert earlier(directory, "two\nlines\x1b[2J") == [
        "── earlier in this session ──",
        "› two",
        "  lines\\x1b[2J",
        *(f"line {n}" for n in range(1, 6)),
        "… (4 more lines)",
        "── now ──",
    ]
