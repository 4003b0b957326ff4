"""A research team: the main agent delegates one researcher per question, and the
researchers run in parallel with two tools made of plain functions. Events print as
they happen; the answer is `result.output`. Walkthrough: docs/library.md.

Offline by default (a scripted model stands in for a real one); `--model SPEC` runs it
on a real model (`--model openai:gpt-4.1`, with OPENAI_API_KEY set).

Run: .venv/bin/python examples/research_team.py [--model SPEC] [--sessions-dir DIR]
"""

from __future__ import annotations

import argparse
import re
import tempfile

import trio

import orchestrator as orc

NOTES = {
    "trio": "Trio runs tasks in nurseries: a task never outlives the block that started it.",
    "asyncio": "asyncio runs tasks on an event loop; asyncio.TaskGroup scopes them since 3.11.",
    "curio": "Curio was the first library with structured tasks; trio grew out of it.",
}


@orc.tool(read_only=True, idempotent=True)
def search_notes(query: str) -> list[str]:
    """Find the notes that mention a word.

    Args:
        query: one word to look for.
    """
    return [title for title, text in NOTES.items() if query.lower() in f"{title} {text}".lower()]


@orc.tool(read_only=True, idempotent=True)
def read_note(title: str) -> str:
    """Read one note in full.

    Args:
        title: the note's title, as search_notes gives it.
    """
    return NOTES.get(title, f"no note called {title!r}")


RESEARCHER = orc.AgentDefinition(
    name="researcher",
    description="Answers one question from the notes, citing them.",
    prompt="Search the notes, read what you find, and complete with a one-line answer.",
    tools=(search_notes, read_note),
)


def show(event: orc.Event) -> None:
    match event:
        case orc.TaskCreated(task=task, description=description):
            print(f"  {task} started: {description}")
        case orc.MessagePosted(mail="completed", task=task, summary=summary):
            print(f"  {task} done: {summary}")


async def main(model: orc.Model | str, sessions_dir: str | None) -> None:
    result = await orc.run(
        "How do trio and asyncio scope their tasks? One researcher per library.",
        model=model,
        agents=[RESEARCHER],
        workspace=tempfile.mkdtemp(),
        sessions_dir=sessions_dir,
        on_event=show,
    )
    print(f"{result.status}: {result.output}")
    print(f"{result.usage.total_tokens} tokens; session {result.session_dir}")


# --- the offline model: answers every agent's model calls from its context -----------


def call(name: str, **arguments: object) -> orc.ScriptedCall:
    return orc.ScriptedCall(name=name, arguments=arguments)


def offline(request: orc.ModelRequest) -> orc.ScriptedReply:
    said = [m for m in request.messages if isinstance(m, orc.ToolResult)]
    if request.role == "main":
        if request.step == 0:
            return orc.ScriptedReply(tool_calls=tuple(
                call("delegate", agent_type="researcher", write_scope=[],
                     description=f"how {lib} scopes tasks", prompt=f"About {lib}.")
                for lib in ("trio", "asyncio")
            ))  # fmt: skip
        text = "\n".join(str(m.content) for m in said)
        answers = re.findall(r"<completed id=m\d+ from=task t\d>\n(.*)", text)
        if len(answers) < 2:
            return orc.ScriptedReply(tool_calls=(call("wait_tasks"),))
        return orc.ScriptedReply(text=" ".join(sorted(answers)))
    library = re.findall(r"About (\w+)\.", str(request.messages[1].content))[0]
    if not said:
        return orc.ScriptedReply(tool_calls=(call("search_notes", query=library),))
    if len(said) == 1:
        return orc.ScriptedReply(tool_calls=(call("read_note", title=library),))
    return orc.ScriptedReply(tool_calls=(call("complete", summary=said[-1].content),))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a model spec (default: the offline model)")
    parser.add_argument("--sessions-dir", help="where to keep the session")
    args = parser.parse_args()
    trio.run(main, args.model or orc.ScriptedModel(offline), args.sessions_dir)
