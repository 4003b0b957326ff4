"""Hooks as the config's `[[hooks]]` run them, through `orchestrator run` and `resume`
with real commands (hook_app.py): what each may decide, what the model reads of it, a
hook that hangs or fails, and a decision that holds across a SIGKILL."""

from __future__ import annotations

import sys

import orjson
import pytest

from tests.conftest import run_on_terminal
from tests.hooks.conftest import Scene, call, events
from tests.scenes import killed_when
from tests.scenes import orchestrator as command


def test_a_pre_tool_hook_refuses_rm_rf_with_a_reason_the_model_reads(scene: Scene) -> None:
    (scene.work / "build").mkdir()
    hook = scene.hook("refuse-if", pattern="rm -rf", reason="never rm -rf here: delete by name")
    scene.config({"event": "pre_tool", "tools": ["shell"], "command": hook})
    scene.ran(
        {"tool_calls": [call("shell", command="rm -rf build")]},
        {"tool_calls": [call("shell", command="echo fine")]},
        {"text": "done"},
    )
    assert (scene.work / "build").is_dir()  # never ran
    refused, ran = scene.records("call_result")
    assert refused["status"] == "error"
    assert refused["content"] == (
        "shell was refused by a hook: never rm -rf here: delete by name; do not retry it"
    )
    assert ran.get("status", "ok") == "ok"
    (decided,) = scene.records("hook_decided")
    assert (decided["event"], decided["action"], decided["ref"]) == (
        "pre_tool",
        "refuse",
        refused["ref"],
    )
    # It was asked about both calls, with the call's tool and arguments.
    asked = scene.asked()
    assert [(e["event"], e["tool"], e["arguments"]) for e in asked] == [
        ("pre_tool", "shell", {"command": "rm -rf build"}),
        ("pre_tool", "shell", {"command": "echo fine"}),
    ]
    assert asked[0]["agent"] == "main"
    assert asked[0]["role"] == "main"


def test_a_pre_tool_hook_rewrites_a_shell_command(scene: Scene) -> None:
    hook = scene.hook("rewrite", command="echo rewritten > out.txt")
    scene.config({"event": "pre_tool", "tools": ["shell"], "command": hook})
    scene.ran({"tool_calls": [call("shell", command="echo original > out.txt")]}, {"text": "ok"})
    assert (scene.work / "out.txt").read_text() == "rewritten\n"
    (decided,) = scene.records("hook_decided")
    assert decided["action"] == "change"
    assert orjson.loads(decided["arguments"]) == {"command": "echo rewritten > out.txt"}


def test_changed_arguments_are_checked_against_the_tools_schema(scene: Scene) -> None:
    hook = scene.hook("rewrite", command="")
    scene.config({"event": "pre_tool", "tools": ["read_file"], "command": hook})
    (scene.work / "a.txt").write_text("a\n")
    scene.ran({"tool_calls": [call("read_file", path="a.txt")]}, {"text": "ok"})
    (result,) = scene.records("call_result")
    assert result["status"] == "error"
    assert result["content"].startswith(
        "read_file was not run: a hook changed its arguments: unknown argument 'command'"
    )


