"""Issue 19, item 12 b-e: small things that were wrong. A refused agent file leaves no
session behind; an unknown task id names no other agent's task; `run --help` says what
the flags do today; a malformed `openai-compatible:M@URL` is answered with a well-formed
example."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from orchestrator import Definitions, ToolResult
from orchestrator.errors import ConfigError
from orchestrator.models.resolve import resolve_model
from orchestrator.team.definitions import WORKER
from orchestrator.team.queries import MAIN
from orchestrator.tools import Workspace
from tests.scenes import Scene, assert_in, c, reply, steps
from tests.scenes import orchestrator as command

ROOT = Path(__file__).parents[2]
HELLO = f"scripted:{ROOT / 'examples' / 'hello-script.json'}"


def orchestrator(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    sessions, config = str(home / "sessions"), str(home / "config")
    return command(*args, ORCHESTRATOR_SESSIONS_DIR=sessions, ORCHESTRATOR_CONFIG_DIR=config)


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        # A new type that may write: it needs trust, and there is nobody to ask.
        (
            'description = "b"\nprompt = "p"\ntools = ["read_file", "write_file"]\n',
            "you have not trusted",
        ),
        ("description = \n", "not valid TOML"),
    ],
    ids=["untrusted", "invalid"],
)
def test_a_refused_agent_file_leaves_no_session_behind(
    tmp_path: Path, toml: str, message: str
) -> None:
    ws = tmp_path / "ws"
    (ws / ".orchestrator" / "agents").mkdir(parents=True)
    (ws / ".orchestrator" / "agents" / "builder.toml").write_text(toml)
    result = orchestrator("run", "g", "--model", HELLO, "-w", str(ws), home=tmp_path)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "session " not in result.stderr
    sessions = tmp_path / "sessions"
    assert not sessions.exists() or list(sessions.iterdir()) == []


async def test_an_unknown_task_id_names_only_the_callers_own_tasks(workspace: Workspace) -> None:
    """The main agent owns t1, whose own subtask is t2: to the main agent, t2 is as
    unknown as t9, and neither error names t2 or its owner."""
    main = steps(
        reply("", c("delegate", description="lead", prompt=".", agent_type="lead")),
        reply("", c("wait_tasks")),
        reply("", c("send_message", task="t2", text="hi")),
        reply("", c("cancel_task", task="t9", reason="r")),
        reply("done"),
    )
    lead = steps(
        reply("", c("delegate", description="sub", prompt=".")),
        reply("", c("wait_tasks")),
        reply("", c("complete", summary="ok")),
    )
    sub = steps(reply("", c("complete", summary="ok")))
    scene = Scene(workspace, {MAIN: main, "t1": lead, "t2": sub})
    lead = WORKER.model_copy(update={"name": "lead", "may_delegate": True})
    scene.wire(definitions=Definitions([*Definitions.builtin(), lead]))
    await scene.run()
    errors = [
        m.content
        for m in scene.state.agents[MAIN].messages
        if isinstance(m, ToolResult) and m.status == "error"
    ]
    assert errors == [
        "no task 't2' of yours; your tasks: t1",
        "no task 't9' of yours; your tasks: t1",
    ]


def test_run_help_describes_what_the_flags_do_today(tmp_path: Path) -> None:
    out = orchestrator("run", "--help", home=tmp_path).stdout
    flat = " ".join(out.split())
    assert "one subagent at a time" not in flat
    assert "until it answers without tool calls" not in flat
    assert_in(
        flat,
        "--serial, --no-serial the serial todo hand-off: completing a todo item starts",
        "It does not limit how many subagents run at once",
        "auto-continue",
        "the --verify commands run before it may complete",
        "the main agent's turn stops after N model calls",
    )


@pytest.mark.parametrize(
    ("spec", "example"),
    [
        (
            "openai-compatible:llama@localhost:8000/v1",
            "openai-compatible:llama@http://localhost:8000/v1",
        ),
        ("openai-compatible:llama@ftp://h/v1", "openai-compatible:llama@http://localhost:8000/v1"),
        ("openai-compatible:m@http", "openai-compatible:m@http://localhost:8000/v1"),
        ("openai-compatible:@http://h:1/v1", "openai-compatible:llama3@http://h:1/v1"),
        ("openai-compatible:llama", "openai-compatible:llama@http://localhost:8000/v1"),
    ],
)
def test_a_malformed_server_spec_gets_a_well_formed_example(spec: str, example: str) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_model(spec, env={})
    assert f" {example}" in str(caught.value)
    # The example itself is a spec that resolves.
    assert resolve_model(example, env={}).name.startswith("openai-compatible:")
