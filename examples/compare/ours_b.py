"""Task B with orchestrator: the host program in the loop. A worker's question is answered
by the program; the worker's tool calls are approved or denied by the program, which gets a
typed request, and a denial's reason is what the model reads.

Run: python examples/compare/ours_b.py [MODEL]   (in the project to add a LICENSE to)
Offline: python examples/compare/offline.py ours_b.py
Compared with the same work in pydantic-ai and the Agents SDK: docs/library.md.
"""

import sys

import trio

import orchestrator as orc

MODEL = sys.argv[1] if len(sys.argv) > 1 else "openai:gpt-4.1"


def answer(question: orc.Question) -> str:
    print(f"[{question.task}] asks: {question.text}")
    return "MIT"


def approve(request: orc.ApprovalRequest) -> bool | orc.Denied:
    print(f"[{request.agent}] wants {request.tool} {request.arguments}")
    if request.tool == "write_file" and request.arguments.get("path") == "LICENSE":
        return True
    return orc.Denied("nothing but writing LICENSE is allowed here")


async def main() -> None:
    result = await orc.run(
        "Add a LICENSE file: have a worker ask me which license, then write it.",
        model=MODEL,
        answer=answer,
        approve=approve,
        tools=orc.workspace_tools(),
        agents=orc.builtin_agents(),
    )
    print(result.output)


if __name__ == "__main__":
    trio.run(main)
