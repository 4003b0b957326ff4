"""Write scopes and the task fold, as plain functions."""

from __future__ import annotations

import pytest

from orchestrator import TaskChanged, TaskCreated
from orchestrator.eventbase import FoldError
from orchestrator.state import Registry
from orchestrator.state.task_fold import TASK_FOLDS
from orchestrator.state.tasks import in_scope, scope_within, scopes_overlap


@pytest.mark.parametrize(
    ("path", "scope", "inside"),
    [
        ("a/x.py", ["a/"], True),
        ("a/x.py", ["a"], True),
        ("./a/x.py", ["a"], True),
        ("ab/x.py", ["a"], False),
        ("a/../b.txt", ["a/"], False),  # climbs out of the scope
        ("../outside", ["."], False),  # climbs out of the workspace
        ("docs/guide.md", ["docs/*.md"], True),
        ("docs/deep/guide.md", ["docs/*.md"], True),  # fnmatch's * crosses '/'
        ("src/a.py", [], False),  # a read-only task writes nothing
        ("anything", None, True),  # no scope: anywhere
    ],
)
def test_in_scope(path: str, scope: list[str] | None, inside: bool) -> None:
    assert in_scope(path, scope) is inside


@pytest.mark.parametrize(
    ("a", "b", "overlap"),
    [
        (["src"], ["src/a.py"], True),
        (["src/a.py"], ["src/b.py"], False),
        (["docs/*.md"], ["src"], False),
        (["docs/*.md"], ["docs/index.md"], True),
        (["src/*"], ["src/**/x"], True),
        (["."], ["anything"], True),
        (["a/../b"], ["b"], True),
    ],
)
def test_scopes_overlap(a: list[str], b: list[str], overlap: bool) -> None:
    assert scopes_overlap(a, b) is overlap
    assert scopes_overlap(b, a) is overlap


def test_a_child_scope_must_lie_inside_its_parents() -> None:
    assert scope_within(["src/a.py"], ["src"])
    assert not scope_within(["src/a.py", "docs"], ["src"])
    assert scope_within(["anything"], None)


def test_the_fold_counts_attempts_and_instances() -> None:
    registry = Registry()
    registry_fold = TASK_FOLDS
    records = [
        TaskCreated(agent="main", task="t1", agent_type="worker", description="d", ref="3.0"),
        TaskChanged(agent="t1", task="t1", state="running", instance="t1.1"),
        TaskChanged(agent="t1", task="t1", state="failed", reason="boom"),
        TaskChanged(agent="main", task="t1", state="pending", reason="revived"),
        TaskChanged(agent="t1", task="t1", state="running", instance="t1.2"),
    ]
    for seq, record in enumerate(records, 1):
        registry_fold[type(record)](registry, seq, record)
    task = registry.tasks["t1"]
    assert (task.state, task.attempts, task.instances) == ("running", 2, ["t1.1", "t1.2"])
    assert task.reason == ""
    assert registry.by_call("main", "3.0") is task
    with pytest.raises(FoldError, match="no task 't9'"):
        registry_fold[TaskChanged](registry, 9, TaskChanged(agent="x", task="t9", state="failed"))
