# Task C with pydantic-ai: one agent, one tool of the program's, the answer; from a plain
# script, with no event loop of its own. Written from pydantic-ai's documentation; not
# run by the tests (docs/library.md compares it; tests/benchmarks/bench_bytes.py and
# bench_call.py run the same task with pydantic-ai installed by `make peers`).
#
# Run: python examples/compare/pydantic_ai_c.py [MODEL]
#
# Pages used:
# - Agents, "Running Agents" (agent.run_sync, result.output): https://ai.pydantic.dev/agents/
# - Function Tools (tools=[...] of plain functions, docstrings as descriptions):
#   https://ai.pydantic.dev/tools/

import sys

from pydantic_ai import Agent

MODEL = sys.argv[1] if len(sys.argv) > 1 else "openai:gpt-4.1"


def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: the key.
    """
    return {"k": "42"}.get(key, "nothing")


agent = Agent(MODEL, tools=[lookup])


def main() -> None:
    result = agent.run_sync("What does the key k hold? Look it up.")
    print(result.output)


if __name__ == "__main__":
    main()
