# Task A with the OpenAI Agents SDK: a custom tool for a custom agent, two delegations that
# run at once, events printed as they happen, the final answer. Written from the SDK's
# documentation; not installed here, not run by the tests (docs/library.md compares it).
#
# Run: python examples/compare/agents_sdk_a.py [MODEL]   (in a directory with a.txt, b.txt)
#
# Pages used:
# - Tools, "Function tools" (@function_tool, docstrings as descriptions) and "Agents as
#   tools" (Agent.as_tool, and "Streaming nested agent runs": on_stream,
#   AgentToolStreamEvent): https://openai.github.io/openai-agents-python/tools/
# - Streaming, "Run item events and agent events" (Runner.run_streamed, stream_events,
#   tool_call_item, tool_call_output_item): https://openai.github.io/openai-agents-python/streaming/
# - Orchestrating multiple agents (agents as tools, the LLM deciding what to delegate):
#   https://openai.github.io/openai-agents-python/multi_agent/
# - Running agents (Runner, final_output): https://openai.github.io/openai-agents-python/running_agents/

import asyncio
import sys
from pathlib import Path

from agents import Agent, AgentToolStreamEvent, Runner, StreamEvent, function_tool

MODEL = sys.argv[1] if len(sys.argv) > 1 else "gpt-4.1"


@function_tool
def word_count(path: str) -> str:
    """Count the words in a file.

    Args:
        path: the file.
    """
    return f"{len(Path(path).read_text().split())} words"


def show(agent: str, event: StreamEvent) -> None:
    if event.type == "run_item_stream_event" and event.item.type == "tool_call_item":
        print(f"[{agent}] {event.item.raw_item.name} {event.item.raw_item.arguments}")
    elif event.type == "run_item_stream_event" and event.item.type == "tool_call_output_item":
        print(f"[{agent}] -> {event.item.output}")


def show_nested(event: AgentToolStreamEvent) -> None:
    show(event["agent"].name, event["event"])


counter = Agent(
    name="counter",
    model=MODEL,
    instructions="You count words: use word_count.",
    tools=[word_count],
)
main_agent = Agent(
    name="main",
    model=MODEL,
    instructions="Give each file to count_words.",
    tools=[
        counter.as_tool(
            tool_name="count_words",
            tool_description="Have a counter agent count the words in one file.",
            on_stream=show_nested,
        )
    ],
)


async def main() -> None:
    result = Runner.run_streamed(
        main_agent, "Count the words in a.txt and b.txt: call count_words for both files at once."
    )
    async for event in result.stream_events():
        show("main", event)
    print(result.final_output)


if __name__ == "__main__":
    asyncio.run(main())
