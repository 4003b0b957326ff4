"""The command line, run as a real subprocess."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from orchestrator.state.manifest import FORMAT_VERSION
from orchestrator.tools import Sandbox
from tests.cli.child import after_command
from tests.conftest import run_on_terminal
from tests.scenes import assert_in, call, orchestrator

ROOT = Path(__file__).parents[2]
HELLO = f"scripted:{ROOT / 'examples' / 'hello-script.json'}"  # a write, then a shell call


@pytest.fixture(autouse=True)
def sessions_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every CLI run in these tests keeps its sessions under tmp_path."""
    root = tmp_path / "sessions"
    monkeypatch.setenv("ORCHESTRATOR_SESSIONS_DIR", str(root))
    return root


def test_help_explains_every_command() -> None:
    top = orchestrator("--help")
    assert top.returncode == 0
    assert "Exit codes: 0 completed, 1 failed, 2 usage error, 3 blocked" in top.stdout
    for command in ("run", "demo", "config"):
        sub = orchestrator(command, "--help")
        assert sub.returncode == 0, sub.stderr
        assert "usage: orchestrator " + command in sub.stdout


def _demo_session(result: subprocess.CompletedProcess[str], root: Path) -> dict[str, Any]:
    [session_id] = re.findall(r"^session (\S+) \(in ", result.stdout, re.MULTILINE)
    shown = orchestrator("sessions", "show", session_id, "--json", "--sessions-dir", str(root))
    assert shown.returncode == 0, shown.stderr
    info: dict[str, Any] = orjson.loads(shown.stdout)
    return info


def _check_demo_outcome(ws: Path, info: dict[str, Any], out: str) -> None:
    # The whole product: a plan, approved, built by four workers in dependency order; one
    # asks, one is blocked and re-planned (its task retried), one fails its acceptance
    # check once; one compaction.
    assert_in(
        out,
        "◆ plan v1 by the planner: 4 task(s)",
        "◆ plan v1 approved (--approve)",
        "delegated; waits for plan task stats (t1), plan task text (t2)",
        "◆ re-planning task cli: the task says to read a file",
        "◆ plan v2 approved (--approve)",
        "complete refused: the plan's acceptance check for task readme did not pass",
        "⧉ compacted main",
    )
    agents = [t for t in info["tasks"] if t["kind"] == "agent"]
    assert [(t["task_id"], t["state"], t["attempts"]) for t in agents] == [
        ("t1", "completed", 1),
        ("t2", "completed", 1),
        ("t3", "completed", 1),
        ("t4", "completed", 2),
    ]
    # The text worker's test in the background: done, or cut short by the kill (then
    # interrupted, never run again).
    [test] = [t for t in info["tasks"] if t["kind"] == "tool"]
    assert (test["task_id"], test["owner"], test["agent_type"]) == ("t5", "t2", "shell")
    assert (test["state"], test["reason"]) in (
        ("completed", "exit code 0"),
        ("cancelled", "interrupted: the session stopped while it ran; it was not run again"),
    )
    plan = info["plan"]
    assert [(v["version"], v["decision"], v["by"]) for v in plan["versions"]] == [
        (1, "approved", "--approve"),
        (2, "approved", "--approve"),
    ]
    assert {t["id"]: t["todo"] for t in plan["tasks"]} == dict.fromkeys(
        ("stats", "text", "readme", "cli"), "completed"
    )
    assert len(info["compactions"]) >= 1
    assert all(m["delivered_seq"] for m in info["mailbox"])
    kinds = sorted(m["kind"] for m in info["mailbox"] if m["task_id"] != "t5")
    assert kinds == [
        "answer",
        "blocked",
        "completed",
        "completed",
        "completed",
        "completed",
        "decision_required",
        "instruction",
        "progress",
    ]
    told = [m["kind"] for m in info["mailbox"] if m["task_id"] == "t5"]  # once, either way
    assert told == (["completed"] if test["state"] == "completed" else ["risk_alert"])
    stats = subprocess.run(
        [sys.executable, "wordstats.py"], cwd=ws, input="a bb ccc dddd", capture_output=True,
        text=True, check=True,
    )  # fmt: skip
    assert stats.stdout == "4 words; word length: mean 2.5, median 2.5\n"
    question = next(m for m in info["mailbox"] if m["kind"] == "decision_required")
    assert question["answered_by"]
    assert "(ordered[middle - 1] + ordered[middle]) / 2" in (ws / "mathutil.py").read_text()
    assert "License: MIT" in (ws / "README.md").read_text()
    for test in ("test_mathutil.py", "test_textutil.py"):
        check = subprocess.run(
            [sys.executable, test], cwd=ws, capture_output=True, text=True, check=False
        )
        assert check.returncode == 0, check.stderr


