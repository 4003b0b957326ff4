# Task A with pydantic-ai: a custom tool for a custom agent, two delegations that run at
# once, events printed as they happen, the final answer. Written from pydantic-ai's
# documentation; not installed here, not run by the tests (docs/library.md compares it).
#
# Run: python examples/compare/pydantic_ai_a.py [MODEL]   (in a directory with a.txt, b.txt)
#
# Pages used:
# - Agents, "Running Agents" and "Streaming All Events" (agent.run(event_stream_handler=...),
#   FunctionToolCallEvent, FunctionToolResultEvent): https://ai.pydantic.dev/agents/
# - Multi-agent Applications, "Agent delegation" (a tool that runs another agent, with
#   usage=ctx.usage): https://ai.pydantic.dev/multi-agent-applications/
# - Function Tools (@agent.tool_plain, @agent.tool, docstrings as descriptions; tool calls
#   of one response run concurrently): https://ai.pydantic.dev/tools/ and
#   https://ai.pydantic.dev/tools-advanced/
# - RunContext.agent, the agent a context belongs to: https://ai.pydantic.dev/api/tools/

import asyncio
import sys
from collections.abc import AsyncIterable
from pathlib import Path

from pydantic_ai import (
    Agent,
    AgentStreamEvent,
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    RunContext,
)

MODEL = sys.argv[1] if len(sys.argv) > 1 else "openai:gpt-4.1"

counter = Agent(MODEL, name="counter", instructions="You count words: use word_count.")


@counter.tool_plain
def word_count(path: str) -> str:
    """Count the words in a file.

    Args:
        path: the file.
    """
    return f"{len(Path(path).read_text().split())} words"


async def show(ctx: RunContext, events: AsyncIterable[AgentStreamEvent]) -> None:
    async for event in events:
        if isinstance(event, FunctionToolCallEvent):
            print(f"[{ctx.agent.name}] {event.part.tool_name} {event.part.args}")
        elif isinstance(event, FunctionToolResultEvent):
            print(f"[{ctx.agent.name}] -> {event.result.content}")


main_agent = Agent(MODEL, name="main", instructions="Give each file to count_words.")


@main_agent.tool
async def count_words(ctx: RunContext, path: str) -> str:
    """Have a counter agent count the words in one file.

    Args:
        path: the file.
    """
    result = await counter.run(f"Count {path}.", usage=ctx.usage, event_stream_handler=show)
    return result.output


async def main() -> None:
    result = await main_agent.run(
        "Count the words in a.txt and b.txt: call count_words for both files at once.",
        event_stream_handler=show,
    )
    print(result.output)


if __name__ == "__main__":
    asyncio.run(main())
