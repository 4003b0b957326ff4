"""A tool call that fails leaves the state as if it had not started: any sequence of
coordination and todo calls, with hypothesis-drawn arguments (absurd numbers, unknown
tasks and messages, replies to the wrong task included), played by scripted models
through a real session on disk, leaves a session that `sessions verify` accepts and that
folds again from disk to the state the run ended with."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import orjson
import trio
import trio.testing
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from orchestrator import (
    ModelRequest,
    ScriptedCall,
    ScriptedModel,
    ScriptedReply,
    create_session,
    drive,
    load_state,
    open_session,
)
from orchestrator.session import verify
from orchestrator.session.live import SNAPSHOT
from orchestrator.store import Durability
from tests.scenes import run_settings

TASKS = ["t1", "t2", "t3", "t4", "main", "nobody"]
MESSAGES = ["", "m1", "m2", "m3", "m4", "m5", "m6", "m9", "x"]
texts = st.text(alphabet="ab \n", max_size=6)
# Numbers a model may give: ordinary ones and absurd ones (past every bound, negative).
numbers = st.one_of(
    st.none(),
    st.integers(-5, 5),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(min_value=-1e300, max_value=1e300, allow_nan=False),
)


def drawn(name: str, **arguments: Any) -> ScriptedCall:
    """A drawn call: an argument drawn as None is left out (the model omitted it)."""
    return ScriptedCall(name=name, arguments={k: v for k, v in arguments.items() if v is not None})


@st.composite
def main_call(draw: st.DrawFn) -> ScriptedCall:
    task = draw(st.sampled_from(TASKS))
    match draw(
        st.sampled_from(["delegate", "send", "cancel", "wait", "list", "todo", "report", "bogus"])
    ):
        case "delegate":
            absurd = draw(st.booleans())  # else the numbers are sane (or left out)
            return drawn(
                "delegate",
                description=draw(texts),
                prompt=draw(texts),
                agent_type=draw(st.sampled_from(["worker", "explorer", "explorer", "nosuch"])),
                plan_ref=draw(st.sampled_from(["", "p1", "p2"])),
                write_scope=draw(st.sampled_from([None, ["a"], ["b"], []])),
                deadline_seconds=draw(numbers if absurd else st.sampled_from([None, 30, 3600])),
                round_budget=draw(numbers if absurd else st.sampled_from([None, 2, 50])),
                token_budget=draw(numbers if absurd else st.sampled_from([None, 10**6])),
            )
        case "send":
            return drawn(
                "send_message",
                task=task,
                text=draw(texts),
                kind=draw(st.sampled_from(["answer", "instruction", "bogus"])),
                in_reply_to=draw(st.sampled_from(MESSAGES)),
                priority=draw(st.sampled_from([None, "notify", "urgent", "interrupt"])),
            )
        case "cancel":
            return drawn("cancel_task", task=task, reason=draw(texts))
        case "wait":
            tasks = draw(st.lists(st.sampled_from(TASKS), max_size=2))
            return drawn("wait_tasks", tasks=tasks, timeout=draw(numbers))
        case "list":
            return drawn("list_tasks")
        case "todo":
            statuses = draw(st.lists(st.sampled_from(["pending", "completed", "x"]), max_size=2))
            todos = [{"content": draw(texts) or "a", "status": s} for s in statuses]
            return drawn("todo_write", todos=todos)
        case "report":
            return drawn("report_progress", summary=draw(texts), percent=draw(numbers))
        case _:
            return ScriptedCall(name="delegate", arguments='{"description": 1')


@st.composite
def task_call(draw: st.DrawFn) -> ScriptedCall:
    match draw(
        st.sampled_from(["complete", "ask", "progress", "risk", "direction", "blocked", "wait"])
    ):
        case "complete":
            files = draw(st.lists(st.sampled_from(["a", "b"]), max_size=1))
            return drawn("complete", summary=draw(texts), files_changed=files)
        case "ask":
            options = draw(st.lists(texts, max_size=2))
            return drawn("ask_decision", question=draw(texts), options=options)
        case "progress":
            return drawn("report_progress", summary=draw(texts), percent=draw(numbers))
        case "risk":
            return drawn("raise_risk", risk=draw(texts))
        case "direction":
            return drawn("request_direction_change", proposal=draw(texts), reason=draw(texts))
        case "blocked":
            category = draw(st.sampled_from(["input", "decision", "bogus"]))
            return drawn("report_blocked", category=category, reason=draw(texts))
        case _:
            return drawn("wait_tasks", timeout=draw(numbers))


def replies(
    calls: st.SearchStrategy[ScriptedCall], *, min_size: int = 0, min_calls: int = 0
) -> st.SearchStrategy[list[ScriptedReply]]:
    one = st.lists(calls, min_size=min_calls, max_size=3).map(
        lambda cs: ScriptedReply(text="" if cs else "a turn's end", tool_calls=tuple(cs))
    )
    return st.lists(one, min_size=min_size, max_size=6)


class Players:
    """The scripted models: the main agent's drawn replies for this run (its first steps
    in it), then its turn's end; each task's drawn replies (its own list, by its id),
    then `complete`."""

    def __init__(self, main: list[ScriptedReply], tasks: list[list[ScriptedReply]]) -> None:
        self.main = main
        self.tasks = tasks
        self._first_step: int | None = None

    def __call__(self, request: ModelRequest) -> ScriptedReply:
        if request.agent == "main":
            if self._first_step is None:
                self._first_step = request.step
            index, script = request.step - self._first_step, self.main
        else:
            number = int(request.agent.removeprefix("t"))
            script = self.tasks[(number - 1) % len(self.tasks)] if self.tasks else []
            index = request.step
        if index < len(script):
            return script[index]
        if request.agent == "main":
            return ScriptedReply(text=f"done ({request.step})")
        return ScriptedReply(tool_calls=(drawn("complete", summary="done"),))


async def play(root: Path, session_id: str, players: Players, message: str = "") -> bytes:
    """Drive the session (a resume when it ran before); the state it ended with."""
    async with open_session(
        root, session_id, durability=Durability.OFF, warn=lambda _: None
    ) as live:
        await drive(
            live,
            run_settings(
                ScriptedModel(players),
                message=message,
            ),
        )
        return live.state.snapshot_json()


def unmarked(snapshot: bytes) -> dict[str, Any]:
    data: dict[str, Any] = orjson.loads(snapshot)
    for agent in data["agents"].values():
        agent.pop("start_mark", None)
    return data


def check(directory: Path, live_state: bytes) -> None:
    """`sessions verify` accepts the session, and it folds again from disk (with its
    snapshot, and from the journal alone) to the state the run ended with."""
    assert verify(directory) == []
    assert load_state(directory, warn=lambda _: None).snapshot_json() == live_state
    snapshot = (directory / SNAPSHOT).read_bytes()
    (directory / SNAPSHOT).unlink()
    again = load_state(directory, warn=lambda _: None)
    # (Where each context starts in the file is the writer's to know: a journal alone
    # does not say, and a resume without a snapshot reads it all.)
    assert unmarked(again.snapshot_json()) == unmarked(live_state)
    (directory / SNAPSHOT).write_bytes(snapshot)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@example(  # the case: an absurd deadline, then delegations across a resume
    first=[
        ScriptedReply(
            tool_calls=(
                drawn("delegate", description="a", prompt="p", deadline_seconds=1e300),
                drawn("delegate", description="b", prompt="p", agent_type="explorer"),
            )
        )
    ],
    then=[ScriptedReply(tool_calls=(drawn("delegate", description="c", prompt="p"),))],
    tasks=[],
)
@given(
    first=replies(main_call(), min_size=1, min_calls=1),
    then=replies(main_call(), min_size=1, min_calls=1),
    tasks=st.lists(replies(task_call()), max_size=3),
)
# On the local engine only: its 40 examples run two sessions each, and DBOS's launch
# (about a second a session) would add over a minute; the Scene and drive tests take the
# coordination calls' paths through the dbos engine.
def test_any_sequence_of_coordination_calls_leaves_a_session_that_verifies_and_resumes(
    first: list[ScriptedReply], then: list[ScriptedReply], tasks: list[list[ScriptedReply]]
) -> None:
    # The main agent plays `first`, and the run ends; the session is resumed with a
    # message, and `then` runs in a new team (ids, queues and counts from the fold).
    with tempfile.TemporaryDirectory() as where:
        root = Path(where)
        script = root / "script.json"  # (the manifest names one; the players reply)
        script.write_bytes(orjson.dumps({"agents": {"main": []}}))
        sessions = root / "sessions"
        session_id, directory = create_session(
            sessions, goal="coordinate", model=f"scripted:{script}", workspace=None
        )
        for message, main in (("", first), ("go on", then)):
            clock = trio.testing.MockClock(autojump_threshold=0)
            players = Players(main, tasks)
            live_state = trio.run(play, sessions, session_id, players, message, clock=clock)
            check(directory, live_state)