def test_demo_delegates_crashes_mid_task_and_resumes(tmp_path: Path) -> None:
    ws = tmp_path / "demo"
    root = tmp_path / "sessions"
    result = orchestrator("demo", "--workspace", str(ws), "--sessions-dir", str(root))
    assert result.returncode == 0, result.stderr
    # Every line for people on stdout, in order with the transcript: the session first,
    # the workspace, the crash and the resume, the summary naming the workspace last.
    lines = result.stdout.splitlines()
    assert lines[0].startswith("session ")
    assert lines[1] == f"demo workspace: {ws}"
    assert "simulated crash: SIGKILL to the agent process" in result.stdout
    assert "the other workers were mid-task" in result.stdout
    crash = result.stdout.index("simulated crash")
    assert result.stdout.index("resuming session", crash) < result.stdout.index("tasks:")
    assert lines[-3] == f"  workspace  {ws}"
    assert result.stderr == ""
    assert "✗ shell interrupted: interrupted" in result.stdout
    assert "main turn completed" in result.stdout
    _check_demo_outcome(ws, _demo_session(result, root), result.stdout)


def test_demo_without_crash_sees_the_test_fail_then_pass(tmp_path: Path) -> None:
    ws = tmp_path / "demo"
    root = tmp_path / "sessions"
    result = orchestrator("demo", "--no-crash", "--workspace", str(ws), "--sessions-dir", str(root))
    assert result.returncode == 0, result.stderr
    assert "simulated crash" not in result.stdout
    assert "✗ shell error: exit code 1" in result.stdout
    assert "✓ shell: exit code 0 mathutil: all tests passed" in result.stdout
    _check_demo_outcome(ws, _demo_session(result, root), result.stdout)


def test_run_with_json_output(tmp_path: Path) -> None:
    result = orchestrator("run", "hello", "--model", HELLO, "-w", str(tmp_path), "--yes", "--json")
    assert result.returncode == 0, result.stderr
    events = [orjson.loads(line) for line in result.stdout.splitlines()]
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "agent_started"
    assert kinds[-3:] == ["turn_ended", "assessed", "session_status"]
    assert events[-3]["reason"] == "completed"
    assert events[-2]["action"] == "completed"
    assert events[-1]["status"] == "completed"
    assert "tool_call_finished" in kinds
    assert (tmp_path / "hello.py").exists()


