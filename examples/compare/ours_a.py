"""Task A with orchestrator: a custom tool for a custom agent type, two delegations that
run at once, events printed as they happen, the final answer.

Run: python examples/compare/ours_a.py [MODEL]   (in a directory holding a.txt and b.txt)
Offline: python examples/compare/offline.py ours_a.py
Compared with the same work in pydantic-ai and the Agents SDK: docs/library.md.
"""

import sys

import trio

import orchestrator as orc

MODEL = sys.argv[1] if len(sys.argv) > 1 else "openai:gpt-4.1"


@orc.tool(read_only=True)
def word_count(path: str, ctx: orc.ToolContext) -> str:
    """Count the words in a file.

    Args:
        path: the file, relative to the workspace.
    """
    return f"{len(ctx.workspace.resolve(path).read_text().split())} words"


COUNTER = orc.AgentDefinition(
    name="counter",
    description="Counts the words in one file.",
    prompt="You count words: use word_count, then call complete with the figure.",
    tools=(word_count,),
)


def show(event: orc.Event) -> None:
    match event:
        case orc.ToolCallStarted(agent=agent, call=call):
            print(f"[{agent}] {call.name} {call.arguments}")
        case orc.ToolCallFinished(agent=agent, result=result):
            print(f"[{agent}] {result.name} -> {result.content}")


async def main() -> None:
    result = await orc.run(
        "Count the words in a.txt and b.txt: delegate one counter task per file, both at once.",
        model=MODEL,
        agents=[COUNTER],
        on_event=show,
    )
    print(result.output)


if __name__ == "__main__":
    trio.run(main)
