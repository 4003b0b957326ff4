"""The library without the CLI, offline: a custom agent type and a custom tool defined in
code, a main agent that delegates to it, events watched as they happen, a session
cancelled from outside, and resumed from its journal. Walkthrough: docs/library.md.

Run: .venv/bin/python examples/team_offline.py
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

import trio

import orchestrator as orc

# --- a custom tool and an agent type that uses it ------------------------------------


# read_only: changes nothing, so it runs unasked, alongside other calls; idempotent: safe
# to run again after a crash. The model reads the docstring and the argument's type.
@orc.tool(read_only=True, idempotent=True)
async def word_count(path: str, ctx: orc.ToolContext) -> str:
    """Count the words in a workspace file.

    Args:
        path: the file, relative to the workspace.
    """
    text = await trio.Path(ctx.workspace.resolve(path)).read_text()
    return f"{len(text.split())} words"


COUNTER = orc.AgentDefinition(
    name="counter",
    description="Counts the words in one file.",
    prompt="You count words. Use word_count, then call complete with the figure.",
    tools=("read_file", word_count),  # a tool object joins the session's tools
)

# --- a scripted model: a Python function that answers each model call ----------------


def call(name: str, **arguments: object) -> orc.ScriptedCall:
    return orc.ScriptedCall(name=name, arguments=arguments)


def respond(request: orc.ModelRequest) -> orc.ScriptedReply:
    """Every agent's model calls. The reply depends only on the agent's context (what it
    has seen so far), so an agent resumed after a cancel picks up where it stood."""
    messages, last = list(request.messages), request.messages[-1]
    if request.role == "main":
        if request.step == 0:  # write_scope=[]: the tasks write nothing, so never conflict
            delegate = [
                call("delegate", description=f"count words in {f}", prompt=f"Count {f}.",
                     agent_type="counter", write_scope=[])
                for f in ("a.txt", "b.txt")
            ]  # fmt: skip
            return orc.ScriptedReply(text="One counter per file.", tool_calls=tuple(delegate))
        if isinstance(last, orc.ToolResult) and last.name == "wait_tasks" and last.status == "ok":
            return orc.ScriptedReply(text="Both files are counted.")
        return orc.ScriptedReply(tool_calls=(call("wait_tasks"),))
    # A counter: its task message names the file.
    task = messages[1]  # "You are task t1: count words in a.txt ..."
    assert task.role == "user"
    path = re.findall(r"count words in (\S+)", task.content)[0]
    counted = [m for m in messages if isinstance(m, orc.ToolResult) and m.name == "word_count"]
    if not counted or counted[-1].status != "ok":
        progress = [call("report_progress", summary=f"counting {path}")] if not counted else []
        return orc.ScriptedReply(tool_calls=(*progress, call("word_count", path=path)))
    return orc.ScriptedReply(
        tool_calls=(call("complete", summary=f"{path}: {counted[-1].content}"),)
    )


# --- watching: one line per task and mailbox event ------------------------------------


class Watcher:
    """An EventSink that prints what the team does. Given a cancel scope, it cancels it
    at the first progress report: the library user stopping the session from outside."""

    def __init__(self, stop: trio.CancelScope | None = None) -> None:
        self.stop = stop

    async def emit(self, event: orc.Event, *, durable: bool = False) -> None:
        match event:
            case orc.TaskCreated():
                print(f"  task {event.task} created ({event.agent_type}): {event.description}")
            case orc.TaskChanged():
                print(f"  task {event.task} -> {event.state} {event.reason}".rstrip())
            case orc.MessagePosted():
                print(
                    f"  mail {event.id} {event.mail}: {event.agent} -> {event.to}: {event.summary}"
                )
                if event.mail == "progress" and self.stop is not None:
                    self.stop.cancel()
            case orc.MessagesDelivered():
                print(f"  mail {', '.join(event.ids)} delivered to {event.agent}")
            case orc.ToolCallFinished() if event.delivers:
                print(
                    f"  mail {', '.join(event.delivers)} delivered to {event.agent} "
                    f"by its {event.result.name} call"
                )
            case orc.MessageAdded(message=orc.UserMessage(content=said)) if event.agent == "main":
                print(f"  note to main: {said}")
            case orc.SessionStatusChanged():
                print(f"  session {event.status} {event.detail}".rstrip())


def settings(watcher: Watcher) -> orc.RunSettings:
    return orc.RunSettings(
        model=orc.ScriptedModel(respond),
        tools=orc.workspace_tools(),  # each agent type gets the ones its definition names
        ui=watcher,
        policy=orc.PermissionPolicy(),
        approve=orc.approve_all,
        definitions=orc.Definitions([*orc.Definitions.builtin(), COUNTER]),
    )


def new_session(root: Path) -> tuple[str, Path]:
    session_id, directory = orc.create_session(
        root, goal="Count the words in a.txt and b.txt.", model="python:respond", workspace=None
    )
    (directory / "workspace" / "a.txt").write_text("the journal is the truth\n")
    (directory / "workspace" / "b.txt").write_text("nothing is lost and nothing twice\n")
    return session_id, directory


def show(directory: Path) -> None:
    """What a session holds, read back from disk (no lock needed, nothing runs)."""
    state = orc.load_state(directory, warn=print)
    for task in state.tasks.tasks.values():
        summary = task.completion.summary if task.completion else task.reason
        print(f"  {task.task_id} {task.state:9} instances={task.instances} {summary}".rstrip())
    for mail in orc.mail_history(directory):  # the live state keeps only mail in flight
        print(
            f"  {mail.message_id} {mail.kind:9} {mail.sender} -> {mail.recipient} "
            f"posted@{mail.posted_seq} delivered@{mail.delivered_seq}"
        )


async def main(root: Path) -> None:
    print("== run 1: a session on disk, watched as it runs")
    session_id, directory = new_session(root)
    async with orc.open_session(root, session_id, warn=print) as live:
        result = await orc.drive(live, settings(Watcher()))
    print(f"run 1: {result.status}; read back from disk with load_state:")
    show(directory)

    print("== run 2: cancelled from outside at the first progress report")
    session_id, directory = new_session(root)
    stop = trio.CancelScope()  # a deadline works the same: trio.move_on_after(seconds)
    async with orc.open_session(root, session_id, warn=print) as live:
        with stop:
            await orc.drive(live, settings(Watcher(stop)))
    print(f"run 2: cancelled: {stop.cancelled_caught}")
    show(directory)

    print("== run 2, resumed with open_session + drive")
    async with orc.open_session(root, session_id, warn=print) as live:
        result = await orc.drive(live, settings(Watcher()))
    print(f"run 2 resumed: {result.status}")
    show(directory)


if __name__ == "__main__":
    # Sessions go to a temporary directory, or to the one given (to look at them after).
    with tempfile.TemporaryDirectory() as tmp:
        trio.run(main, Path(sys.argv[1] if len(sys.argv) > 1 else tmp) / "sessions")
