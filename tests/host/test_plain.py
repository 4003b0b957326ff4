"""What you give is what the model sees (issue 39, item 1): `orc.run` without `agents=`
is a plain agent offered the tools given and nothing else; the workspace's tools, the
todo tools and the built-in agent types come when asked for; with `agents=` the main
agent delegates (and has the todo tools). The requests the scripted model receives are
what a provider would be sent."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import orchestrator as orc
from orchestrator import ModelRequest, ScriptedModel, ScriptedReply
from orchestrator.errors import ConfigError
from orchestrator.loop.pruning import STUB_PREFIX
from orchestrator.messages import SystemMessage, ToolResult
from orchestrator.models.base import COMPACTOR
from orchestrator.models.scripted import ScriptedWindow
from orchestrator.tools import WORKSPACE_TOOLS
from tests.scenes import c, reply

COUNTED: list[str] = []


@orc.tool(read_only=True)
def lookup(key: str) -> str:
    """The value stored under `key`."""
    COUNTED.append(key)
    return {"capital of France": "Paris"}.get(key, "unknown")


def names(request: ModelRequest) -> list[str]:
    return [spec.name for spec in request.tools]


def look_it_up(seen: list[ModelRequest]) -> ScriptedModel:
    """T1: one lookup, then the answer."""

    def respond(request: ModelRequest) -> ScriptedReply:
        seen.append(request)
        if request.step == 0:
            return reply("", c("lookup", key="capital of France"))
        [result] = [m for m in request.messages if isinstance(m, ToolResult)]
        return reply(f"It is {result.content}.")

    return ScriptedModel(respond)


async def test_a_plain_agent_sends_only_the_tool_given_and_no_system_prompt(
    tmp_path: Path,
) -> None:
    seen: list[ModelRequest] = []
    COUNTED.clear()
    result = await orc.run(
        "What is the capital of France?", model=look_it_up(seen), tools=[lookup],
        workspace=tmp_path, sessions_dir=tmp_path / "s",
    )  # fmt: skip
    assert (result.status, result.output) == ("completed", "It is Paris.")
    assert COUNTED == ["capital of France"]
    assert [names(r) for r in seen] == [["lookup"], ["lookup"]]
    first = seen[0].messages
    assert not any(isinstance(m, SystemMessage) for m in first)
    assert [m.content for m in first] == ["What is the capital of France?"]


async def test_the_workspace_tools_come_when_given_and_the_prompt_says_what_they_need(
    tmp_path: Path,
) -> None:
    seen: list[ModelRequest] = []
    await orc.run(
        "What is the capital of France?",
        model=look_it_up(seen),
        tools=[*orc.workspace_tools(), lookup],
        workspace=tmp_path,
        sessions_dir=tmp_path / "s",
    )
    # The shell's calls may move to the background: the four tools that follow them.
    later = ["read_task_output", "wait_tasks", "cancel_task", "list_tasks"]
    assert names(seen[0]) == [*WORKSPACE_TOOLS, "lookup", *later]
    system = seen[0].messages[0]
    assert isinstance(system, SystemMessage)
    assert system.content.startswith("Paths are relative to the workspace root")
    for absent in ("delegate", "todo_write", "report_blocked", "Subagent types"):
        assert absent not in system.content


async def test_todo_tools_given_work_in_a_plain_agent(tmp_path: Path) -> None:
    seen: list[ModelRequest] = []

    def respond(request: ModelRequest) -> ScriptedReply:
        seen.append(request)
        if request.step == 0:
            return reply("", c("todo_create", content="look it up", status="in_progress"))
        if request.step == 1:
            return reply("", c("todo_update", id="1", status="completed", result="Paris"))
        return reply("Paris.")

    result = await orc.run(
        "Plan, then answer.",
        model=ScriptedModel(respond),
        tools=[*orc.todo_tools(), lookup],
        workspace=tmp_path,
        sessions_dir=tmp_path / "s",
    )
    assert result.output == "Paris."
    todo = ["todo_write", "todo_create", "todo_update", "todo_list", "todo_get"]
    assert names(seen[0]) == [*todo, "lookup"]
    system = seen[0].messages[0]
    assert isinstance(system, SystemMessage)
    assert "todo_write" in system.content
    assert result.session_dir is not None
    todos = orc.load_state(result.session_dir, warn=pytest.fail).todos["main"]
    assert [(i.content, i.status, i.result) for i in todos.items.values()] == [
        ("look it up", "completed", "Paris")
    ]


async def test_agent_types_given_bring_delegation_and_the_todo_tools(tmp_path: Path) -> None:
    seen: list[ModelRequest] = []
    helper = orc.AgentDefinition(name="helper", prompt="Look things up.", tools=(lookup,))

    def respond(request: ModelRequest) -> ScriptedReply:
        seen.append(request)
        return reply("nothing to do")

    await orc.run(
        "go",
        model=ScriptedModel(respond),
        agents=[helper],
        workspace=tmp_path,
        sessions_dir=tmp_path / "s",
    )
    offered = names(seen[0])
    for tool in ("lookup", "delegate", "wait_tasks", "todo_write", "report_blocked"):
        assert tool in offered
    assert not set(WORKSPACE_TOOLS) & set(offered)  # none given
    system = seen[0].messages[0]
    assert isinstance(system, SystemMessage)
    [types] = re.findall(r"Subagent types: (.*)\.$", system.content)
    assert types == "helper"  # and not the built-in worker and explorer


async def test_the_built_in_types_need_the_workspace_tools_they_name(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"tools=\[\*orc\.workspace_tools\(\), \.\.\.\]"):
        await orc.run(
            "go",
            model=ScriptedModel(lambda r: reply("ok")),
            agents=orc.builtin_agents(),
            workspace=tmp_path,
            sessions_dir=tmp_path / "s",
        )


async def test_a_plain_agent_is_offered_recall_once_its_context_was_pruned(
    files: Path, tmp_path: Path
) -> None:
    """Pruned outputs name `recall`: a plain agent gets it then, not before."""
    offered: list[tuple[bool, bool]] = []  # (a stub in the context, recall offered)
    recalled: list[str] = []

    def respond(request: ModelRequest) -> ScriptedReply:
        if request.role == COMPACTOR:
            return ScriptedReply(text="Read the files; nothing else to keep.")
        stubs = [
            m.content
            for m in request.messages
            if isinstance(m, ToolResult) and m.content.startswith(STUB_PREFIX)
        ]
        offered.append((bool(stubs), "recall" in names(request)))
        if stubs and not recalled:
            [ref] = re.findall(r'recall\("([\d.]+)"\)', stubs[0])
            recalled.append(ref)
            return reply("", c("recall", ref=ref))
        if request.step < 24:
            return reply("", c("read_file", path=f"f{request.step % 4}.txt"))
        return reply("done")

    result = await orc.run(
        "read the files",
        model=ScriptedModel(respond, window=ScriptedWindow(context=20_000)),
        tools=[*orc.workspace_tools()],
        workspace=files,
        sessions_dir=tmp_path / "s",
    )
    assert result.status == "completed", result.detail
    assert recalled, "no output was pruned"
    assert offered[0] == (False, False)
    assert (True, True) in offered
    assert all(recall for stub, recall in offered if stub)
    assert result.session_dir is not None
    main = orc.load_state(result.session_dir, warn=pytest.fail).agents["main"]
    [answer] = [m for m in main.messages if isinstance(m, ToolResult) and m.name == "recall"]
    assert answer.status == "ok"
