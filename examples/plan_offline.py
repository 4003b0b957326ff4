"""A plan run from Python, offline: a planner writes a plan, the program approves it, and a
builder carries it out with subagents while the runtime holds each task until what it
depends on has completed; then a plan written in code is built, decided by a callback.
Walkthrough: docs/plans.md#from-python.

Run: .venv/bin/python examples/plan_offline.py
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

import trio

import orchestrator as orc

# --- a scripted model: each role's replies as a function of what it has seen ----------


def call(name: str, **arguments: object) -> orc.ScriptedCall:
    return orc.ScriptedCall(name=name, arguments=arguments)


def task(tid: str, path: str, *after: str) -> dict[str, object]:
    return {
        "id": tid,
        "title": f"write {path}",
        "description": f"Write {path}: one line saying what it is.",
        "depends_on": list(after),
        "write_scope": [path],
        "acceptance": f"test -s {path}",
    }


PLAN = {
    "goal": "Write the notes and their index.",
    "tasks": [
        task("a", "notes/a.md"),
        task("b", "notes/b.md"),
        task("index", "index.md", "a", "b"),
    ],
}


def respond(request: orc.ModelRequest) -> orc.ScriptedReply:
    """Every model call. A reply depends only on the agent's context, so a session
    resumed after a crash picks up where it stood."""
    last = request.messages[-1]
    if request.role == "planner":
        return orc.ScriptedReply(tool_calls=(call("submit_plan", **PLAN),))
    if request.role == "builder":
        if request.step == 0:  # all at once: the runtime holds `index` until a and b are done
            delegate = [
                call("delegate", description=f"plan task {t}", prompt="Do the task.", plan_ref=t)
                for t in ("a", "b", "index")
            ]
            return orc.ScriptedReply(text="All three; index waits.", tool_calls=tuple(delegate))
        waited = isinstance(last, orc.ToolResult) and last.name == "wait_tasks"
        if waited and "running" not in last.content:
            return orc.ScriptedReply(text="The notes and the index are written.")
        return orc.ScriptedReply(tool_calls=(call("wait_tasks"),))
    # A worker: its task message names the one path it may write.
    path = re.findall(r"Write scope \(write only here\): (\S+)", request.messages[1].content)[0]
    if not any(isinstance(m, orc.ToolResult) and m.name == "write_file" for m in request.messages):
        return orc.ScriptedReply(tool_calls=(call("write_file", path=path, content=f"# {path}\n"),))
    return orc.ScriptedReply(tool_calls=(call("complete", summary=f"wrote {path}"),))


# --- watching: the plan's steps and the tasks --------------------------------------------


class Watcher:
    async def emit(self, event: orc.Event, *, durable: bool = False) -> None:
        match event:
            case orc.PlanSubmitted():
                print(f"  plan v{event.version} submitted ({event.source})")
            case orc.PlanDecided():
                print(f"  plan v{event.version} {event.decision} by {event.by}")
            case orc.TaskCreated():
                waits = f", waits for {', '.join(event.after_plan)}" if event.after_plan else ""
                print(f"  task {event.task} created for plan task {event.plan_ref}{waits}")
            case orc.TaskChanged():
                print(f"  task {event.task} -> {event.state}")


def settings(**more: object) -> orc.RunSettings:
    return orc.RunSettings(
        model=orc.ScriptedModel(respond),
        tools=orc.workspace_tools(),
        ui=Watcher(),
        policy=orc.PermissionPolicy(),
        approve=orc.approve_all,  # tool calls; a plan is approved only by a decision
        **more,  # type: ignore[arg-type]
    )


def todos(directory: Path) -> str:
    state = orc.load_state(directory, warn=print)
    return ", ".join(f"{i.id}={i.status}" for i in state.todos["main"].items.values())


async def main(root: Path) -> None:
    print("== plan: the planner writes a plan, which waits for a decision")
    session_id, directory = orc.create_session(
        root, goal="Write the notes and their index.", model="python:respond", workspace=None
    )
    async with orc.open_session(root, session_id, warn=print) as live:
        result = await orc.plan(live, settings())
        latest = live.state.plans.latest
        assert latest is not None
        print(f"plan: {result.status} ({result.detail})")
        print(orc.render_plan(latest.plan), end="")

    print("== approve: the program approves it, and the builder carries it out")
    async with orc.open_session(root, session_id, warn=print) as live:
        result = await orc.approve(live, settings())
    print(f"approve: {result.status}; todos {todos(directory)}")

    print("== execute: a plan written in code, decided by a callback")

    async def decide(version: orc.PlanVersion) -> orc.PlanVerdict:
        print(f"  asked about plan v{version.version}: {len(version.plan.tasks)} tasks")
        return orc.PlanVerdict("approved", by="my program")

    written = orc.Plan(
        goal="Write one note.",
        tasks=(orc.PlanTask(id="a", title="write notes/a.md", write_scope=("notes/a.md",),
                            acceptance="test -s notes/a.md"),),
    )  # fmt: skip
    session_id, directory = orc.create_session(
        root, goal=written.goal, model="python:respond", workspace=None
    )
    async with orc.open_session(root, session_id, warn=print) as live:
        result = await orc.execute(live, settings(approve_plan=decide), written)
    print(f"execute: {result.status}; todos {todos(directory)}")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        trio.run(main, Path(sys.argv[1] if len(sys.argv) > 1 else tmp) / "sessions")