def test_a_hook_sees_secrets_redacted_and_cannot_write_the_mark_back(
    scene: Scene, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_API_TOKEN", "tok-very-secret-123")
    hook = scene.hook("rewrite", command="echo [redacted MY_API_TOKEN] > out.txt")
    scene.config({"event": "pre_tool", "tools": ["shell"], "command": hook})
    scene.ran({"tool_calls": [call("shell", command="echo tok-very-secret-123")]}, {"text": "ok"})
    (asked,) = scene.asked()
    assert asked["arguments"] == {"command": "echo [redacted MY_API_TOKEN]"}
    assert not (scene.work / "out.txt").exists()
    (result,) = scene.records("call_result")
    assert result["content"] == (
        "shell was not run: a hook changed its arguments to ones that hold a redacted value"
    )


def test_a_post_tool_hook_adds_a_note_for_the_model(scene: Scene) -> None:
    hook = scene.hook("note", text="run the tests before you say it works")
    scene.config({"event": "post_tool", "tools": ["write_file"], "command": hook})
    scene.ran(
        {"tool_calls": [call("write_file", path="a.py", content="x = 1\n")]},
        {"tool_calls": [call("list_files")]},
        {"text": "ok"},
    )
    written, listed = scene.records("call_result")
    assert written["content"].endswith(
        "\n\nNote from a hook: run the tests before you say it works"
    )
    assert "Note from a hook" not in listed["content"]  # (not a write_file call)
    (asked,) = scene.asked()
    assert (asked["event"], asked["tool"], asked["status"]) == ("post_tool", "write_file", "ok")


def test_a_compaction_hooks_text_is_kept_among_the_anchors_of_the_next_request(
    scene: Scene,
) -> None:
    for index in range(3):
        (scene.work / f"f{index}.txt").write_text(f"line {index}\n" * 500)
    hook = scene.hook("keep", text="Always answer in French.")
    told = scene.hook("note", text="ignored: a told hook's answer changes nothing")
    scene.config(
        {"event": "pre_compact", "command": hook}, {"event": "post_compact", "command": told}
    )
    reads = [{"tool_calls": [call("read_file", path=f"f{i}.txt")]} for i in range(3)]
    done = scene.ran(*reads, {"text": "ok"}, window={"context": 3_000})
    (compacted, *_) = events(done.stdout, "context_compacted")
    # The checkpoint is the context the next request is made of.
    kept = [m["content"] for m in compacted["messages"] if "Always answer" in m.get("content", "")]
    assert len(kept) == 1
    assert "## Kept by the person's hooks\nAlways answer in French." in kept[0]
    before, after, *_ = scene.asked()
    assert (before["event"], before["reason"]) == ("pre_compact", "fraction")
    assert (after["event"], after["method"]) == ("post_compact", compacted["method"])
    assert after["before"] == compacted["before"]


def test_a_compaction_by_hand_tells_both_compaction_hooks(scene: Scene) -> None:
    for index in range(3):
        (scene.work / f"f{index}.txt").write_text(f"line {index}\n" * 100)
    reads = [{"tool_calls": [call("read_file", path=f"f{i}.txt")]} for i in range(3)]
    scene.ran(*reads, {"text": "ok"})
    scene.config(
        {"event": "pre_compact", "command": scene.hook("keep", text="Keep this.")},
        {"event": "post_compact", "command": scene.hook("note", text="told")},
    )
    (session,) = scene.sessions.iterdir()
    done = command("sessions", "compact", session.name, "--sessions-dir", str(scene.sessions))
    assert done.returncode == 0, done.stderr
    (compacted,) = scene.records("context_compacted")
    before, after = scene.asked()
    assert (before["event"], before["reason"]) == ("pre_compact", "by_hand")
    assert (after["event"], after["method"]) == ("post_compact", compacted["method"])
    assert after["after"] == compacted["after"]


def test_a_stop_hook_sends_the_main_agent_back_once(scene: Scene) -> None:
    hook = scene.hook("send-back-once", reason="the tests were not run")
    scene.config({"event": "stop", "command": hook})
    done = scene.ran(
        {"text": "done, I think"},
        {"tool_calls": [call("shell", command="echo tests pass")]},
        {"text": "done: the tests pass"},
    )
    (decided,) = scene.records("hook_decided")
    note = "A hook asks you not to end your turn yet: the tests were not run"
    assert (decided["event"], decided["action"], decided["text"]) == ("stop", "continue", note)
    # Asked at each end of the main agent's turn, with its answer.
    assert [(e["event"], e["text"]) for e in scene.asked()] == [
        ("stop", "done, I think"),
        ("stop", "done: the tests pass"),
    ]
    turns = [e for e in events(done.stdout, "turn_ended") if e["agent"] == "main"]
    assert len(turns) == 2


def test_a_hook_that_hangs_is_stopped_at_its_timeout_and_the_session_goes_on(
    scene: Scene,
) -> None:
    scene.config({"event": "pre_tool", "command": scene.hook("hang"), "timeout": 0.5})
    done = scene.ran({"tool_calls": [call("shell", command="echo ran > ran.txt")]}, {"text": "ok"})
    assert (scene.work / "ran.txt").read_text() == "ran\n"
    (notice,) = [n for n in events(done.stdout, "notice") if "hook" in n["message"]]
    assert notice["message"].endswith(
        "(pre_tool) failed: timed out after 0.5 s; going on without it"
    )
    assert scene.records("hook_decided") == []


def test_a_fail_closed_hook_that_fails_refuses_the_call(scene: Scene) -> None:
    hook = scene.hook("fail")
    scene.config({"event": "pre_tool", "command": hook, "fail_closed": True})
    done = scene.ran({"tool_calls": [call("shell", command="echo ran > ran.txt")]}, {"text": "ok"})
    assert not (scene.work / "ran.txt").exists()
    (result,) = scene.records("call_result")
    assert result["content"] == (
        "shell was not run: its hook failed (exit code 1: the hook is broken); do not retry it"
    )
    (notice,) = [n for n in events(done.stdout, "notice") if "hook" in n["message"]]
    assert notice["message"].endswith(
        "failed: exit code 1: the hook is broken; the call is refused"
    )


def test_a_decision_journaled_before_a_sigkill_holds_on_resume_without_asking_again(
    scene: Scene,
) -> None:
    (scene.work / "secret.txt").write_text("s\n")
    (scene.work / "other.txt").write_text("o\n")
    marker = scene.root / "go-on"
    hook = scene.hook("refuse-if", pattern="secret", reason="not that file", hang=str(marker))
    scene.config({"event": "pre_tool", "command": hook, "timeout": 600})
    # Two reads run together: the hook refuses the first, then hangs on the second until
    # the marker exists, so the kill comes right after the first decision, before either
    # call has a result.
    reads = [call("read_file", path="secret.txt"), call("read_file", path="other.txt")]
    script = scene.script({"tool_calls": reads}, {"text": "ok"})
    argv = ["run", "go", "--model", f"scripted:{script}", "-w", str(scene.work), "--json", "--yes"]
    killed_when(argv, lambda event: event.get("kind") == "hook_decided")
    assert scene.records("call_result") == []
    assert len(scene.records("hook_decided")) == 1
    marker.touch()
    (session,) = scene.sessions.iterdir()
    done = command("resume", session.name, "--yes")
    assert done.returncode == 0, done.stderr
    refused, read = scene.records("call_result")
    assert refused["content"] == "read_file was refused by a hook: not that file; do not retry it"
    assert read.get("status", "ok") == "ok"
    paths = [e["arguments"]["path"] for e in scene.asked()]
    assert paths.count("secret.txt") == 1  # not asked again: the journal's decision held
    assert paths[-1] == "other.txt"  # asked again (nothing was decided of it)
    assert len(scene.records("hook_decided")) == 1


def test_a_project_hook_needs_the_projects_trust(scene: Scene) -> None:
    project = scene.work / ".orchestrator"
    project.mkdir()
    hook = f"{sys.executable} -c 'print(1)'"
    (project / "config.toml").write_text(f'[[hooks]]\nevent = "stop"\ncommand = "{hook}"\n')
    scene.script({"text": "ok"})
    done = scene.run()
    assert done.returncode != 0
    assert "hooks" in done.stderr
    assert "trust" in done.stderr


def test_an_approval_asked_at_the_terminal_is_told_as_waiting(scene: Scene) -> None:
    """The person at the terminal is asked about a call: the `waiting` hooks are told as
    the question is put (a notification for a person who stepped away)."""
    scene.config({"event": "waiting", "command": scene.hook("log")})
    script = scene.script({"tool_calls": [call("shell", command="echo hi")]}, {"text": "ok"})
    argv = ["run", "go", "--model", f"scripted:{script}", "-w", str(scene.work), "--plain"]
    done = run_on_terminal(argv, b"y\n")
    assert done.returncode == 0, done.stdout + done.stderr
    (ran,) = scene.records("call_result")
    assert ran.get("status", "ok") == "ok"
    (asked,) = scene.asked()
    assert (asked["event"], asked["what"], asked["tool"], asked["ref"], asked["agent"]) == (
        "waiting",
        "approval",
        "shell",
        ran["ref"],
        "main",
    )
    assert asked["id"] == f"main:{ran['ref']}"
    # With --yes nobody is asked, and nothing is told.
    scene.log.unlink()
    assert scene.run(script=script).returncode == 0
    assert scene.asked() == []