@pytest.mark.parametrize(
    ("model_args", "message"),
    [
        ((), "no model given: pass --model scripted:PATH"),
        (("--model", "gpt4"), "model 'gpt4' is not PROVIDER:NAME"),
        (("--model", "nosuch:thing"), "unknown model provider 'nosuch'"),
    ],
)
def test_bad_model_is_one_clear_line(
    tmp_path: Path, model_args: tuple[str, ...], message: str
) -> None:
    result = orchestrator("run", "goal", *model_args, "--workspace", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert message in result.stderr


def test_script_running_out_fails_with_exit_1(tmp_path: Path) -> None:
    script = tmp_path / "short.json"
    script.write_text('{"agents": {"main": [{"tool_calls": [{"name": "list_files"}]}]}}')
    ws = tmp_path / "ws"
    ws.mkdir()
    result = orchestrator("run", "goal", "--model", f"scripted:{script}", "-w", str(ws))
    assert result.returncode == 1
    assert "script ran out: agent 'main'" in result.stdout
    # Resuming would run out the same way: it is not offered.
    assert "continue it with" not in result.stdout
    # The reason stays with the session.
    session = result.stdout.split()[1]
    shown = orchestrator("sessions", "show", session)
    assert "reason     model call failed: script ran out" in shown.stdout
    as_json = orjson.loads(orchestrator("sessions", "show", session, "--json").stdout)
    assert as_json["reason"].startswith("model call failed: script ran out")


def test_usage_error_exits_2() -> None:
    result = orchestrator("run", "--max-rounds", "zero")
    assert result.returncode == 2
    assert "--max-rounds: " in result.stderr


def test_without_a_goal_and_without_a_terminal_run_and_chat_exit_2() -> None:
    for command in (["run"], ["chat"], ["chat", "a goal"]):
        result = orchestrator(*command)
        assert result.returncode == 2, command
        assert result.stderr.startswith("error: a goal is required without a terminal"), command


def test_model_and_prices_from_the_config_file(tmp_path: Path, sessions_root: Path) -> None:
    script = ROOT / "examples" / "hello-script.json"
    config = tmp_path / "config.toml"
    config.write_text(
        f'model = "scripted:{script}"\n\n'
        '[prices."scripted:script.json"]\n'
        "input = 1000000.0\noutput = 0.0\n"
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    result = orchestrator("run", "hello", "-w", str(ws), "--yes", "--config", str(config))
    assert result.returncode == 0, result.stderr
    [session] = [p.name for p in sessions_root.iterdir()]
    shown = orchestrator("sessions", "show", session, "--json", "--config", str(config))
    usage = orjson.loads(shown.stdout)["usage"]["session"]
    assert usage["calls"] == 3
    # One dollar a token in: the cost is exactly the input token count.
    assert usage["cost_usd"] == pytest.approx(usage["usage"]["input_tokens"])
    table = orchestrator("sessions", "show", session, "--config", str(config))
    assert "model scripted:script.json" in table.stdout


def test_a_given_config_file_must_exist(tmp_path: Path) -> None:
    result = orchestrator("run", "x", "-w", str(tmp_path), "--config", str(tmp_path / "nope.toml"))
    assert result.returncode == 2
    assert "nope.toml" in result.stderr


def test_ask_prompts_on_a_terminal(tmp_path: Path) -> None:
    """With a terminal on stdin and no --yes, each side-effecting call is put to the user:
    here the write is approved and the shell command refused (answers typed ahead)."""
    script = tmp_path / "script.json"
    script.write_bytes(
        orjson.dumps(
            {
                "agents": {
                    "main": [
                        {"tool_calls": [call("write_file", path="a.txt", content="hi")]},
                        {"tool_calls": [call("shell", command="touch ran.txt")]},
                        {"text": "done"},
                    ]
                }
            }
        )
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    result = run_on_terminal(
        ["run", "g", "--model", f"scripted:{script}", "-w", str(ws)], b"y\nn\n"
    )
    assert result.returncode == 0, result.stderr
    # The question goes to the terminal (stderr), never into stdout, and shows it all.
    assert "write_file wants to write a.txt (2 bytes, 1 lines):\n  │ hi" in result.stderr
    # ... and says whether the command runs sandboxed, and how.
    shell_asks = f"shell wants to run ({Sandbox().describe()}):"
    assert f"{shell_asks}\n  │ touch ran.txt\nAllow? [y]es" in result.stderr
    assert "Allow?" not in result.stdout
    assert (ws / "a.txt").read_text() == "hi"
    assert not (ws / "ran.txt").exists()
    assert "✗ shell error: shell was not approved" in result.stdout


@pytest.mark.parametrize(
    ("args", "absent"),
    [
        (
            ["--help"],
            ["httpx", "trio", "pydantic", "msgspec", "orchestrator.models", "orchestrator.loop"],
        ),
        (
            ["sessions", "list"],
            ["httpx", "trio", "pydantic", "orchestrator.models", "orchestrator.config"],
        ),
        (["sessions", "show", "ID"], ["httpx", "trio", "orchestrator.models"]),
        (["config", "show"], ["httpx", "trio", "orchestrator.models"]),
    ],
)
def test_commands_that_run_no_model_do_not_import_its_machinery(
    tmp_path: Path, args: list[str], absent: list[str]
) -> None:
    # Start-up time is what a command imports; figures are in tests/benchmarks/bench_startup.
    root = tmp_path / "sessions"
    shutil.copytree(ROOT / "sessions" / f"v{FORMAT_VERSION}-completed", root)
    [session] = [p.name for p in root.iterdir()]
    argv = [session if a == "ID" else a for a in args] + ["--sessions-dir", str(root)]
    if args == ["--help"]:
        argv = args
    elif args[0] == "config":
        argv = [*args, "--workspace", str(tmp_path)]
    loaded = after_command(
        argv,
        "sorted(m for m, module in sys.modules.items() if module is not None and ("
        "m.split('.')[0] in ('httpx', 'trio', 'pydantic', 'msgspec') or m.startswith(("
        "'orchestrator.models', 'orchestrator.config', 'orchestrator.loop'))))",
    )
    for name in absent:
        assert not [m for m in loaded if m == name or m.startswith(name + ".")], (name, loaded)


def test_a_command_that_makes_an_http_client_leaves_httpxs_own_cli_unloaded(
    tmp_path: Path,
) -> None:
    # httpx loads its command-line client (click, pygments, rich's console: 40 ms) when
    # click is installed, as the dbos and mcp extras install it; the CLI marks it absent.
    pytest.importorskip("click")
    script = tmp_path / "script.json"
    script.write_text('{"agents": {"main": [{"text": "done"}]}}')
    argv = ["run", "hi", "-m", f"scripted:{script}", "-w", str(tmp_path), "--yes",
            "--sandbox", "off", "--sessions-dir", str(tmp_path / "s")]  # fmt: skip
    loaded = after_command(
        argv,
        "sorted(m for m, module in sys.modules.items() if module is not None and "
        "m.split('.')[0] in ('httpx', 'click', 'pygments'))",
    )
    assert "httpx" in loaded  # (the run made its client)
    assert not [m for m in loaded if m == "httpx._main" or not m.startswith("httpx")], loaded


def test_a_command_imports_msgspec_without_typing_extensions(tmp_path: Path) -> None:
    # msgspec takes typing's `get_type_hints` when typing_extensions cannot be imported:
    # 5 ms of `sessions list` and `show`. The CLI marks it absent for msgspec's import
    # alone; a later import of it (pydantic's) finds it as usual.
    argv = ["sessions", "list", "--sessions-dir", str(tmp_path)]
    loaded = after_command(
        argv,
        "['typing_extensions' in sys.modules, 'msgspec' in sys.modules, "
        "sys.modules['msgspec._utils']._get_type_hints.__module__, "
        "__import__('typing_extensions').__name__]",
    )
    assert loaded == [False, True, "typing", "typing_extensions"]


@pytest.mark.parametrize(
    "hostile",
    [
        "\x1b]0;pwned\x07",  # set the window title
        "\x1b[2J\x1b[H",  # clear the screen
        "ok\rrm -rf ~",  # overwrite the line
        "\u202eevil",  # right-to-left override
        "\x9b31m",  # C1 control sequence introducer
    ],
)
async def test_the_transcript_shows_control_characters_instead_of_obeying_them(
    hostile: str,
) -> None:
    import io

    from orchestrator import Notice, TextStreamed, ToolCallFinished, ToolResult, TranscriptSink

    for color in (True, False):
        out = io.StringIO()
        sink = TranscriptSink(out, color=color)
        await sink.emit(TextStreamed(agent="main", text=hostile))
        result = ToolResult(call_id="c", name="shell", content=hostile)
        await sink.emit(ToolCallFinished(agent="main", ref="1.0", result=result))
        await sink.emit(Notice(agent="main", message=hostile))
        text = out.getvalue()
        if color:  # our own styling still works; take it out, and nothing else may act
            assert "\x1b[" in text
            text = re.sub(r"\x1b\[\d+m", "", text)
        for char in hostile:
            if not char.isprintable():
                assert char not in text, (hostile, text)


def test_session_files_are_private_to_the_user(tmp_path: Path, sessions_root: Path) -> None:
    result = orchestrator("run", "hello", "--model", HELLO, "--session-workspace", "--yes")
    assert result.returncode == 0, result.stderr
    [session] = list(sessions_root.iterdir())
    assert sessions_root.stat().st_mode & 0o777 == 0o700
    assert session.stat().st_mode & 0o777 == 0o700
    files = [p for p in session.iterdir() if p.is_file()]
    assert {p.name for p in files} >= {"journal.jsonl", "snapshot.json", "session.json", "lock"}
    for path in files:
        assert path.stat().st_mode & 0o077 == 0, f"{path.name} is readable by others"


@pytest.mark.parametrize("where", ["home", "root"])
def test_home_or_root_is_never_the_workspace_by_default(tmp_path: Path, where: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    cwd = home if where == "home" else Path("/")
    result = orchestrator("run", "hello", "--model", HELLO, "--yes", cwd=cwd, HOME=str(home))
    assert result.returncode == 2
    assert "refusing to use" in result.stderr
    assert "-w DIR" in result.stderr
    # Said explicitly, it is allowed.
    allowed = orchestrator(
        "run", "hello", "--model", HELLO, "--yes", "-w", str(home), cwd=cwd, HOME=str(home)
    )
    assert allowed.returncode == 0, allowed.stderr


def test_version() -> None:
    result = orchestrator("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == "orchestrator 0.1.0"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "g", "--max-rounds", "0"], "must be at least 1"),
        (["run", "g", "--max-rounds", "-3"], "must not be negative"),
        (["run", "g", "--max-rounds", "many"], "not a whole number"),
        (["sessions", "show", "20261123T030617-034747", "--events", "-1"], "must not be negative"),
        (["run", "g", "--model", "scripted:x.json", "--allow", "shell=maybe"], "shell=maybe"),
        (["run", "g", "--model", "scripted:x.json", "--allow", "nonsense"], "nonsense"),
    ],
)
def test_bad_numbers_and_rules_are_usage_errors(args: list[str], message: str) -> None:
    result = orchestrator(*args)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_global_options_go_before_or_after_the_command(tmp_path: Path) -> None:
    root = tmp_path / "elsewhere"
    shutil.copytree(ROOT / "sessions" / f"v{FORMAT_VERSION}-completed", root)
    [session] = [p.name for p in root.iterdir()]
    before = orchestrator("--sessions-dir", str(root), "sessions", "list")
    after = orchestrator("sessions", "list", "--sessions-dir", str(root))
    assert before.returncode == after.returncode == 0
    assert session in before.stdout
    assert before.stdout == after.stdout


def test_the_final_status_is_said_once(tmp_path: Path) -> None:
    result = orchestrator("run", "hello", "--model", HELLO, "--session-workspace", "--yes")
    assert result.returncode == 0, result.stderr
    assert (result.stdout + result.stderr).count("completed") == 2  # the turn, the session
    session = result.stdout.split()[1]
    said = [line for line in result.stdout.splitlines() if line.startswith(f"session {session}")]
    assert len(said) == 2  # its id at the start, its end


def closed_stdout_run(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the command with stdout a pipe whose reader has already gone (`| head -0`)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "orchestrator", *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "NO_COLOR": "1"},
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize("json_mode", [False, True])
def test_a_closed_stdout_does_not_fail_the_run(
    tmp_path: Path, sessions_root: Path, json_mode: bool
) -> None:
    script = tmp_path / "long.json"
    replies = [
        {
            "text": f"step {i}",
            "tool_calls": [{"name": "list_files", "arguments": {"pattern": f"{i}*"}}],
        }
        for i in range(30)
    ]
    script.write_bytes(orjson.dumps({"agents": {"main": [*replies, {"text": "done"}]}}))
    extra = ["--json"] if json_mode else []
    result = closed_stdout_run(
        "run", "g", "--model", f"scripted:{script}", "--session-workspace", "--yes", *extra
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "Broken pipe" not in result.stderr
    [session] = list(sessions_root.iterdir())
    manifest = orjson.loads((session / "session.json").read_bytes())
    assert manifest["status"] == "completed"
    verified = orchestrator("sessions", "verify", session.name)
    assert verified.returncode == 0, verified.stdout


@pytest.mark.parametrize("command", [["sessions", "list"], ["sessions", "show", "ID"], ["--help"]])
def test_a_closed_stdout_ends_other_commands_quietly(tmp_path: Path, command: list[str]) -> None:
    root = tmp_path / "recorded"
    shutil.copytree(ROOT / "sessions" / f"v{FORMAT_VERSION}-completed", root)
    [session] = [p.name for p in root.iterdir()]
    args = [session if a == "ID" else a for a in command]
    if command != ["--help"]:
        args += ["--sessions-dir", str(root)]
    result = closed_stdout_run(*args)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


@pytest.mark.parametrize("case", ["root_is_a_file", "script_is_a_directory", "workspace_missing"])
def test_environment_errors_are_one_line_and_leave_nothing(tmp_path: Path, case: str) -> None:
    script = ROOT / "examples" / "hello-script.json"
    root = tmp_path / "sessions"
    ws = tmp_path / "ws"
    ws.mkdir()
    args = ["run", "g", "--model", f"scripted:{script}", "-w", str(ws), "--yes"]
    match case:
        case "root_is_a_file":
            root.write_text("not a directory")
        case "script_is_a_directory":
            args[3] = f"scripted:{tmp_path}"
        case "workspace_missing":
            args[5] = str(tmp_path / "nowhere")
    result = orchestrator(*args, "--sessions-dir", str(root))
    assert result.returncode in (1, 2), result.stderr
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    if root.is_dir():
        assert list(root.iterdir()) == []  # no half-made session


def test_a_snapshot_that_cannot_be_written_is_a_warning_not_a_failure(
    tmp_path: Path, sessions_root: Path
) -> None:
    script = ROOT / "examples" / "hello-script.json"
    first = orchestrator(
        "run", "g", "--model", f"scripted:{script}", "--session-workspace", "--yes"
    )
    assert first.returncode == 0, first.stderr
    [session] = list(sessions_root.iterdir())
    (session / "snapshot.json").unlink(missing_ok=True)
    (session / "snapshot.json").mkdir()  # nothing can be renamed over a directory
    manifest = orjson.loads((session / "session.json").read_bytes())
    (session / "session.json").write_bytes(orjson.dumps({**manifest, "status": "interrupted"}))
    resumed = orchestrator("resume", session.name, "--yes")
    assert resumed.returncode == 0, resumed.stderr
    assert "could not write the snapshot" in resumed.stdout  # a warning: a line for people


async def test_a_tools_progress_is_one_dim_line_under_its_agent() -> None:
    import io

    from orchestrator import ToolProgress, TranscriptSink

    out = io.StringIO()
    sink = TranscriptSink(out, color=False)
    await sink.emit(ToolProgress(agent="t2", ref="4.0", tool="index", message="a\nb", percent=50))
    await sink.emit(ToolProgress(agent="main", ref="5.0", tool="index", message="done"))
    assert out.getvalue() == "[t2]   … index: 50%: a\\nb\n  … index: done\n"
