"""SIGKILL a session whose main agent delegates to subagents, resume it, check that
delivery and acknowledgement held (issue 10).

The main agent delegates three tasks to `worker` subagents with disjoint write scopes
(`w1/`, `w2/`, `w3/`), waits for two of them with `wait_tasks` and answers; the third's
completion reaches it through the mailbox (`messages_delivered`). Each worker does
`ROUNDS` rounds of side effects inside its scope: `shell` appends a line to its
`log.txt` (not idempotent: a repeat shows as a duplicate line), `write_file`
(idempotent), `edit_file` bumping its `counter.txt` (not idempotent), `report_progress`
(a mailbox message), then `complete` (the completion envelope, another message).

The session runs with the real CLI in a subprocess, is killed at seeded random points
(after a random number of JSON event lines) and resumed, maybe killed again, until it
completes. Then, from the journal and the workspace: every task exists and completed,
each scripted reply was used once, no message was lost, posted twice or delivered twice
(by `messages_delivered` and `wait_tasks` results together), each completion reached
the main agent's context exactly once, no shell effect ran twice, and the workspace is
that of an uninterrupted run, but for what an `interrupted` call may or may not have
done (the rules of `harness.py`).

The bugs this test found have minimal, deterministic reproductions at the end of the
file, kept as regression tests.

Every `pytest` runs the first two seeds, `pytest -m slow` the others;
`CRASH_TEAM_SEEDS` (comma-separated) replaces the seeds; `CRASH_TEAM_KILLS` (default
5) bounds the kills per session.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import msgspec
import orjson
import pytest
import trio

from orchestrator import (
    AgentStarted,
    AssistantMessage,
    LiveSession,
    Mail,
    MessageAdded,
    SessionState,
    ToolResult,
    UserMessage,
    load_state,
    mail_history,
)
from orchestrator.session.live import JOURNAL
from orchestrator.state import read_manifest, write_manifest
from orchestrator.store import open_journal, scan_journal
from tests.crash.harness import CrashRun, cli, interrupted_calls, seeded, snapshot_workspace
from tests.scenes import call, scripted_session

ROUNDS = 4
TASKS = (1, 2, 3)
MAIN_SPARE_REPLIES = 60  # each restart (and each wake-up by mail) may cost a turn
SEEDS = seeded("CRASH_TEAM_SEEDS", "101,202,303,404,505", quick=2)
KILLS = int(os.environ.get("CRASH_TEAM_KILLS", "5"))


@dataclass(frozen=True)
class Effect:
    """A non-idempotent call of the script: what it does to the workspace if it runs."""

    what: Literal["log", "counter"]
    task: int
    round: int
    line: str = ""  # the log line a shell call appends


def log_line(task: int, r: int) -> str:
    return f"t{task}-round-{r}"


def completion_summary(task: int) -> str:
    return f"task {task} finished all {ROUNDS} rounds"


def worker_replies(task: int, effects: dict[str, Effect]) -> list[dict[str, Any]]:
    d = f"w{task}"
    replies = [
        {
            "text": "Setting up.",
            "tool_calls": [call("write_file", path=f"{d}/counter.txt", content="count=0\n")],
        }
    ]
    for r in range(1, ROUNDS + 1):
        effects[f"call_t{task}_{len(replies)}_0"] = Effect("log", task, r, log_line(task, r))
        command = f"sleep 0.01; echo {log_line(task, r)} >> {d}/log.txt"
        replies.append({"text": f"Round {r}.", "tool_calls": [call("shell", command=command)]})
        # Two writers in one reply run one after the other: a kill can fall between them.
        effects[f"call_t{task}_{len(replies)}_1"] = Effect("counter", task, r)
        replies.append(
            {
                "tool_calls": [
                    call(
                        "write_file", path=f"{d}/f{r}.txt", content=f"task {task} round {r}\n" * 8
                    ),
                    call(
                        "edit_file",
                        path=f"{d}/counter.txt",
                        old_text=f"count={r - 1}\n",
                        new_text=f"count={r}\n",
                    ),
                ]
            }
        )
        replies.append(
            {
                "tool_calls": [
                    call("report_progress", summary=f"t{task} round {r} done", percent=r * 20),
                    call("read_file", path=f"{d}/counter.txt"),
                ]
            }
        )
    files = [f"{d}/counter.txt", f"{d}/log.txt", *(f"{d}/f{r}.txt" for r in range(1, ROUNDS + 1))]
    replies.append(
        {
            "text": "Done.",
            "tool_calls": [call("complete", summary=completion_summary(task), files_changed=files)],
        }
    )
    return replies


def team_script() -> tuple[dict[str, Any], dict[str, Effect]]:
    """The script, and the non-idempotent calls of its workers by call id. Every reply
    makes sense whatever the timing: the main agent's spare replies are plain answers,
    for the extra turns a restart or a late completion gives it."""
    delegate = [
        call("delegate", description=f"part {n}", prompt=f"Do part {n}.", write_scope=[f"w{n}/"])
        for n in TASKS
    ]
    main = [
        {"text": "Delegating the three parts.", "tool_calls": delegate},
        # t1's messages come by a wait_tasks result, t2's by another, and t3's (whatever
        # the two waits did not take) by the mailbox at the main agent's next turn.
        {"tool_calls": [call("wait_tasks", tasks=["t1"])]},
        {"tool_calls": [call("wait_tasks", tasks=["t2"])]},
        # Distinct, so the assessment never takes them for a model repeating itself.
        *[{"text": f"All parts are done, or will be ({n})."} for n in range(MAIN_SPARE_REPLIES)],
    ]
    effects: dict[str, Effect] = {}
    agents: dict[str, Any] = {"main": main}
    for n in TASKS:
        agents[f"t{n}"] = worker_replies(n, effects)
    return {"version": 1, "agents": agents}, effects


# --- running -----------------------------------------------------------------------------


@dataclass
class TeamCrashRun(CrashRun):
    """A `CrashRun` of the team script in a workspace inside the session directory
    (`--session-workspace`), each process watched for hangs."""

    seen_tasks: dict[str, str] = field(default_factory=dict)  # task id -> settled state
    seen_delivered: dict[str, int] = field(default_factory=dict)  # message id -> seq

    def start_command(self) -> list[str]:
        if not self.session_id:
            return cli(
                "run", "crash test with subagents", "--model", f"scripted:{self.script}",
                "--session-workspace", "--yes", "--json",
                sessions=self.sessions,
            )  # fmt: skip
        return cli("resume", self.session_id, "--yes", "--json", sessions=self.sessions)

    @property
    def directory(self) -> Path:
        return self.sessions / self.session_id

    def session_found(self) -> None:
        self.workspace = self.directory / "workspace"

    def check_invariants(self) -> None:
        """After a kill: what the harness checks, and nothing the journal held about
        tasks or deliveries is lost or undone."""
        super().check_invariants()
        state = load_state(self.directory, warn=lambda _: None)
        for task_id, settled in self.seen_tasks.items():
            task = state.tasks.get(task_id)
            assert task is not None, f"task {task_id} was lost"
            assert not settled or task.state == settled, (task_id, settled, task.state)
        for task in state.tasks.tasks.values():
            self.seen_tasks[task.task_id] = task.state if task.state == "completed" else ""
        box = self.mail()
        for message_id, seq in self.seen_delivered.items():
            mail = box.get(message_id)
            assert mail is not None, f"message {message_id} was lost"
            assert mail.delivered_seq == seq, f"message {message_id}: delivery undone"
        for mail in box.values():
            if mail.delivered_seq is not None:
                self.seen_delivered[mail.message_id] = mail.delivered_seq
        # The live mailbox holds only what still needs something: not a delivered message
        # (it left) unless its posting call has no result yet.
        assert all(m.delivered_seq is None or m.ref for m in state.mailbox.messages.values())

    def mail(self) -> dict[str, Mail]:
        """Every message of the session, from its whole journal."""
        return {m.message_id: m for m in mail_history(self.directory)}

    def journal(self) -> list[dict[str, Any]]:
        return [frame.fields() for frame in scan_journal(self.directory / JOURNAL).records]

    def final_state(self) -> SessionState:
        self.interrupted |= interrupted_calls(self.journal())
        return load_state(self.directory, warn=lambda _: None)


def drive(run: TeamCrashRun, rng: random.Random, kills: int) -> None:
    """Kill the session after a random number of event lines, up to `kills` times,
    checking the invariants after each kill; then let it finish."""
    for _ in range(kills):
        if run.step(kill_after_events=rng.randint(1, 160)) is not None:
            return
        run.check_invariants()
    assert run.step(kill_after_events=None) == 0


# --- the checks --------------------------------------------------------------------------


@dataclass(frozen=True)
class Reference:
    """What an uninterrupted run of the script produced."""

    workspace: dict[str, str]
    messages: Counter[tuple[str, str, str, str]]  # (sender, recipient, kind, summary)
    steps: dict[str, int]  # model calls per subagent


def mail_key(mail: Mail) -> tuple[str, str, str, str]:
    return (mail.sender, mail.recipient, mail.kind, mail.summary)


def check_tasks_and_contexts(state: SessionState, reference: Reference) -> None:
    assert state.status == "completed"
    tasks = state.tasks.tasks
    assert sorted(tasks) == [f"t{n}" for n in TASKS], "a task was lost or made twice"
    for n in TASKS:
        task = tasks[f"t{n}"]
        got = (task.state, task.attempts, task.write_scope)
        assert got == ("completed", 1, [f"w{n}/"]), f"t{n}: {task.reason}"
        assert task.completion is not None
        assert task.completion.summary == completion_summary(n)
    for agent in state.agents.values():
        calls = [
            c.id for m in agent.messages if isinstance(m, AssistantMessage) for c in m.tool_calls
        ]
        results = [m.call_id for m in agent.messages if isinstance(m, ToolResult)]
        assert agent.pending_calls() == [], agent.id
        assert not agent.turn_open, agent.id
        assert sorted(calls) == sorted(results), f"{agent.id}: every call has exactly one result"
    for task_id, steps in reference.steps.items():
        # Each scripted reply entered the subagent's context once: none skipped, none twice.
        replies = [m for m in state.agents[task_id].messages if isinstance(m, AssistantMessage)]
        assert len(replies) == steps, (task_id, len(replies), steps)


def check_mailbox(
    state: SessionState, box: dict[str, Mail], journal: list[dict[str, Any]], reference: Reference
) -> None:
    """Every message (`box`, read back from the journal) posted once, delivered exactly
    once, and each completion in the main agent's context exactly once; and none of them
    is still kept by the live mailbox."""
    assert state.mailbox.messages == {}, "the live mailbox keeps delivered mail"
    assert state.mailbox.posted_count == len(box)
    posted = [r["id"] for r in journal if r["k"] == "message_posted"]
    assert sorted(posted) == sorted(box), "a posted message is missing from the mailbox"
    assert Counter(mail_key(m) for m in box.values()) == reference.messages, (
        "a message was lost or posted twice"
    )
    undelivered = [m.message_id for m in box.values() if m.delivered_seq is None]
    assert not undelivered, f"messages never delivered: {undelivered}"
    deliveries: Counter[str] = Counter()
    for record in journal:
        if record["k"] == "messages_delivered":
            deliveries.update(record["ids"])
        elif record["k"] == "call_result":
            deliveries.update(record.get("delivers") or ())
    twice = {i: n for i, n in deliveries.items() if n > 1}
    assert not twice, f"messages delivered more than once: {twice}"
    assert set(deliveries) == set(box), "a delivery record names an unknown message"
    main_texts = [m_text(m) for m in state.agents["main"].messages]
    for mail in box.values():
        if mail.kind != "completed":
            continue
        shown = sum(t.count(f"<completed id={mail.message_id} ") for t in main_texts)
        summary = sum(t.count(mail.summary) for t in main_texts)
        assert (shown, summary) == (1, 1), f"{mail.message_id} in main's context {shown} times"


def m_text(message: Any) -> str:
    return getattr(message, "content", "") or getattr(message, "text", "")


def check_workspace(
    actual: dict[str, str], expected: dict[str, str], interrupted: list[Effect]
) -> None:
    """The workspace of an uninterrupted run, but that an interrupted shell call may have
    left out its line, and an interrupted edit may have left the counter where it was
    (so that every later edit of that counter fails, visibly to the model). Nothing else
    differs: no file torn, no temporary file left behind."""
    actual, expected = dict(actual), dict(expected)
    for n in TASKS:
        log, counter = f"w{n}/log.txt", f"w{n}/counter.txt"
        lines = actual.pop(log, "").splitlines()
        want = expected.pop(log).splitlines()
        assert len(lines) == len(set(lines)), f"a side effect ran twice: {lines}"
        may_miss = {e.line for e in interrupted if e.task == n and e.what == "log"}
        assert set(lines) <= set(want), lines
        assert set(want) - set(lines) <= may_miss, (lines, may_miss)
        edits = [e.round for e in interrupted if e.task == n and e.what == "counter"]
        stuck = {f"count={r - 1}\n" for r in edits}
        assert actual.pop(counter) in {expected.pop(counter)} | stuck, (counter, edits)
    assert actual == expected


def check_final(run: TeamCrashRun, reference: Reference, effects: dict[str, Effect]) -> None:
    """Check the finished session."""
    state = run.final_state()
    check_tasks_and_contexts(state, reference)
    check_mailbox(state, run.mail(), run.journal(), reference)
    # Only the calls the harness knows as not idempotent may ever be interrupted.
    assert run.interrupted <= set(effects), run.interrupted - set(effects)
    interrupted = [effects[c] for c in run.interrupted]
    check_workspace(snapshot_workspace(run.workspace), reference.workspace, interrupted)


# --- the tests ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scripted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Effect]]:
    script, effects = team_script()
    path = tmp_path_factory.mktemp("team-script") / "script.json"
    path.write_bytes(orjson.dumps(script))
    return path, effects


@pytest.fixture(scope="module")
def reference_run(
    tmp_path_factory: pytest.TempPathFactory, scripted: tuple[Path, dict[str, Effect]]
) -> TeamCrashRun:
    path, _ = scripted
    sessions = tmp_path_factory.mktemp("team-reference")
    run = TeamCrashRun(sessions, path, sessions, random.Random(0))
    assert run.step(kill_after_events=None) == 0
    return run


@pytest.fixture(scope="module")
def reference(reference_run: TeamCrashRun, scripted: tuple[Path, dict[str, Effect]]) -> Reference:
    _, effects = scripted
    run = reference_run
    state = run.final_state()
    assert not run.interrupted
    workspace = snapshot_workspace(run.workspace)
    for n in TASKS:
        assert workspace[f"w{n}/counter.txt"] == f"count={ROUNDS}\n"
        assert workspace[f"w{n}/log.txt"].splitlines() == [
            log_line(n, r) for r in range(1, ROUNDS + 1)
        ]
    ref = Reference(
        workspace=workspace,
        messages=Counter(mail_key(m) for m in run.mail().values()),
        steps={f"t{n}": state.agents[f"t{n}"].steps for n in TASKS},
    )
    assert sum(ref.messages.values()) == len(TASKS) * (ROUNDS + 1)
    check_final(run, ref, effects)
    return ref


def test_the_uninterrupted_run_is_the_reference(reference: Reference) -> None:
    assert sorted(reference.steps.values()) == [3 * ROUNDS + 2] * len(TASKS)


@pytest.mark.parametrize("seed", SEEDS)
def test_team_sigkill_at_random_points_then_resume(
    tmp_path: Path,
    seed: int,
    scripted: tuple[Path, dict[str, Effect]],
    reference: Reference,
) -> None:
    path, effects = scripted
    rng = random.Random(seed)
    run = TeamCrashRun(tmp_path / "sessions", path, tmp_path, rng)
    drive(run, rng, KILLS)
    check_final(run, reference, effects)
    journal = run.journal()
    by_turn = sum(len(r["ids"]) for r in journal if r["k"] == "messages_delivered")
    by_wait = sum(len(r.get("delivers") or ()) for r in journal if r["k"] == "call_result")
    print(
        f"seed {seed}: {run.kills} kills, {len(run.interrupted)} calls interrupted "
        f"({sorted(run.interrupted)}), {run.tails_cut} torn tails cut; messages delivered "
        f"{by_turn} at a turn, {by_wait} by wait_tasks"
    )


# --- the checks can fail -----------------------------------------------------------------


def test_the_workspace_check_catches_a_repeated_or_lost_effect(reference: Reference) -> None:
    expected = reference.workspace
    log = "w2/log.txt"
    repeated = {**expected, log: expected[log] + log_line(2, 1) + "\n"}
    with pytest.raises(AssertionError, match="ran twice"):
        check_workspace(repeated, expected, [])
    lost = {**expected, log: "".join(f"{line}\n" for line in expected[log].splitlines()[1:])}
    with pytest.raises(AssertionError):
        check_workspace(lost, expected, [])
    check_workspace(lost, expected, [Effect("log", 2, 1, log_line(2, 1))])
    stuck = {**expected, "w3/counter.txt": "count=1\n"}
    with pytest.raises(AssertionError):
        check_workspace(stuck, expected, [Effect("counter", 3, 3)])
    check_workspace(stuck, expected, [Effect("counter", 3, 2)])
    stray = {**expected, "w1/.counter.txt.0123abcd.tmp": ""}
    with pytest.raises(AssertionError):
        check_workspace(stray, expected, [Effect("counter", 1, 2)])


def test_the_mailbox_check_catches_a_lost_repeated_or_twice_delivered_message(
    reference_run: TeamCrashRun, reference: Reference
) -> None:
    journal = reference_run.journal()
    state = reference_run.final_state()
    check_mailbox(state, reference_run.mail(), journal, reference)
    delivery = next(r for r in journal if r.get("delivers") or r["k"] == "messages_delivered")
    with pytest.raises(AssertionError, match="more than once"):
        check_mailbox(state, reference_run.mail(), [*journal, delivery], reference)
    box = reference_run.mail()
    box["m3"].delivered_seq = None
    with pytest.raises(AssertionError, match="never delivered"):
        check_mailbox(state, box, journal, reference)
    box = reference_run.mail()
    progress = next(m for m in box.values() if m.kind == "progress")
    box["m99"] = msgspec.structs.replace(progress, message_id="m99")
    state.mailbox.posted_ids.add("m99")
    posted = {**next(r for r in journal if r["k"] == "message_posted"), "id": "m99"}
    with pytest.raises(AssertionError, match="posted twice"):
        check_mailbox(state, box, [*journal, posted], reference)
    state = reference_run.final_state()
    box = reference_run.mail()
    main = state.agents["main"]
    completed = next(m for m in box.values() if m.kind == "completed")
    main.messages = [
        m for m in main.messages if f"<completed id={completed.message_id} " not in m_text(m)
    ]
    with pytest.raises(AssertionError, match="in main's context 0 times"):
        check_mailbox(state, box, journal, reference)
    state = reference_run.final_state()
    state.mailbox.messages["m1"] = box["m1"]
    with pytest.raises(AssertionError, match="keeps delivered mail"):
        check_mailbox(state, reference_run.mail(), journal, reference)


# --- the bugs it found: minimal reproductions ----------------------------------------------


class Reproduced(AssertionError):
    """A bug this file reproduces showed again (raised by `expect`, naming it)."""


def expect(condition: bool, bug: str) -> None:
    if not condition:
        raise Reproduced(bug)


WAIT_FOR_W2 = (
    "mkdir -p w1; i=0; "
    "while [ ! -f w2/x ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done; "
    "echo done >> w1/log.txt"
)


def test_a_shell_call_is_not_blamed_for_what_other_tasks_write_meanwhile(
    tmp_path: Path,
) -> None:
    """t1's shell command waits until t2 has written w2/x (so that write falls inside the
    command, as it did by chance in the crash test), then writes only in w1/."""
    script = {
        "version": 1,
        "agents": {
            "main": [
                {
                    "tool_calls": [
                        call("delegate", description="1", prompt="1", write_scope=["w1/"]),
                        call("delegate", description="2", prompt="2", write_scope=["w2/"]),
                    ]
                },
                {"tool_calls": [call("wait_tasks")]},
                *[{"text": "done"}] * 10,
            ],
            "t1": [
                {"tool_calls": [call("shell", command=WAIT_FOR_W2)]},
                {"tool_calls": [call("complete", summary="1", files_changed=["w1/log.txt"])]},
            ],
            "t2": [
                {"tool_calls": [call("write_file", path="w2/x", content="x\n")]},
                {"tool_calls": [call("complete", summary="2", files_changed=["w2/x"])]},
            ],
        },
    }
    run = run_script(tmp_path, script)
    state = run.final_state()
    assert (run.workspace / "w1/log.txt").read_text() == "done\n"
    alerts = [m.summary for m in run.mail().values() if m.kind == "risk_alert"]
    shell = next(m for m in state.agents["t1"].messages if isinstance(m, ToolResult))
    expect("w2/x" not in shell.content, f"t1's shell result: {shell.content!r}")
    expect(not alerts, f"false alerts: {alerts}")


def rewind(directory: Path, keep: Callable[[dict[str, Any]], bool]) -> int:
    """Leave a finished session as a SIGKILL leaves it right after the first journal
    record for which `keep` is true became durable: the journal cut after it (at a batch
    end, as a flush leaves it), no snapshot (resume replays the journal), the manifest
    still saying `running`. Returns the seq kept last."""
    journal = directory / JOURNAL
    lines = journal.read_bytes().splitlines(keepends=True)
    for index, line in enumerate(lines):
        fields = orjson.loads(line)
        if keep(fields):
            assert "more" not in fields, "cut inside a batch: not a state a crash leaves"
            journal.write_bytes(b"".join(lines[: index + 1]))
            break
    else:
        raise AssertionError("no such record")
    (directory / "snapshot.json").unlink(missing_ok=True)
    manifest = read_manifest(directory)
    write_manifest(directory, msgspec.structs.replace(manifest, status="running", journal_seq=0))
    return int(fields["seq"])


def completed_record_of(task: str) -> Callable[[dict[str, Any]], bool]:
    return lambda r: r["k"] == "task_changed" and r["task"] == task and r["state"] == "completed"


def run_script(tmp_path: Path, script: dict[str, Any]) -> TeamCrashRun:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "script.json"
    path.write_bytes(orjson.dumps(script))
    run = TeamCrashRun(tmp_path / "sessions", path, tmp_path, random.Random(0))
    assert run.step(kill_after_events=None) == 0
    return run


DELEGATE_AND_WAIT = [
    {"tool_calls": [call("delegate", description="a", prompt="a", write_scope=["out/"])]},
    {"tool_calls": [call("wait_tasks")]},
]
ONE_TASK_SCRIPT: dict[str, Any] = {
    "version": 1,
    "agents": {
        "main": [*DELEGATE_AND_WAIT, *[{"text": "done"}] * 5],
        "t1": [{"tool_calls": [call("complete", summary="first")]}],
    },
}
FOLLOW_UP_SCRIPT: dict[str, Any] = {
    "version": 1,
    "agents": {
        "main": [
            *DELEGATE_AND_WAIT,
            {"tool_calls": [call("send_message", task="t1", text="and also write out/b.txt")]},
            {"tool_calls": [call("wait_tasks")]},
            *[{"text": "done"}] * 5,
        ],
        "t1": [
            {"tool_calls": [call("complete", summary="first")]},
            {"tool_calls": [call("write_file", path="out/b.txt", content="b\n")]},
            {"tool_calls": [call("complete", summary="second", files_changed=["out/b.txt"])]},
        ],
    },
}


TWO_ROUND_TASK_SCRIPT: dict[str, Any] = {
    "version": 1,
    "agents": {
        "main": ONE_TASK_SCRIPT["agents"]["main"],
        "t1": [
            {"tool_calls": [call("list_files")]},
            {"tool_calls": [call("complete", summary="first")]},
        ],
    },
}


def main_waits_while_t1_runs() -> Callable[[dict[str, Any]], bool]:
    """The first record after which the main agent's `wait_tasks` is journaled and t1 is
    running (the two come in either order: the agents run concurrently)."""
    seen = {"wait": False, "t1": ""}

    def keep(r: dict[str, Any]) -> bool:
        calls = r.get("message", {}).get("tool_calls", [])
        if r["k"] == "assistant_replied" and r["a"] == "main" and calls:
            seen["wait"] = calls[0]["name"] == "wait_tasks"
        if r["k"] == "task_changed" and r["task"] == "t1":
            seen["t1"] = r["state"]
        return seen["wait"] and seen["t1"] == "running"

    return keep


def test_a_resume_while_the_main_agent_waits_does_not_stall(tmp_path: Path) -> None:
    """Killed while the main agent is in `wait_tasks` (default timeout 300 s) and its task
    runs: on resume the wait runs again, and must not wait for a task not yet revived
    (it did, before `run_main` revived the tasks first)."""
    run = run_script(tmp_path, TWO_ROUND_TASK_SCRIPT)
    rewind(run.directory, main_waits_while_t1_runs())
    state = load_state(run.directory, warn=lambda _: None)
    assert state.tasks.tasks["t1"].state == "running"
    assert [c.name for _, c in state.agents["main"].pending_calls()] == ["wait_tasks"]
    run.hang_after = 20
    assert run.step(kill_after_events=None) == 0
    state = run.final_state()
    assert state.tasks.tasks["t1"].state == "completed"
    assert all(m.delivered_seq is not None for m in run.mail().values())
    assert state.mailbox.messages == {}


def test_a_complete_cut_off_after_the_task_completed_gets_its_result(tmp_path: Path) -> None:
    """Killed after a task's task_changed(completed) record, before its `complete` call's
    result: resume skipped settled tasks, so the call kept no result and the turn stayed
    open for good (until f8d9917)."""
    run = run_script(tmp_path, ONE_TASK_SCRIPT)
    rewind(run.directory, completed_record_of("t1"))
    assert run.step(kill_after_events=None) == 0
    state = run.final_state()
    assert state.status == "completed"
    t1 = state.agents["t1"]
    assert t1.pending_calls() == [], "the cut-off complete call never got a result"
    assert not t1.turn_open, "t1's turn never ended"


def test_a_follow_up_to_a_task_completed_just_before_a_crash_is_delivered(
    tmp_path: Path,
) -> None:
    """Killed just after a task completed, before its `complete` call's result: the
    owner's follow-up revives it, and must not be undone by the old `complete` running
    again first. Before f1c6ea7 it was: run_task settled the old call, Team.report found
    its message by ref and marked the revived task completed again, and the follow-up
    was never delivered."""
    reference = run_script(tmp_path / "reference", FOLLOW_UP_SCRIPT)
    assert (reference.workspace / "out/b.txt").read_text() == "b\n"
    run = run_script(tmp_path / "crashed", FOLLOW_UP_SCRIPT)
    rewind(run.directory, completed_record_of("t1"))
    (run.workspace / "out/b.txt").unlink()  # written after that instant
    assert run.step(kill_after_events=None) == 0
    state = run.final_state()
    follow_up = [m for m in run.mail().values() if m.kind == "instruction"]
    assert len(follow_up) == 1
    assert follow_up[0].delivered_seq is not None, "the follow-up was never delivered"
    completion = state.tasks.tasks["t1"].completion
    assert completion is not None
    assert completion.summary == "second", "t1 did not act on the follow-up"
    assert (run.workspace / "out/b.txt").read_text() == "b\n"


def test_an_edit_cut_off_by_sigkill_leaves_the_old_or_the_new_file(tmp_path: Path) -> None:
    """edit_file rewrote the file in place before f1c6ea7 (Path.write_text: truncate,
    then write): a kill in between left it empty, as the crash test saw with counter.txt."""
    path = tmp_path / "big.txt"
    original = "x" * 1023 + "\n"
    original = original * (32 * 1024) + "count=0\n"  # 32 MiB: the write takes a while
    edited = original.replace("count=0", "count=1")
    child = (
        "import sys\n"
        "from pathlib import Path\n"
        "import trio\n"
        "from orchestrator.tools import Workspace\n"
        "from orchestrator.tools.base import ToolContext\n"
        "from orchestrator.tools.files import EditFile, EditFileArgs\n"
        "args = EditFileArgs(path='big.txt', old_text='count=0', new_text='count=1')\n"
        "ctx = ToolContext(workspace=Workspace(Path(sys.argv[1])))\n"
        "trio.run(EditFile().run, args, ctx)\n"
    )
    for _ in range(2):
        path.write_text(original)
        proc = subprocess.Popen([sys.executable, "-c", child, str(tmp_path)])
        deadline = time.monotonic() + 30
        # Kill it mid-rewrite: when the file shrinks (in place) or its temp file appears.
        while proc.poll() is None and path.stat().st_size >= len(original):
            if list(tmp_path.glob(".big.txt.*")):
                break
            assert time.monotonic() < deadline, "the edit never finished"
        finished = proc.poll()
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert finished in (None, 0), "the edit itself failed"
        content = path.read_text()
        whole = content in (original, edited)
        assert whole, f"torn: {len(content)} of {len(original)} bytes"


BIG_FILE = "python -c \"open('big.txt', 'w').write(('x' * 1023 + '\\n') * 32768 + 'count=0')\""


def test_a_write_cut_off_by_sigkill_leaves_no_temp_file_behind(tmp_path: Path) -> None:
    """Writes by rename (f1c6ea7) left a temporary file behind when killed before the
    rename, and resume, reporting the call interrupted, never removed it (until f8d9917):
    the workspace differed from an uninterrupted run's. Since the demo's crash test, a
    cut-off edit that the file shows never happened runs on resume instead."""
    script = {
        "version": 1,
        "agents": {
            "main": [
                {"tool_calls": [call("shell", command=BIG_FILE)]},
                {
                    "tool_calls": [
                        call("edit_file", path="big.txt", old_text="count=0", new_text="count=1")
                    ]
                },
                *[{"text": "done"}] * 3,
            ]
        },
    }
    path = tmp_path / "script.json"
    path.write_bytes(orjson.dumps(script))
    run = TeamCrashRun(tmp_path / "sessions", path, tmp_path, random.Random(0))
    proc = subprocess.Popen(
        run.start_command(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    temps: list[Path] = []
    # Kill it while the edit writes its temp file (32 MiB: that takes a while).
    while proc.poll() is None and not temps:
        temps = list((tmp_path / "sessions").glob("*/workspace/.big.txt*"))
        assert time.monotonic() < deadline, "the session never got to its edit"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert temps, "the edit finished before it could be killed"
    run.session_id = temps[0].parents[1].name
    run.workspace = run.directory / "workspace"
    assert run.step(kill_after_events=None) == 0
    messages = run.final_state().agents["main"].messages
    # Killed before its rename, the file shows the edit never happened: it runs on resume.
    assert [m.status for m in messages if isinstance(m, ToolResult)] == ["ok", "ok"]
    assert (run.workspace / "big.txt").read_text().endswith("\ncount=1")
    left = sorted(p.name for p in run.workspace.iterdir() if p.name != "big.txt")
    assert not left, f"left in the workspace after the resume: {left}"


class _FlushThen:
    """A journal whose `flush` lets one other emit happen right after it returns, as
    trio may schedule another agent between the flush's wake-up and its caller going on."""

    def __init__(self, journal: Any, then: Callable[[], Awaitable[None]]) -> None:
        self._journal = journal
        self._then: Callable[[], Awaitable[None]] | None = then

    def __getattr__(self, name: str) -> Any:
        return getattr(self._journal, name)

    async def flush(self) -> None:
        await self._journal.flush()
        then, self._then = self._then, None
        if then is not None:
            await then()


