# Task D with the OpenAI Agents SDK: an approval that waits for a person who is not there.
# The first run ends interrupted; the program keeps its state in a file; later (in another
# process, hours on), the state is read back, the person's decision given, and the run
# goes on. Written from the SDK's documentation; not run by the tests (docs/library.md
# compares it).
#
# Run: python examples/compare/agents_sdk_d.py [MODEL]                  (prints what waits)
#      python examples/compare/agents_sdk_d.py MODEL CALL_ID yes|no   (decides it)
#
# Pages used:
# - Human-in-the-loop (function_tool(needs_approval=True), result.interruptions,
#   result.to_state(), state.to_string(), RunState.from_string(agent, ...), state.approve /
#   state.reject(rejection_message=...), Runner.run_sync(agent, state)):
#   https://openai.github.io/openai-agents-python/human_in_the_loop/

import asyncio
import sys
from pathlib import Path

from agents import Agent, Runner, RunState, function_tool

MODEL = sys.argv[1] if len(sys.argv) > 1 else "gpt-4.1"
KEPT = Path("pending.json")


@function_tool(needs_approval=True)
def deploy(version: str) -> str:
    """Deploy a version to production.

    Args:
        version: the version to deploy.
    """
    return f"version {version} is live"


agent = Agent(name="deployer", model=MODEL, tools=[deploy])


def main() -> None:
    if len(sys.argv) > 3:  # the person's decision, later
        call_id, decision = sys.argv[2:4]
        state = asyncio.run(RunState.from_string(agent, KEPT.read_text()))
        for item in state.get_interruptions():
            if item.call_id != call_id:
                continue
            if decision == "yes":
                state.approve(item)
            else:
                state.reject(item, rejection_message="not this week")
        result = Runner.run_sync(agent, state)
        print(result.final_output)
        return
    result = Runner.run_sync(agent, "Deploy version 1.2.")
    if result.interruptions:
        KEPT.write_text(result.to_state().to_string())
        for item in result.interruptions:
            print(f"waiting: {item.call_id} {item.name} {item.arguments}")


if __name__ == "__main__":
    main()
