"""Runs our programs of the comparison offline: `python examples/compare/offline.py
ours_a.py [DIR [ARGS...]]` (or ours_b.py, ours_c.py, ours_d.py) makes a workspace (in
DIR, else a temporary directory), loads the program, swaps its MODEL for a scripted model
that answers from the functions below, and runs its `main` (with ARGS after the model's
place in its argv). tests/test_examples.py runs each this way.

This file is not part of what examples/compare/count.py counts: it stands in for the
model, which the peers' programs leave to a provider as well.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import re
import sys
import tempfile
from pathlib import Path

import trio

import orchestrator as orc


def call(name: str, **arguments: object) -> orc.ScriptedCall:
    return orc.ScriptedCall(name=name, arguments=arguments)


def text_of(request: orc.ModelRequest) -> str:
    """Everything in the agent's context, as one text."""
    return "\n".join(m.content for m in request.messages)


def last_result(request: orc.ModelRequest, tool: str) -> orc.ToolResult | None:
    found = [m for m in request.messages if isinstance(m, orc.ToolResult) and m.name == tool]
    return found[-1] if found else None


def task_a(request: orc.ModelRequest) -> orc.ScriptedReply:
    """The main agent delegates a counter per file and waits; each counter counts."""
    if request.role == "main":
        if request.step == 0:
            files = ("a.txt", "b.txt")
            delegate = [
                call("delegate", description=f"count words in {f}", prompt=f"Count {f}.",
                     agent_type="counter")
                for f in files
            ]  # fmt: skip
            return orc.ScriptedReply(text="One counter per file.", tool_calls=tuple(delegate))
        # What the counters reported, in whichever order they finished.
        counts = sorted(set(re.findall(r"(\w+\.txt): (\d+) words", text_of(request))))
        if len(counts) == 2:
            return orc.ScriptedReply(text="; ".join(f"{f}: {n} words" for f, n in counts))
        return orc.ScriptedReply(tool_calls=(call("wait_tasks"),))
    path = re.findall(r"count words in (\S+)", text_of(request))[0]
    counted = last_result(request, "word_count")
    if counted is None or counted.status != "ok":
        return orc.ScriptedReply(tool_calls=(call("word_count", path=path),))
    return orc.ScriptedReply(tool_calls=(call("complete", summary=f"{path}: {counted.content}"),))


def task_b(request: orc.ModelRequest) -> orc.ScriptedReply:
    """The main agent delegates to a worker and waits; the worker asks which license,
    writes it, tries to stage it with git, and reports what happened."""
    text = text_of(request)
    if request.role == "main":
        if request.step == 0:
            return orc.ScriptedReply(tool_calls=(
                call("delegate", description="add a LICENSE file", agent_type="worker",
                     prompt="Ask which license, then write LICENSE.", write_scope=["LICENSE"]),
            ))  # fmt: skip
        done = re.findall(r"<completed id=m\d+ from=task t1>\n(.*)", text)
        if done:
            return orc.ScriptedReply(text=f"The worker reports: {done[-1]}")
        return orc.ScriptedReply(tool_calls=(call("wait_tasks"),))
    answers = re.findall(r"<answer id=m\d+ from=\w+ in_reply_to=m\d+>\n(.*)", text)
    if not answers:
        question = call("ask_decision", question="Which license?", options=["MIT", "Apache-2.0"])
        return orc.ScriptedReply(tool_calls=(question,))
    wrote, staged = last_result(request, "write_file"), last_result(request, "shell")
    if wrote is None or staged is None:
        return orc.ScriptedReply(tool_calls=(
            call("write_file", path="LICENSE", content=f"{answers[-1]} License\n"),
            call("shell", command="git add LICENSE"),
        ))  # fmt: skip
    summary = f"LICENSE ({answers[-1]}): {wrote.status}; git add: {staged.content}"
    return orc.ScriptedReply(tool_calls=(call("complete", summary=summary),))


def task_c(request: orc.ModelRequest) -> orc.ScriptedReply:
    """One lookup, then the answer it gave."""
    looked = last_result(request, "lookup")
    if looked is None:
        return orc.ScriptedReply(tool_calls=(call("lookup", key="k"),))
    return orc.ScriptedReply(text=f"The key k holds {looked.content}.")


def task_d(request: orc.ModelRequest) -> orc.ScriptedReply:
    """A deploy that needs a person's yes; then what came of it."""
    deployed = last_result(request, "deploy")
    if deployed is None:
        return orc.ScriptedReply(tool_calls=(call("deploy", version="1.2"),))
    return orc.ScriptedReply(text=f"{deployed.status}: {deployed.content}")


def run(program: str, where: Path, args: list[str]) -> None:
    os.chdir(where)
    (where / "a.txt").write_text("the journal is the truth\n")
    (where / "b.txt").write_text("nothing is lost and nothing twice\n")
    (where / "sessions").mkdir(exist_ok=True)
    tempfile.tempdir = str(where / "sessions")  # where orc.run keeps its sessions
    sys.argv = [program, "scripted", *args]  # (MODEL, which is swapped, then the program's)
    spec = importlib.util.spec_from_file_location("program", Path(__file__).parent / program)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    task = {"a": task_a, "b": task_b, "c": task_c, "d": task_d}[program.removesuffix(".py")[-1]]
    setattr(module, "MODEL", orc.ScriptedModel(task))  # noqa: B010
    if inspect.iscoroutinefunction(module.main):
        trio.run(module.main)
    else:  # (a plain script's: it runs its own loop)
        module.main()


if __name__ == "__main__":
    if len(sys.argv) > 2:
        run(sys.argv[1], Path(sys.argv[2]).resolve(), sys.argv[3:])
    else:
        with tempfile.TemporaryDirectory() as tmp:
            run(sys.argv[1], Path(tmp), [])
