"""The host in the loop: this program answers a subagent's question itself, and
approves or denies each tool call the permission rules ask about, with a reason the
model reads. Walkthrough: docs/library.md, "The host in the loop".

Offline by default (a scripted model stands in for a real one); `--model SPEC` runs it
on a real model.

Run: .venv/bin/python examples/host_in_the_loop.py [--model SPEC]
"""

from __future__ import annotations

import argparse
import re
import tempfile

import trio

import orchestrator as orc


def approve(request: orc.ApprovalRequest) -> bool | orc.Denied:
    print(f"  approve? {request.who}: {request.tool} {request.command or request.arguments}")
    if request.command is not None and request.command.startswith("rm "):
        return orc.Denied("never delete; move what is in the way to old/ instead")
    return True


async def answer(question: orc.Question) -> str | None:
    print(f"  {question.task} asks: {question.text} {list(question.options)}")
    if "license" in question.text.lower():
        return "MIT"
    return None  # the agent that owns the task answers


async def main(model: orc.Model | str) -> None:
    result = await orc.run(
        "Set up the project: a LICENSE file, and a clean build/ directory.",
        model=model,
        workspace=tempfile.mkdtemp(),
        approve=approve,
        answer=answer,
        tools=orc.workspace_tools(),  # files and shell commands, for the agents
        agents=orc.builtin_agents(),  # the built-in worker and explorer to delegate to
    )
    print(f"{result.status}: {result.output or result.detail}")


# --- the offline model: answers every agent's model calls from its context -----------


def call(name: str, **arguments: object) -> orc.ScriptedCall:
    return orc.ScriptedCall(name=name, arguments=arguments)


def offline(request: orc.ModelRequest) -> orc.ScriptedReply:
    said = [str(m.content) for m in request.messages if isinstance(m, orc.ToolResult)]
    text = "\n".join(str(getattr(m, "content", "")) for m in request.messages)
    if request.role == "main":
        if request.step == 0:
            return orc.ScriptedReply(tool_calls=(call(
                "delegate", description="set up the project", prompt="LICENSE, clean build/.",
                write_scope=["LICENSE", "build/", "old/"]),))  # fmt: skip
        done = re.findall(r"<completed id=m\d+ from=task t1>\n(.*)", text)
        return orc.ScriptedReply(text=done[0]) if done else orc.ScriptedReply(
            tool_calls=(call("wait_tasks"),))  # fmt: skip
    answers = re.findall(r"<answer id=m\d+ from=user in_reply_to=m\d+>\n(.*)", text)
    steps = [
        call("ask_decision", question="Which license?", options=["MIT", "Apache-2.0"]),
        call("write_file", path="LICENSE", content=f"{answers[0] if answers else ''} License\n"),
        call("shell", command="rm -rf build"),
        call("shell", command="mkdir -p old && mv build old/ 2>/dev/null; mkdir build"),
    ]
    if len(said) < len(steps):
        return orc.ScriptedReply(tool_calls=(steps[len(said)],))
    summary = f"LICENSE is {answers[0]}; build/ is empty ({said[2]})"
    return orc.ScriptedReply(tool_calls=(call("complete", summary=summary),))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a model spec (default: the offline model)")
    args = parser.parse_args()
    trio.run(main, args.model or orc.ScriptedModel(offline))
