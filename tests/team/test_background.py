"""Calls in the background (issue 25): a shell command or a function tool that asked for
it becomes a task of kind `tool`; the agent goes on meanwhile, and hears of its end once,
by message. Real sessions on disk, the scripted model, real processes.

On the local engine only: `orc.run` takes no runner, and these sessions delegate
nothing (a call in the background is run by the team's backgrounder, not the runner)."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
import trio

import orchestrator as orc
from orchestrator import (
    AssistantReplied,
    MessagePosted,
    ModelRequest,
    ScriptedModel,
    ScriptedReply,
    TaskChanged,
    TaskCreated,
    ToolContext,
)
from orchestrator.view import journal_events
from tests.scenes import (
    TEAM,
    all_text,
    c,
    first_line_then_kill,
    in_background,
    reply,
    run_team,
    wait_until,
    yes,
)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    where = tmp_path / "work"
    where.mkdir()
    return where


def results(request: ModelRequest) -> list[str]:
    return [str(getattr(m, "content", "")) for m in request.messages if hasattr(m, "call_id")]


async def test_a_background_build_runs_while_the_agent_writes_and_its_end_comes_once(
    workspace: Path, tmp_path: Path
) -> None:
    # The build waits for a file the agent writes only after the build has started: it
    # can end only if the agent went on working while it ran.
    build = "while [ ! -f go ]; do sleep 0.02; done; echo compiled; echo 3 tests passed"

    def main(request: ModelRequest) -> ScriptedReply:
        text = all_text(request)
        if request.step == 0:
            return reply("", c("shell", command=build, background=True))
        if request.step == 1:
            assert "started in the background as task t1" in results(request)[-1]
            # Each request says what runs, after the context, for that request only.
            assert request.note.startswith("[running in the background]\nt1 shell: while")
            assert not any(request.note in str(m) for m in request.messages)
            return reply("", c("write_file", path="go", content="now\n"))
        if "background call t1" not in text:
            return reply("", c("wait_tasks", tasks=["t1"]))
        assert request.note == ""  # nothing runs any more
        return reply(f"heard: {text.count('background call t1 (shell: ')} time(s)")

    events: list[object] = []
    result = await run_team("build it", main, workspace, tmp_path, on_event=events.append)
    assert result.status == "completed", result.detail
    assert result.output == "heard: 1 time(s)"
    [created] = [e for e in events if isinstance(e, TaskCreated)]
    assert (created.task, created.task_kind, created.agent_type) == ("t1", "tool", "shell")
    states = [e.state for e in events if isinstance(e, TaskChanged) and e.task == "t1"]
    assert states == ["running", "completed"]
    [told] = [e for e in events if isinstance(e, MessagePosted) and e.agent == "t1"]
    assert told.mail == "completed"
    assert "exit code 0" in told.summary
    assert "3 tests passed" in told.summary
    output = result.session_dir / "tasks" / "t1.output"  # type: ignore[operator]
    assert output.read_text() == "compiled\n3 tests passed\n"
    state = orc.load_state(result.session_dir, warn=print)  # type: ignore[arg-type]
    task = state.tasks.get("t1")
    assert task is not None
    assert (task.kind, task.state, task.reason) == ("tool", "completed", "exit code 0")


@orc.tool(background=True)
async def crunch(steps: int, ctx: ToolContext) -> str:
    """Crunch the numbers, step by step."""
    for step in range(steps):
        await ctx.report_progress(f"step {step + 1} of {steps}", percent=100 * (step + 1) / steps)
        await RELEASE[step].wait()
    return f"crunched {steps} steps"


RELEASE: list[trio.Event] = []


async def test_a_function_tool_in_the_background_reports_progress_as_messages(
    workspace: Path, tmp_path: Path
) -> None:
    RELEASE[:] = [trio.Event(), trio.Event()]

    def main(request: ModelRequest) -> ScriptedReply:
        text = all_text(request)
        if request.step == 0:
            return reply("", c("crunch", steps=2, background=True))
        if request.step == 1:
            RELEASE[0].set()  # the agent's next call happens while the tool waits
            return reply("", c("list_tasks"))
        if request.step == 2:
            assert "t1 [running] crunch" in results(request)[-1]
            RELEASE[1].set()
            return reply("", c("wait_tasks", tasks=["t1"]))
        return reply("done" if "crunched 2 steps" in text else "missing")

    events: list[object] = []
    result = await orc.run(
        "crunch",
        model=ScriptedModel(main),
        tools=[crunch],
        workspace=workspace,
        sessions_dir=tmp_path / "s",
        approve=yes,
        on_event=events.append,
    )
    assert (result.status, result.output) == ("completed", "done")
    progress = [e for e in events if isinstance(e, MessagePosted) and e.mail == "progress"]
    assert [p.summary for p in progress] == ["step 1 of 2", "step 2 of 2"]
    assert [p.data for p in progress] == [{"percent": 50}, {"percent": 100}]
    assert all((p.agent, p.to) == ("t1", "main") for p in progress)


def sleeping(seconds: str) -> list[int]:
    """The processes running `sleep SECONDS` (seen from here: a sandbox's own process
    ids would mean nothing outside it)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[:2] == [b"sleep", seconds.encode()]:
            found.append(int(entry.name))
    return found


