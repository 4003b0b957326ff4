# Task D with pydantic-ai: an approval that waits for a person who is not there. The first
# run ends with the call deferred; the program keeps the conversation in a file; later
# (in another process, hours on), the person's decision is given and a new run goes on
# from the kept messages. Written from pydantic-ai's documentation; not run by the tests
# (docs/library.md compares it).
#
# Run: python examples/compare/pydantic_ai_d.py [MODEL]                   (prints what waits)
#      python examples/compare/pydantic_ai_d.py MODEL CALL_ID yes|no    (decides it)
#
# Pages used:
# - Deferred Tools, "Human-in-the-Loop Tool Approval" (requires_approval=True,
#   output_type=[str, DeferredToolRequests], DeferredToolResults(approvals=...),
#   ToolDenied, message_history=..., deferred_tool_results=...):
#   https://ai.pydantic.dev/deferred-tools/
# - Messages and chat history, "Storing and loading messages" (ModelMessagesTypeAdapter):
#   https://ai.pydantic.dev/message-history/

import sys
from pathlib import Path

from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolDenied
from pydantic_ai.messages import ModelMessagesTypeAdapter

MODEL = sys.argv[1] if len(sys.argv) > 1 else "openai:gpt-4.1"
KEPT = Path("pending.json")

agent = Agent(MODEL, output_type=[str, DeferredToolRequests])


@agent.tool_plain(requires_approval=True)
def deploy(version: str) -> str:
    """Deploy a version to production.

    Args:
        version: the version to deploy.
    """
    return f"version {version} is live"


def main() -> None:
    if len(sys.argv) > 3:  # the person's decision, later
        call_id, decision = sys.argv[2:4]
        answer = True if decision == "yes" else ToolDenied("not this week")
        messages = ModelMessagesTypeAdapter.validate_json(KEPT.read_bytes())
        result = agent.run_sync(
            message_history=messages,
            deferred_tool_results=DeferredToolResults(approvals={call_id: answer}),
        )
        print(result.output)
        return
    result = agent.run_sync("Deploy version 1.2.")
    if isinstance(result.output, DeferredToolRequests):
        KEPT.write_bytes(ModelMessagesTypeAdapter.dump_json(result.all_messages()))
        for call in result.output.approvals:
            print(f"waiting: {call.tool_call_id} {call.tool_name} {call.args}")


if __name__ == "__main__":
    main()
