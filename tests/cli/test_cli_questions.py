"""A question that no agent will answer, from the command line: the run ends `blocked`
(exit 3) saying which task asks what and how to answer, and `resume --message` takes the
answer to the task that asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from orchestrator import load_state
from tests.cli.test_cli import orchestrator, sessions_root  # noqa: F401  (an autouse fixture)
from tests.cli.test_cli_assessment import session_id, workspace
from tests.scenes import call

ASK = {"tool_calls": [call("ask_decision", question="which database?")]}
DONE = {"tool_calls": [call("complete", summary="done with the answer")]}
# Distinct replies, so that none counts as the same reply repeated.
CHAT = [{"text": f"noted ({n})"} for n in range(8)]

SCRIPTS: dict[str, dict[str, list[dict[str, Any]]]] = {
    # t1 (a worker that may delegate) delegates t2 and waits for it; t2 asks t1, which
    # completes without answering: t2's owner has ended.
    "owner ended": {
        "main": [
            {"tool_calls": [call("delegate", description="lead", prompt="lead it")]},
            {"tool_calls": [call("wait_tasks")]},
            *CHAT,
        ],
        "t1": [
            {
                "tool_calls": [
                    call("delegate", description="sub", prompt="do", agent_type="explorer")
                ]
            },
            {"tool_calls": [call("wait_tasks")]},
            {"tool_calls": [call("complete", summary="left it")]},
        ],
        "t2": [ASK, DONE],
    },
    # t1 asks the main agent, whose turns end without answering it.
    "main never answers": {
        "main": [
            {
                "tool_calls": [
                    call("delegate", description="sub", prompt="do", agent_type="explorer")
                ]
            },
            {"tool_calls": [call("wait_tasks")]},
            *CHAT,
        ],
        "t1": [ASK, DONE],
    },
}


@pytest.mark.parametrize("case", sorted(SCRIPTS))
def test_an_unanswerable_question_exits_3_and_resume_message_answers_it(
    tmp_path: Path,
    sessions_root: Path,  # noqa: F811
    case: str,
) -> None:
    path = tmp_path / "script.json"
    path.write_bytes(orjson.dumps({"agents": SCRIPTS[case]}))
    config = tmp_path / "config"
    (config / "agents").mkdir(parents=True)
    (config / "agents" / "worker.toml").write_text("may_delegate = true\n")
    env = {"ORCHESTRATOR_CONFIG_DIR": str(config), "ORCHESTRATOR_CONFIG": str(config / "none")}
    asker = "t2" if case == "owner ended" else "t1"

    first = orchestrator(
        "run", "go", "--model", f"scripted:{path}", "-w", str(workspace(tmp_path)), "--yes", **env
    )
    assert first.returncode == 3, first.stderr
    sid = session_id(first.stdout)
    assert f"task {asker} asks (" in first.stdout, first.stdout
    assert "which database?" in first.stdout
    assert f"answer task {asker}: orchestrator resume {sid} --yes --message" in first.stdout
    assert f"it goes to task {asker} as the answer to" in first.stdout

    answered = orchestrator("resume", sid, "--yes", "--message", "use postgres", **env)
    assert answered.returncode == 0, answered.stderr
    state = load_state(sessions_root / sid, warn=lambda _: None)
    task = state.tasks.get(asker)
    assert task is not None
    assert task.state == "completed"
    # The person's answer reached the asking task's own context, as its answer.
    seen = "\n".join(str(getattr(m, "content", "")) for m in state.agents[asker].messages)
    assert "<answer id=" in seen
    assert "use postgres" in seen
    assert state.mailbox.unanswered("t1") == state.mailbox.unanswered("main") == []