async def test_cancel_kills_the_whole_process_group(workspace: Path, tmp_path: Path) -> None:
    marker = workspace / "started"
    # A child in the background and the shell itself, both waiting: the group.
    command = f"sleep 61.25 & sleep 61.5 & touch {marker}; wait"
    # The agent's next call, in the foreground, waits until the group is whole.
    whole = f"until [ -f {marker} ]; do sleep 0.02; done"

    def main(request: ModelRequest) -> ScriptedReply:
        if request.step == 0:
            return reply("", c("shell", command=command, background=True))
        if request.step == 1:
            return reply("", c("shell", command=whole))
        if request.step == 2:
            assert sleeping("61.25")
            assert sleeping("61.5")
            return reply("", c("cancel_task", task="t1", reason="not needed"))
        return reply(results(request)[-1])

    result = await run_team("start and stop", main, workspace, tmp_path)
    assert result.output == "cancelled: t1"
    assert sleeping("61.25") == []
    assert sleeping("61.5") == []
    state = orc.load_state(result.session_dir, warn=print)  # type: ignore[arg-type]
    task = state.tasks.get("t1")
    assert task is not None
    assert (task.state, task.reason) == ("cancelled", "not needed")


async def test_output_is_capped_on_disk_and_read_from_an_offset(
    workspace: Path, tmp_path: Path
) -> None:
    command = "for i in $(seq 1 400); do echo line-$i; done"
    reads: list[str] = []

    def main(request: ModelRequest) -> ScriptedReply:
        if request.step == 0:
            return reply("", c("shell", command=command, background=True))
        if request.step == 1:
            return reply("", c("wait_tasks", tasks=["t1"]))
        if request.step == 2:
            return reply("", c("read_task_output", task="t1", offset=0, limit=20))
        if request.step == 3:
            reads.append(results(request)[-1])
            return reply("", c("read_task_output", task="t1", offset=20, limit=16000))
        reads.append(results(request)[-1])
        return reply("read")

    settings = orc.SessionSettings(background_output=1000)
    result = await run_team("print", main, workspace, tmp_path, settings=settings)
    assert result.status == "completed"
    first, rest = reads
    assert first.startswith("task t1 [completed] exit code 0: bytes 0-20 of ")
    assert "; more from offset=20" in first
    assert first.endswith("line-1\nline-2\nline-3")
    output = (result.session_dir / "tasks" / "t1.output").read_text()  # type: ignore[operator]
    kept, cut = output[:1000], output[1000:]
    assert kept.startswith("line-1\n")
    total = sum(len(f"line-{i}\n") for i in range(1, 401))
    assert cut == f"\n[output cut at 1000 bytes: {total - 1000} more]\n"
    assert "that is all so far" in rest


