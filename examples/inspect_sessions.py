"""Inspecting sessions: two sessions are run into one directory (one to its end, one
stopped from outside), then listed and read back: status, whether a resume would run
something, usage and cost per agent and per task subtree, every message, and the report
`orchestrator sessions show` prints. Walkthrough: docs/library.md, "Inspecting a session".

Run: .venv/bin/python examples/inspect_sessions.py [SESSIONS-DIR]
"""

from __future__ import annotations

import re
import sys
import tempfile

import trio

import orchestrator as orc

PRICES = {"scripted": orc.Price(input=2.0, output=8.0)}  # dollars per million tokens
LEAD = orc.AgentDefinition(name="lead", prompt="Split the work.", may_delegate=True)


async def make_sessions(sessions: str) -> None:
    await orc.run("Count to two, with help.", model=orc.ScriptedModel(offline), agents=[LEAD],
                  workspace=tempfile.mkdtemp(), sessions_dir=sessions)  # fmt: skip
    with trio.move_on_after(0.0):  # stopped at once: left `interrupted`, resumable
        await orc.run("Count to three.", model=orc.ScriptedModel(offline),
                      workspace=tempfile.mkdtemp(), sessions_dir=sessions)  # fmt: skip


def inspect(sessions: str) -> None:
    for info in orc.list_sessions(sessions):  # newest first
        print(f"{info.id}  {info.status:<12} resumable={info.resumable}  {info.goal}")
    finished = next(i for i in orc.list_sessions(sessions) if i.status == "completed")

    report = orc.session_report(finished.directory, prices=PRICES)
    print(f"\n{report.id}: {report.usage.session.calls} model calls, "
          f"${report.usage.session.cost_usd:.6f}")  # fmt: skip
    for agent, totals in report.usage.by_agent.items():
        print(f"  agent {agent}: {totals.calls} calls, {totals.usage.total_tokens} tokens")
    for node in report.task_tree:
        children = [child.task.task_id for child in node.children]
        print(f"  task {node.task.task_id} [{node.task.state}] subtree: "
              f"{node.usage.calls} calls; subtasks {children}")  # fmt: skip
    for mail in report.mail:
        print(f"  mail {mail.message_id} {mail.kind}: {mail.sender} -> {mail.recipient}")
    print("\n" + report.text())  # exactly what `orchestrator sessions show ID` prints


# --- the offline model: answers every agent's model calls from its context -----------


def call(name: str, **arguments: object) -> orc.ScriptedCall:
    return orc.ScriptedCall(name=name, arguments=arguments)


def offline(request: orc.ModelRequest) -> orc.ScriptedReply:
    text = "\n".join(str(getattr(m, "content", "")) for m in request.messages)
    done = re.findall(r"<completed id=m\d+ from=task (t\d)>\n(.*)", text)
    if request.agent == "main":
        if request.step == 0:
            return orc.ScriptedReply(tool_calls=(call(
                "delegate", description="count to two", prompt="Count.", agent_type="lead",
                write_scope=[]),))  # fmt: skip
        if not done:
            return orc.ScriptedReply(tool_calls=(call("wait_tasks"),))
        return orc.ScriptedReply(text=f"Counted: {done[0][1]}")
    if request.agent == "t1" and request.step == 0:  # t1 hands the second number to t2
        return orc.ScriptedReply(tool_calls=(call(
            "delegate", description="say two", prompt="Say two.", agent_type="lead",
            write_scope=[]),))  # fmt: skip
    if request.agent == "t1" and not done:
        return orc.ScriptedReply(tool_calls=(call("wait_tasks"),))
    said = "one, two" if request.agent == "t1" else "two"
    return orc.ScriptedReply(tool_calls=(call("complete", summary=said),))


if __name__ == "__main__":
    where = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
    trio.run(make_sessions, where)
    inspect(where)
