"""Permission rules, grants, and what the prompt shows."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest

from orchestrator import Grant, PermissionPolicy, Rule, ToolCall
from orchestrator.cli.prompt import describe_call, make_prompt
from orchestrator.tools.permissions import parse_rules
from tests.conftest import run_on_terminal, waiting_on_terminal


def shell(command: str) -> ToolCall:
    return ToolCall(id="c", name="shell", arguments=orjson.dumps({"command": command}).decode())


@pytest.mark.parametrize(
    ("rules", "command", "expected"),
    [
        (["shell:pytest *=allow"], "pytest -q tests", "allow"),
        (["shell:pytest *=allow"], "pytest -q; rm -rf ~", "allow"),  # globs see the whole line
        (["shell:pytest *=allow"], "rm -rf build", "ask"),
        (["shell=deny", "shell:make test=allow"], "make test", "allow"),  # specific wins
        (["shell:make *=allow", "shell=deny"], "make all", "allow"),
        (["shell:make *=allow", "shell:make clean=deny"], "make clean", "deny"),  # last wins
        ([], "ls", "ask"),
    ],
)
def test_rules_with_patterns(rules: list[str], command: str, expected: str) -> None:
    policy = PermissionPolicy(rules=parse_rules(rules))
    assert policy.decide(shell(command), read_only=False) == expected


def write(path: str) -> ToolCall:
    arguments = orjson.dumps({"path": path, "content": "x"}).decode()
    return ToolCall(id="c", name="write_file", arguments=arguments)


@pytest.mark.parametrize(
    ("rules", "allowed", "asked", "denied"),
    [
        (["*=deny"], [], [], ["shell", "write_file"]),  # a glob of tool names
        (["*_file=allow"], ["write_file"], ["shell"], []),
        (["*=deny", "shell=ask"], [], ["shell"], ["write_file"]),  # among equals the last wins
        (["write_file=allow", "*=deny"], [], [], ["shell", "write_file"]),
    ],
)
def test_a_rule_names_tools_by_a_glob(
    rules: list[str], allowed: list[str], asked: list[str], denied: list[str]
) -> None:
    policy = PermissionPolicy(rules=parse_rules(rules))
    calls = {"shell": shell("ls"), "write_file": write("a.txt")}
    decided = {name: policy.decide(call, read_only=False) for name, call in calls.items()}
    read = ToolCall(id="r", name="read_file", arguments='{"path": "a.txt"}')
    decided["read_file"] = policy.decide(read, read_only=True)
    assert decided == {
        "read_file": "deny" if "*=deny" in rules else "allow",  # a glob rule covers it too
        **{name: "allow" for name in allowed},
        **{name: "ask" for name in asked},
        **{name: "deny" for name in denied},
    }


@pytest.mark.parametrize(
    "bad", ["shell", "shell=maybe", "=allow", "write_file:*.py=allow", "shell:=allow"]
)
def test_bad_rules_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="permission rule"):
        parse_rules([bad])


def test_a_grant_allows_the_tool_from_then_on() -> None:
    policy = PermissionPolicy()
    assert policy.decide(shell("ls"), read_only=False) == "ask"
    assert policy.decide(shell("ls"), read_only=False, grants=[Grant("shell")]) == "allow"
    denied = PermissionPolicy(rules=[Rule("shell", "deny", "rm *")])
    assert denied.decide(shell("rm x"), read_only=False, grants=[Grant("shell")]) == "deny"


def test_the_prompt_shows_the_whole_command_however_long() -> None:
    # The attack that worked on an abbreviating prompt: a harmless prefix, then the rest.
    command = "echo harmless-looking-prefix " + "x" * 200 + " && touch /tmp/pwned"
    text = describe_call(shell(command))
    assert "touch /tmp/pwned" in text


def test_the_prompt_shows_writes_and_edits() -> None:
    content = "".join(f"line {i}\n" for i in range(100))
    write = ToolCall(
        id="c",
        name="write_file",
        arguments=orjson.dumps({"path": "a.py", "content": content}).decode(),
    )
    short = describe_call(write)
    assert "a.py (790 bytes, 100 lines)" in short
    assert "line 39" in short
    assert "line 40" not in short
    assert "60 more lines" in short
    assert "answer v to see all" in short
    assert "line 99" in describe_call(write, whole=True)
    edit = ToolCall(
        id="c",
        name="edit_file",
        arguments=orjson.dumps(
            {"path": "a.py", "old_text": "x = 1\n", "new_text": "x = 2\n"}
        ).decode(),
    )
    diff = describe_call(edit)
    assert "-x = 1" in diff
    assert "+x = 2" in diff


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        (["y\n"], True),
        (["n\n"], False),
        ([""], False),
        (["a\n"], Grant("shell")),
        (["v\n", "y\n"], True),
        (["p make*\n"], Grant("shell", "make*")),
        (["p pytest *\n", "n\n"], False),  # a pattern that does not cover this call
    ],
)
async def test_answers(typed: list[str], expected: object) -> None:
    out = io.StringIO()
    lines = iter(typed)
    ask = make_prompt(out, read=lambda: next(lines))
    assert await ask(shell("make")) == expected
    assert "Allow? [y]es, [n]o, [a]lways shell in this session" in out.getvalue()


def test_a_grant_is_journaled_and_kept_by_a_resume(tmp_path: Path) -> None:

    from orchestrator import load_state

    script = tmp_path / "script.json"
    calls = [{"name": "shell", "arguments": {"command": f"echo {i} >> log"}} for i in range(3)]
    replies = [{"tool_calls": [c]} for c in calls] + [{"text": "done"}]
    script.write_bytes(orjson.dumps({"agents": {"main": replies}}))
    root = tmp_path / "sessions"
    args = ["run", "g", "--model", f"scripted:{script}", "--session-workspace"]
    result = run_on_terminal([*args, "--sessions-dir", str(root)], b"a\n")  # always, here
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("Allow?") == 1  # asked once
    [session] = list(root.iterdir())
    assert (session / "workspace" / "log").read_text() == "0\n1\n2\n"
    state = load_state(session, warn=pytest.fail)
    assert [(g.tool, g.pattern) for g in state.grants] == [("shell", "")]
    snapshot = orjson.loads((session / "snapshot.json").read_bytes())
    assert snapshot["grants"] == [{"tool": "shell", "pattern": ""}]


def test_ctrl_c_at_the_prompt_stops_at_once(tmp_path: Path) -> None:
    import signal

    script = tmp_path / "script.json"
    replies = [{"tool_calls": [{"name": "shell", "arguments": {"command": "touch ran"}}]}]
    script.write_bytes(orjson.dumps({"agents": {"main": [*replies, {"text": "done"}]}}))
    root = tmp_path / "sessions"
    args = ["run", "g", "--model", f"scripted:{script}", "--session-workspace"]
    # Nobody answers: it waits on the terminal.
    with waiting_on_terminal([*args, "--sessions-dir", str(root)], b"Allow?") as proc:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 130
    [session] = list(root.iterdir())
    assert not (session / "workspace" / "ran").exists()
    manifest = orjson.loads((session / "session.json").read_bytes())
    assert manifest["status"] == "interrupted"