async def test_the_limits_refuse_a_call_past_them_naming_the_running_ones(
    workspace: Path, tmp_path: Path
) -> None:
    def main(request: ModelRequest) -> ScriptedReply:
        if request.step == 0:
            return reply(
                "",
                c("shell", command="sleep 30", background=True),
                c("shell", command="echo two", background=True),
            )
        if request.step == 1:
            refused = results(request)[-1]
            return reply(refused, c("cancel_task", task="t1", reason="enough"))
        return reply("")

    events: list[object] = []
    result = await run_team(
        "two at once",
        main,
        workspace,
        tmp_path,
        settings=orc.SessionSettings(background_per_agent=1),
        on_event=events.append,
    )
    assert result.status == "completed"
    [refused] = [
        e.message.content for e in events if isinstance(e, AssistantReplied) and e.message.content
    ]
    assert refused.startswith(
        "you have 1 calls running in the background (t1), as many as an agent may "
        "(background_per_agent = 1): wait for one (wait_tasks) or cancel one"
    )
    assert [e.task for e in events if isinstance(e, TaskCreated)] == ["t1"]


async def test_a_deadline_cancels_a_call_and_its_owner_is_told(
    workspace: Path, tmp_path: Path
) -> None:
    def main(request: ModelRequest) -> ScriptedReply:
        first = in_background(request, "echo waiting; sleep 60")
        if first is not None:
            return first
        told = re.search(r"background call t1 \(shell: [^)]*\) (\w+): (.*)", all_text(request))
        assert told is not None
        return reply(f"{told[1]}: {told[2]}")

    result = await run_team(
        "wait too long",
        main,
        workspace,
        tmp_path,
        settings=orc.SessionSettings(background_deadline=0.5),
    )
    assert result.output == "failed: cancelled: its deadline passed after 0.5s"


async def test_the_session_waits_for_a_running_call_before_it_completes(
    workspace: Path, tmp_path: Path
) -> None:
    def main(request: ModelRequest) -> ScriptedReply:
        text = all_text(request)
        if request.step == 0:
            return reply("", c("shell", command="sleep 0.3; echo late", background=True))
        if "background call t1" in text:
            return reply("seen the end")
        return reply("my turn is over")  # the call still runs: the assessment waits

    result = await run_team("end early", main, workspace, tmp_path)
    assert (result.status, result.output) == ("completed", "seen the end")


async def test_a_session_that_stops_cancels_what_still_runs(
    workspace: Path, tmp_path: Path
) -> None:
    def main(request: ModelRequest) -> ScriptedReply:
        if request.step == 0:
            return reply("", c("shell", command="sleep 60", background=True))
        return reply("", c("report_blocked", category="input", reason="I need a name"))

    result = await run_team("block", main, workspace, tmp_path)
    assert result.status == "blocked"
    state = orc.load_state(result.session_dir, warn=print)  # type: ignore[arg-type]
    task = state.tasks.get("t1")
    assert task is not None
    assert (task.state, task.reason) == ("cancelled", "stopped with the session")


async def test_a_background_call_takes_no_messages(workspace: Path, tmp_path: Path) -> None:
    def main(request: ModelRequest) -> ScriptedReply:
        if request.step == 0:
            return reply("", c("shell", command="sleep 0.2", background=True))
        if request.step == 1:
            return reply("", c("send_message", task="t1", kind="instruction", text="hurry"))
        return reply(results(request)[-1])

    result = await run_team("talk to a call", main, workspace, tmp_path)
    assert result.output is not None
    assert result.output.startswith("task t1 is a call in the background: it reads no messages")


