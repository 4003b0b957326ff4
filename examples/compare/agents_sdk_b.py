# Task B with the OpenAI Agents SDK: the host program in the loop. A worker's question is
# answered by the program; the worker's tool calls are approved or denied by the program,
# which gets a typed request, and a denial's reason is what the model reads. Written from
# the SDK's documentation; not installed here, not run by the tests (docs/library.md
# compares it).
#
# Run: python examples/compare/agents_sdk_b.py [MODEL]   (in the project to add a LICENSE to)
#
# Pages used:
# - Human-in-the-loop (function_tool(needs_approval=True), result.interruptions of
#   ToolApprovalItem, result.to_state(), state.approve / state.reject(rejection_message=...),
#   Runner.run(agent, state); approvals inside Agent.as_tool surface on the outer run):
#   https://openai.github.io/openai-agents-python/human_in_the_loop/
# - Tools, "Function tools" and "Agents as tools": https://openai.github.io/openai-agents-python/tools/
# - Running agents (Runner.run, final_output): https://openai.github.io/openai-agents-python/running_agents/
# The worker's question is a plain tool that asks the host: the run goes on meanwhile, as
# in our program.

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from agents import Agent, Runner, function_tool

MODEL = sys.argv[1] if len(sys.argv) > 1 else "gpt-4.1"


@function_tool
def ask_user(question: str) -> str:
    """Ask the user a question and get the answer."""
    print(f"[worker] asks: {question}")
    return "MIT"


@function_tool(needs_approval=True)
def write_file(path: str, content: str) -> str:
    """Write a file."""
    Path(path).write_text(content)
    return f"wrote {path}"


@function_tool(needs_approval=True)
def shell(command: str) -> str:
    """Run a shell command and get its output."""
    done = subprocess.run(command, shell=True, capture_output=True, text=True)
    return done.stdout + done.stderr


worker = Agent(
    name="worker",
    model=MODEL,
    instructions="You carry out one task. Ask the user with ask_user when a choice is theirs.",
    tools=[ask_user, write_file, shell],
)
main_agent = Agent(
    name="main",
    model=MODEL,
    instructions="Give the work to a worker with delegate.",
    tools=[worker.as_tool(tool_name="delegate", tool_description="Give one task to a worker.")],
)


async def main() -> None:
    goal = "Add a LICENSE file: have a worker ask me which license, then write it."
    result = await Runner.run(main_agent, goal)
    while result.interruptions:
        state = result.to_state()
        for request in result.interruptions:
            args = json.loads(request.arguments or "{}")
            print(f"[{request.agent.name}] wants {request.name} {args}")
            if request.name == "write_file" and args.get("path") == "LICENSE":
                state.approve(request)
            else:
                state.reject(
                    request, rejection_message="nothing but writing LICENSE is allowed here"
                )
        result = await Runner.run(main_agent, state)
    print(result.final_output)


if __name__ == "__main__":
    asyncio.run(main())