def test_a_snapshot_never_reflects_records_the_journal_does_not_hold(tmp_path: Path) -> None:
    """LiveSession.write_snapshot flushed the journal, then took `state.snapshot()` after
    the await, so records other agents folded meanwhile were in the snapshot but not yet
    on disk (the batch writer waits up to 2 ms): a SIGKILL then left snapshot.json ahead
    of journal.jsonl, and resume refused the session as one that lost records (until
    f8d9917). The crash test hit it once in about 40 runs; this schedule hits it always."""
    crashed = trio.run(snapshot_while_another_agent_emits, tmp_path)
    snapshot_seq = orjson.loads((crashed / "snapshot.json").read_bytes())["seq"]
    on_disk = len((crashed / JOURNAL).read_bytes().splitlines())
    assert snapshot_seq <= on_disk, f"snapshot at seq {snapshot_seq}, journal holds {on_disk}"
    load_state(crashed, warn=lambda _: None)  # what resume reads


async def snapshot_while_another_agent_emits(tmp_path: Path) -> Path:
    """A snapshot written while another agent emits; returns a copy of the session's
    files as they were on disk just after (what a SIGKILL would have left)."""
    _, _, directory = scripted_session(tmp_path, ONE_TASK_SCRIPT)
    state = load_state(directory, warn=lambda _: None)
    async with open_journal(directory / JOURNAL, max_delay=30) as journal:
        live = LiveSession(directory.name, directory, read_manifest(directory), state, journal)
        start = AgentStarted(agent="main", role="main", messages=(UserMessage(content="go"),))
        await live.emit(start, durable=True)

        async def another_agent_emits() -> None:
            await live.emit(MessageAdded(agent="main", message=UserMessage(content="late")))

        live.journal = _FlushThen(journal, another_agent_emits)  # type: ignore[assignment]
        await live.write_snapshot()
        # What a SIGKILL would leave now: the files as they are on disk.
        crashed = tmp_path / "crashed"
        crashed.mkdir()
        for name in (JOURNAL, "snapshot.json", "session.json"):
            shutil.copyfile(directory / name, crashed / name)
    return crashed
