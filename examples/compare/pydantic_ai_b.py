# Task B with pydantic-ai: the host program in the loop. A worker's question is answered by
# the program; the worker's tool calls are approved or denied by the program, which gets a
# typed request, and a denial's reason is what the model reads. Written from pydantic-ai's
# documentation; not installed here, not run by the tests (docs/library.md compares it).
#
# Run: python examples/compare/pydantic_ai_b.py [MODEL]   (in the project to add a LICENSE to)
#
# Pages used:
# - Deferred Tools, "Resolving deferred calls with a handler" (HandleDeferredToolCalls,
#   DeferredToolRequests.build_results) and "Human-in-the-Loop Tool Approval"
#   (requires_approval=True, ToolDenied with the message the model sees):
#   https://ai.pydantic.dev/deferred-tools/
# - Multi-agent Applications, "Agent delegation": https://ai.pydantic.dev/multi-agent-applications/
# - Function Tools (@agent.tool_plain, ToolCallPart.args_as_dict): https://ai.pydantic.dev/tools/
#   and https://ai.pydantic.dev/api/messages/
# The worker's question is a plain tool that asks the host: the run goes on meanwhile, as
# in our program. (A tool that raises CallDeferred, resolved by the same handler, is the
# other way the Deferred Tools page shows.)

import asyncio
import subprocess
import sys
from pathlib import Path

from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, RunContext, ToolDenied
from pydantic_ai.capabilities import HandleDeferredToolCalls

MODEL = sys.argv[1] if len(sys.argv) > 1 else "openai:gpt-4.1"


async def approve(ctx: RunContext, requests: DeferredToolRequests) -> DeferredToolResults:
    approvals: dict[str, bool | ToolDenied] = {}
    for call in requests.approvals:
        args = call.args_as_dict()
        print(f"[{ctx.agent.name}] wants {call.tool_name} {args}")
        allowed = call.tool_name == "write_file" and args.get("path") == "LICENSE"
        approvals[call.tool_call_id] = (
            True if allowed else ToolDenied("nothing but writing LICENSE is allowed here")
        )
    return requests.build_results(approvals=approvals)


worker = Agent(
    MODEL,
    name="worker",
    instructions="You carry out one task. Ask the user with ask_user when a choice is theirs.",
    capabilities=[HandleDeferredToolCalls(handler=approve)],
)


@worker.tool_plain
def ask_user(question: str) -> str:
    """Ask the user a question and get the answer."""
    print(f"[worker] asks: {question}")
    return "MIT"


@worker.tool_plain(requires_approval=True)
def write_file(path: str, content: str) -> str:
    """Write a file."""
    Path(path).write_text(content)
    return f"wrote {path}"


@worker.tool_plain(requires_approval=True)
def shell(command: str) -> str:
    """Run a shell command and get its output."""
    done = subprocess.run(command, shell=True, capture_output=True, text=True)
    return done.stdout + done.stderr


main_agent = Agent(MODEL, name="main", instructions="Give the work to a worker with delegate.")


@main_agent.tool
async def delegate(ctx: RunContext, task: str) -> str:
    """Give one task to a worker agent and get its report."""
    result = await worker.run(task, usage=ctx.usage)
    return result.output


async def main() -> None:
    result = await main_agent.run(
        "Add a LICENSE file: have a worker ask me which license, then write it."
    )
    print(result.output)


if __name__ == "__main__":
    asyncio.run(main())
