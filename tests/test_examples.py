"""The examples run, offline, and say what they should: documentation that cannot rot."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import orjson

from tests.scenes import assert_in

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_example(name: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == ""
    return done.stdout


def example_parts(name: str, *args: str) -> list[str]:
    """What the example prints under each of its `== ...` headings."""
    return re.split(r"^== .*$", run_example(name, *args), flags=re.M)[1:]


def test_team_offline_runs_cancels_and_resumes(tmp_path: Path) -> None:
    first, cancelled, resumed = example_parts("team_offline.py", str(tmp_path))

    # Run 1: a custom agent type, its custom tool, events watched, state read back.
    assert_in(
        first,
        "task t1 created (counter): count words in a.txt",
        "mail m1, m2, m3, m4 delivered to main by its wait_tasks call",
        "run 1: completed; read back from disk with load_state:",
        "t1 completed instances=['t1.1'] a.txt: 5 words",
        "t2 completed instances=['t2.1'] b.txt: 6 words",
    )
    # (Which task completes last depends on how the two interleave.)
    assert re.search(r"m4 completed t[12] -> main posted@\d+ delivered@\d+", first)

    # Run 2: stopped from outside at the first progress report, nothing lost.
    assert_in(
        cancelled,
        "mail m1 progress",
        "session interrupted stopped by the user",
        "run 2: cancelled: True",
        "delivered@None",
    )

    # Resumed: the live tasks are revived (a new instance each) and finish.
    assert "note to main: The session was restarted. Revived and running again:" in resumed
    assert "run 2 resumed: completed" in resumed
    after = resumed.split("run 2 resumed: completed")[1]
    assert re.search(r"t1 completed instances=\[.*\] a\.txt: 5 words", after)
    assert re.search(r"t2 completed instances=\[.*\] b\.txt: 6 words", after)
    assert re.search(r"instances=\['t(\d)\.1', 't\1\.2'\]", after)
    assert "delivered@None" not in after

    # Both sessions are on disk, finished.
    manifests = sorted(tmp_path.glob("sessions/*/session.json"))
    assert [orjson.loads(m.read_bytes())["status"] for m in manifests] == ["completed"] * 2


def test_plan_offline_plans_approves_and_builds_in_dependency_order(tmp_path: Path) -> None:
    planned, approved, executed = example_parts("plan_offline.py", str(tmp_path))

    # plan(): the planner's plan waits for a decision; its markdown is printed.
    assert "plan v1 submitted (planner)" in planned
    assert "plan: blocked (plan v1 awaits approval)" in planned
    assert "### index. write index.md\n- depends on: a, b" in planned
    # approve(): decided by the library, then built; index waits for a and b.
    assert "plan v1 approved by library" in approved
    assert "task t3 created for plan task index, waits for a, b" in approved
    lines = approved.splitlines()
    started = lines.index("  task t3 -> pending")
    assert lines.index("  task t1 -> completed") < started
    assert lines.index("  task t2 -> completed") < started
    assert "approve: completed; todos a=completed, b=completed, index=completed" in approved
    # execute(): a plan written in code, decided by the program's callback.
    assert_in(
        executed,
        "plan v1 submitted (library)",
        "asked about plan v1: 1 tasks",
        "plan v1 approved by my program",
        "execute: completed; todos a=completed",
    )


def test_research_team_runs_researchers_in_parallel_with_function_tools() -> None:
    out = run_example("research_team.py")
    assert "t1 started: how trio scopes tasks" in out
    assert "t2 started: how asyncio scopes tasks" in out
    assert "t1 done: Trio runs tasks in nurseries" in out  # read_note's text, via complete
    assert re.search(r"^completed: Trio runs tasks in nurseries.*asyncio runs tasks", out, re.M)
    assert re.search(r"^\d+ tokens; session /.+", out, re.M)


def test_host_in_the_loop_answers_and_denies_with_a_reason() -> None:
    out = run_example("host_in_the_loop.py")
    assert "t1 asks: Which license? ['MIT', 'Apache-2.0']" in out
    assert "approve? task t1 (worker: set up the project): shell rm -rf build" in out
    assert out.strip().endswith(
        "completed: LICENSE is MIT; build/ is empty (shell was not approved: never delete; "
        "move what is in the way to old/ instead; do not retry it)"
    )


def test_kill_and_resume_loses_nothing_and_repeats_nothing() -> None:
    out = run_example("kill_and_resume.py")
    assert "child said 'progress: chapter 1 of 3 done'; killing it" in out
    assert re.search(r"session \S+: stopped \(resumable\), resumable: True", out)
    assert "resumed: completed: three chapters, logged" in out
    assert out.strip().endswith("log: chapter-1 chapter-2 chapter-3")


def test_inspect_sessions_lists_and_reports(tmp_path: Path) -> None:
    out = run_example("inspect_sessions.py", str(tmp_path))
    assert re.search(r"completed +resumable=False +Count to two, with help\.", out)
    assert re.search(r"stopped \(resumable\) resumable=True +Count to three\.", out)
    assert re.search(r"^\S+: 7 model calls, \$0\.\d+$", out, re.M)
    assert "task t1 [completed] subtree: 4 calls; subtasks ['t2']" in out
    assert "mail m2 completed: t1 -> main" in out
    assert "subtree t1" in out  # the report sessions show prints


def test_compare_task_a_delegates_two_counters_at_once_and_streams_their_calls(
    tmp_path: Path,
) -> None:
    """examples/compare/ours_a.py, as it is, on a scripted model (offline.py)."""
    out = run_example("compare/offline.py", "ours_a.py", str(tmp_path))
    lines = out.splitlines()
    assert lines[0].startswith('[main] delegate {"description":"count words in a.txt"')
    assert "[main] delegate -> delegated. task_id=t2 type=counter state=pending" in lines
    # Both counters ran their custom tool, each under its task's name, as it happened.
    assert "[t1] word_count -> 5 words" in lines
    assert "[t2] word_count -> 6 words" in lines
    assert "[main] wait_tasks {}" in lines
    assert lines[-1] == "a.txt: 5 words; b.txt: 6 words"
    # The session is on disk, completed: durable with no code for it.
    [manifest] = tmp_path.glob("sessions/*/*/session.json")
    assert orjson.loads(manifest.read_bytes())["status"] == "completed"


def test_compare_task_b_the_host_answers_the_question_and_decides_each_call(
    tmp_path: Path,
) -> None:
    out = run_example("compare/offline.py", "ours_b.py", str(tmp_path))
    assert out.splitlines() == [
        "[t1] asks: Which license?",
        "[t1] wants write_file {'path': 'LICENSE', 'content': 'MIT License\\n'}",
        "[t1] wants shell {'command': 'git add LICENSE'}",
        "The worker reports: LICENSE (MIT): ok; git add: shell was not approved: "
        "nothing but writing LICENSE is allowed here; do not retry it",
    ]
    assert (tmp_path / "LICENSE").read_text() == "MIT License\n"


def test_compare_task_c_one_tool_then_the_answer_from_a_plain_script(tmp_path: Path) -> None:
    out = run_example("compare/offline.py", "ours_c.py", str(tmp_path))
    assert out.splitlines() == ["The key k holds 42."]


def test_compare_task_d_a_parked_call_runs_once_when_decided_later(tmp_path: Path) -> None:
    """The first run parks the deploy and ends; a later process approves it (or, in
    another workspace, refuses it with a reason the model reads)."""
    for decision, said in (("yes", "ok: version 1.2 is live"), ("no", "not this week")):
        where = tmp_path / decision
        where.mkdir()
        out = run_example("compare/offline.py", "ours_d.py", str(where))
        [(session, request)] = re.findall(
            r"^waiting: (\S+) (\S+) deploy \{'version': '1.2'\}$", out, re.M
        )
        later = run_example(
            "compare/offline.py", "ours_d.py", str(where), session, request, decision
        )
        assert said in later
    assert len(list((tmp_path / "yes" / "sessions").glob("2*"))) == 1


def test_the_comparison_table_in_the_docs_is_what_count_prints() -> None:
    out = run_example("compare/count.py")
    docs = (EXAMPLES.parent / "docs" / "library.md").read_text()
    rows = [line for line in out.splitlines() if line.startswith("| `")]
    assert len(rows) == 12
    for row in rows:
        assert row in docs


def test_asyncio_web_handler_awaits_runs_on_its_own_loop() -> None:
    out = run_example("asyncio_web.py")
    assert "[main] said 'Hello.' (seen on the loop's thread)" in out
    assert "[main] said 'Goodbye.' (seen on the loop's thread)" in out
    answers = [orjson.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert sorted(a["output"] for a in answers) == ["Goodbye.", "Hello."]
    assert {a["status"] for a in answers} == {"completed"}
    assert answers[0]["session"] != answers[1]["session"]
