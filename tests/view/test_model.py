"""The view model from the events of a real run (scripted): each agent's states over
time as a person reads them, a question shown while it waits, a failed task and why,
subtree totals and the status line; and the same model from a finished session's
journal."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import orchestrator as orc
from orchestrator import Event, ModelRequest, Price, ScriptedModel, ScriptedReply
from orchestrator.layout import FORMAT_VERSION
from orchestrator.view import ViewModel, session_view
from tests.host.test_host_loop import worker
from tests.scenes import all_text, c, reply

RECORDED = Path(__file__).parents[2] / "sessions"
PRICES = {"scripted": Price(input=1.0, output=2.0)}

FLAKY = orc.AgentDefinition(
    name="flaky", prompt="Count to three.", max_rounds=1, description="Fails by design."
)


def main_agent(request: ModelRequest) -> ScriptedReply:
    if request.step == 0:
        return reply("", c("delegate", description="pick a license", prompt="Pick one.",
                           agent_type="worker", write_scope=[]),
                     c("delegate", description="count to three", prompt="Count.",
                       agent_type="flaky", write_scope=[]))  # fmt: skip
    text = all_text(request)
    done = re.findall(r"<completed id=m\d+ from=task t1>\n(.*)", text)
    if done and "task failed" in text:
        return reply(f"The worker chose {done[-1]}; the counter failed.")
    return reply("", c("wait_tasks"))


def counter(request: ModelRequest) -> ScriptedReply:
    # One round a turn (max_rounds=1), and it never completes: its turn ends at the limit.
    return reply("", c("report_progress", summary="one, two"))


def respond(request: ModelRequest) -> ScriptedReply:
    if request.role == "main":
        return main_agent(request)
    return worker(request) if request.role == "worker" else counter(request)


@pytest.fixture
async def run_events(tmp_path: Path) -> tuple[list[Event], orc.RunResult]:
    events: list[Event] = []
    result = await orc.run(
        "choose and count",
        model=ScriptedModel(respond),
        agents=[*orc.builtin_agents(), FLAKY],
        tools=orc.workspace_tools(),
        workspace=tmp_path,
        answer=lambda question: "MIT",
        on_event=events.append,
        prices=PRICES,
    )
    assert result.status == "completed", result.output
    return events, result


def timeline(events: list[Event]) -> tuple[ViewModel, dict[str, list[str]]]:
    """The model after every event (event i at second i), and each agent's states in the
    order it went through them, with what it did while it needed input."""
    model = ViewModel(prices=PRICES, clock=lambda: 0.0)
    seen: dict[str, list[str]] = {}
    for at, event in enumerate(events):
        model.apply(event, at=float(at))
        for agent in model.agents.values():
            shown = agent.status
            if shown in ("needs input", "blocked", "failed"):
                shown += f": {agent.activity}"
            states = seen.setdefault(agent.id, [])
            if not states or states[-1] != shown:
                states.append(shown)
    return model, seen


async def test_states_over_a_run_as_a_person_reads_them(
    run_events: tuple[list[Event], orc.RunResult],
) -> None:
    events, _ = run_events
    model, seen = timeline(events)
    assert seen["t1"] == [
        "running",  # its context exists a moment before its task record
        "waiting",  # delegated, not yet started
        "running",
        "thinking",
        "running",  # its ask_decision call runs
        "needs input: MIT or Apache?",
        "running",  # answered
        "thinking",
        "running",
        "done",
    ]
    assert seen["t2"][-1] == "failed: reached its limit of 1 rounds in one turn"
    assert "thinking" in seen["t2"]
    assert seen["main"][:3] == ["running", "thinking", "running"]
    assert "waiting" in seen["main"]  # in wait_tasks, for its tasks
    assert seen["main"][-1] == "done"
    # The tree: both tasks under the main agent, in the order they were delegated.
    assert [(depth, agent.id, agent.kind) for depth, agent in model.walk()] == [
        (0, "main", "main"),
        (1, "t1", "worker"),
        (1, "t2", "flaky"),
    ]
    assert model.agents["t1"].activity == "MIT"  # its completion's summary
    assert model.agents["t1"].model == "scripted"
    # Each agent's times: from its delegation (or its context) to where it settled.
    t1 = model.agents["t1"]
    assert t1.ended is not None
    assert t1.elapsed(now=10_000) == t1.ended - t1.started > 0


async def test_totals_per_subtree_and_the_status_line(
    run_events: tuple[list[Event], orc.RunResult],
) -> None:
    events, result = run_events
    model, _ = timeline(events)
    whole = model.subtree("main")
    own = [model.agents[a].own for a in ("main", "t1", "t2")]
    assert whole.tokens == sum(t.tokens for t in own) == result.usage.total_tokens
    assert whole.cost == pytest.approx(result.cost)
    assert model.subtree("t1").tokens == own[1].tokens > 0
    line = model.status_line(now=10_000.0)
    assert re.fullmatch(r"2 done · 1 failed · [\d.]+k? tokens · \$0\.\d+ · (\d+m)?\d+s", line), line
    assert model.status == "completed"
    # The mailbox as it flowed: the last messages, with their senders and recipients.
    flow = [(m.kind, m.sender, m.recipient) for m in model.mail]
    assert ("answer", "user", "t1") in flow
    assert ("completed", "t1", "main") in flow
    assert ("risk_alert", "t2", "main") in flow


def test_a_finished_session_is_its_journal_folded() -> None:
    [directory] = (RECORDED / f"v{FORMAT_VERSION}-completed").glob("2*")
    model = session_view(directory)
    assert [(depth, agent.id, agent.status) for depth, agent in model.walk()] == [
        (0, "planner", "done"),
        (0, "main", "done"),
        (1, "t1", "done"),
        (1, "t2", "done"),
        (2, "t6", "done"),  # t2's test in the background
        (1, "t3", "done"),
        (1, "t4", "done"),
        (1, "t5", "done"),  # the builder's check in the background (format 9)
        (0, "planner-2", "done"),
    ]
    assert model.agents["planner-2"].activity == "plan v2: 4 task(s)"
    assert model.status == "completed"
    assert model.started is not None
    assert model.ended is not None
    assert model.started < model.ended  # the journal's own times
    assert model.status_line().startswith("9 done · ")
    assert model.verdicts[-1].action == "completed"
