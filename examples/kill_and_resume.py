"""Kill and resume from Python: a session runs in a child process, which is killed
(SIGKILL: no clean-up of any kind) while its worker is halfway; this process resumes
the session from its journal and runs it to the end. Nothing that was acknowledged is
lost, and no side effect runs twice. Walkthrough: docs/library.md, "Resuming".

Run: .venv/bin/python examples/kill_and_resume.py
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import tempfile

import trio

import orchestrator as orc

GOAL = "Write three chapters, one file each, and log each one once."


def step(event: orc.Event) -> None:
    if isinstance(event, orc.MessagePosted) and event.mail == "progress":
        print(f"progress: {event.summary}", flush=True)  # what the parent waits for


async def child(workspace: str, sessions: str) -> None:
    """The child: runs the session until it is killed."""
    await orc.run(
        GOAL,
        model=orc.ScriptedModel(offline),
        workspace=workspace,
        sessions_dir=sessions,
        approve=orc.approve_all,
        on_event=step,
        tools=orc.workspace_tools(),
        agents=orc.builtin_agents(),
    )


async def main() -> None:
    workspace, sessions = tempfile.mkdtemp(), tempfile.mkdtemp()
    with subprocess.Popen(  # noqa: ASYNC220 (a child to kill; it runs on its own)
        [sys.executable, __file__, "--child", workspace, sessions],
        stdout=subprocess.PIPE,
        text=True,
    ) as running:
        assert running.stdout is not None
        line = running.stdout.readline()  # the worker is halfway
        print(f"child said {line.strip()!r}; killing it")
        running.send_signal(signal.SIGKILL)
    [session] = orc.list_sessions(sessions)
    print(f"session {session.id}: {session.status}, resumable: {session.resumable}")

    result = await orc.resume(  # with the tools and agent types it ran with
        session.directory,
        model=orc.ScriptedModel(offline),
        approve=orc.approve_all,
        tools=orc.workspace_tools(),
        agents=orc.builtin_agents(),
    )
    print(f"resumed: {result.status}: {result.output}")
    log = await trio.Path(workspace, "log.txt").read_text()
    print("log:", " ".join(log.split()))


# --- the offline model: answers every agent's model calls from its context -----------


def call(name: str, **arguments: object) -> orc.ScriptedCall:
    return orc.ScriptedCall(name=name, arguments=arguments)


def offline(request: orc.ModelRequest) -> orc.ScriptedReply:
    text = "\n".join(str(getattr(m, "content", "")) for m in request.messages)
    if request.role == "main":
        if request.step == 0:
            return orc.ScriptedReply(tool_calls=(call(
                "delegate", description="write the chapters", prompt="Chapters 1-3.",
                write_scope=["chapters/", "log.txt"]),))  # fmt: skip
        done = re.findall(r"<completed id=m\d+ from=task t1>\n(.*)", text)
        return orc.ScriptedReply(text=done[0]) if done else orc.ScriptedReply(
            tool_calls=(call("wait_tasks"),))  # fmt: skip
    # The worker: for each chapter, write it, log it (a shell command: not repeatable),
    # and report progress; then complete. Its next step follows from what it has done.
    # A log command cut short by the kill comes back `interrupted` (it may have run):
    # this worker counts it as done rather than risk a second line.
    results = [m for m in request.messages if isinstance(m, orc.ToolResult)]
    written = sum(r.name == "write_file" and r.status == "ok" for r in results)
    logged = sum(r.name == "shell" for r in results)
    if written > logged:
        return orc.ScriptedReply(tool_calls=(
            call("shell", command=f"echo chapter-{written} >> log.txt"),
            call("report_progress", summary=f"chapter {written} of 3 done"),
        ))  # fmt: skip
    if written < 3:
        n = written + 1
        return orc.ScriptedReply(tool_calls=(
            call("write_file", path=f"chapters/{n}.md", content=f"# Chapter {n}\n"),))  # fmt: skip
    return orc.ScriptedReply(tool_calls=(call("complete", summary="three chapters, logged"),))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        trio.run(child, sys.argv[2], sys.argv[3])
    else:
        trio.run(main)
