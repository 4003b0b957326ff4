# Task C with the OpenAI Agents SDK: one agent, one tool of the program's, the answer;
# from a plain script, with no event loop of its own. Written from the SDK's
# documentation; not installed here, not run by the tests (docs/library.md compares it).
#
# Run: python examples/compare/agents_sdk_c.py [MODEL]
#
# Pages used:
# - Quickstart and Running agents (Runner.run_sync, final_output):
#   https://openai.github.io/openai-agents-python/running_agents/
# - Tools, "Function tools" (@function_tool, docstrings as descriptions):
#   https://openai.github.io/openai-agents-python/tools/

import sys

from agents import Agent, Runner, function_tool

MODEL = sys.argv[1] if len(sys.argv) > 1 else "gpt-4.1"


@function_tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: the key.
    """
    return {"k": "42"}.get(key, "nothing")


agent = Agent(name="assistant", model=MODEL, tools=[lookup])


def main() -> None:
    result = Runner.run_sync(agent, "What does the key k hold? Look it up.")
    print(result.final_output)


if __name__ == "__main__":
    main()