async def test_past_background_after_a_foreground_command_moves_to_the_background(
    workspace: Path, tmp_path: Path
) -> None:
    # It prints, then waits for a file the agent writes only once the call has moved.
    command = "echo first; while [ ! -f go ]; do sleep 0.02; done; echo second"

    def main(request: ModelRequest) -> ScriptedReply:
        text = all_text(request)
        if request.step == 0:
            return reply("", c("shell", command=command))
        if request.step == 1:
            moved = results(request)[-1]
            assert moved.startswith("still running after 0.3s, so it was started in the ")
            return reply("", c("write_file", path="go", content=""))
        if "background call t1" not in text:
            return reply("", c("wait_tasks", tasks=["t1"]))
        return reply("told")

    result = await run_team(
        "slow", main, workspace, tmp_path, settings=orc.SessionSettings(background_after=0.3)
    )
    assert (result.status, result.output) == ("completed", "told")
    # What it printed before it moved is in its output file, before what came after.
    output = result.session_dir / "tasks" / "t1.output"  # type: ignore[operator]
    assert output.read_text() == "first\nsecond\n"


CHILD = textwrap.dedent(
    """
    import sys, trio
    import orchestrator as orc
    from orchestrator.models.scripted import ScriptedModel, ScriptedReply, ScriptedCall

    workspace = sys.argv[1]
    build = "echo half; touch started; sleep 61.75; echo never"

    async def main(request):
        if request.step == 0:
            call = ScriptedCall(name="shell", arguments={"command": build, "background": True})
            return ScriptedReply(tool_calls=(call,))
        if request.step == 1:
            until = "until [ -f started ]; do sleep 0.02; done"
            call = ScriptedCall(name="shell", arguments={"command": until})
            return ScriptedReply(tool_calls=(call,))
        print("running", flush=True)
        await trio.sleep_forever()

    async def yes(request):
        return True

    trio.run(lambda: orc.run("build", model=ScriptedModel(main), workspace=workspace,
                             sessions_dir=sys.argv[2], approve=yes,
                             tools=orc.workspace_tools(), agents=orc.builtin_agents()))
    """
)


def test_a_call_running_when_the_session_is_killed_is_interrupted_not_run_again(
    tmp_path: Path,
) -> None:
    workspace, root = tmp_path / "w", tmp_path / "s"
    workspace.mkdir()
    first = first_line_then_kill(CHILD, str(workspace), str(root))
    assert first == "running\n"  # the build runs, the agent waits
    # Its orchestrator is gone, and the build with it (PR_SET_PDEATHSIG, issue 37).
    assert wait_until(lambda: not sleeping("61.75"))
    [directory] = root.iterdir()

    def main(request: ModelRequest) -> ScriptedReply:
        told = re.findall(r"background call t1 \(shell: [^)]*\) (\w+): ([^\n]*)", all_text(request))
        return reply(f"told {len(told)} time(s): {told}")

    result = trio.run(lambda: orc.resume(directory, model=ScriptedModel(main), approve=yes, **TEAM))
    assert result.status == "completed"
    assert result.output == (
        "told 1 time(s): [('cancelled', 'interrupted: the session stopped while it ran; it was "
        "not run again')]"
    )
    assert sleeping("61.75") == []  # never started again
    output = (directory / "tasks" / "t1.output").read_text()
    assert output == "half\n"  # its output so far, once: nothing ran it again
    # The owner is told once, whatever happens next: a second resume tells nobody again.
    again = trio.run(
        lambda: orc.resume(directory, model=ScriptedModel(main), message="and?", **TEAM)
    )
    assert again.output == result.output
    from_t1 = [
        record
        for _, record in journal_events(directory)
        if isinstance(record, MessagePosted) and record.agent == "t1"
    ]
    assert [m.mail for m in from_t1] == ["risk_alert"]
    assert "last of its output:\nhalf\n" in from_t1[0].summary
