"""The library host's `answer` asked an MCP server's question (docs/mcp.md, "What a server
may ask"): the server's form as a `Question` of kind "elicitation", the host's reply the
answer (content, `Denied` to decline, None when nobody answers now)."""

from __future__ import annotations

from orchestrator.mcp.elicit import ElicitAsker, Elicitation, Reply
from orchestrator.state.fold import SessionState
from orchestrator.team.asking import Question, QuestionAnswerer, host_reply
from orchestrator.team.queries import MAIN


def elicitation_asker(answer: QuestionAnswerer, state: SessionState) -> ElicitAsker:
    """Asks `answer` each server's question, naming the agent whose call it came in."""

    async def ask(asked: Elicitation) -> Reply:
        task = state.tasks.get(asked.agent)
        question = Question(
            task=asked.agent,
            agent_type=task.agent_type if task is not None else MAIN,
            description=task.description if task is not None else "",
            owner="",
            kind="elicitation",
            text=asked.message,
            options=tuple(asked.fields),
            server=asked.server,
            schema=asked.schema,
        )
        reply = await host_reply(answer, question)
        return None if reply == "" else reply

    return ask
