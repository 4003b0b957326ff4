"""A server asking the person (elicitation, docs/mcp.md "What a server may ask"): the
question goes where the session's questions go (the person at the terminal, the library
host's `answer`), and when nobody can answer now the call's result says so and the
session stops `blocked` on it; a resume's message is its answer (state/mcp.py
`waiting_answer`), given to the server the next time a call asks it.

Journaled (state/mcp.py): `mcp_elicited` when asked, `mcp_elicit_answered` with the
answer, so a call run again after a crash, or the next call after a resume, is answered
from the journal rather than asking again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import msgspec
import orjson

from orchestrator.mcp.asked import Calling
from orchestrator.mcp.pins import PinSession
from orchestrator.mcp.servers import McpServer
from orchestrator.state.mcp import (
    Answered,
    McpElicitAnswered,
    McpElicited,
    McpState,
    form_content,
)
from orchestrator.tools.permissions import Denied


class Elicitation(msgspec.Struct, frozen=True):
    """What a server asks the person: `message`, and the JSON schema of the answer
    (`schema`: an object of flat properties), during `agent`'s call of `tool`."""

    server: str
    tool: str
    agent: str
    message: str
    schema: Mapping[str, Any]
    id: str  # the digest of server, message and schema

    @property
    def fields(self) -> dict[str, Any]:
        properties = self.schema.get("properties")
        return dict(properties) if isinstance(properties, dict) else {}


Reply = Mapping[str, Any] | str | Denied | None
"""An answer: the content (a mapping; or text: a one-field form's value, else a JSON
object), `Denied` to decline, None when nobody answers now."""

ElicitAsker = Callable[[Elicitation], Awaitable[Reply]]


def question_id(server: str, message: str, schema: Mapping[str, Any]) -> str:
    body = {"server": server, "message": message, "schema": schema}
    raw = orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def content_of(asked: Elicitation, reply: Mapping[str, Any] | str) -> dict[str, Any]:
    """The answer's content as the form asks for it; a `ValueError` saying why not."""
    return form_content(asked.schema, reply)


class Elicitor:
    """Answers a session's servers' questions: from the journal when answered already,
    else by asking `ask` (None: nobody can be asked, the session stops blocked)."""

    def __init__(self, session: PinSession, ask: ElicitAsker | None, by: str) -> None:
        self._session = session
        self._ask = ask
        self._by = by  # who `ask` is: "person" or "host"; "worker": nobody, on a worker

    @property
    def _mcp(self) -> McpState:
        state: McpState = self._session.state.mcp
        return state

    async def __call__(self, server: McpServer, calling: Calling, params: Any) -> Any:
        import mcp_types as types

        if getattr(params, "mode", "form") != "form":
            # A URL to open elsewhere (a sign-in): not something we show or follow.
            return types.ElicitResult(action="decline")
        schema = dict(params.requested_schema or {})
        asked = Elicitation(
            server=server.name,
            tool=calling.tool,
            agent=calling.agent,
            message=params.message,
            schema=schema,
            id=question_id(server.name, params.message, schema),
        )
        answered = await self._journaled(asked, calling)
        if answered is None:
            answered = await self._asked(asked, calling)
        if answered is None:
            return types.ElicitResult(action="cancel")
        return types.ElicitResult(action=answered.action, content=answered.content)

    async def _journaled(self, asked: Elicitation, calling: Calling) -> Answered | None:
        """The answer this call had (run again after a crash), or the one given for the
        next call that asks (a resume's), claimed now."""
        mine = self._mcp.answer(calling.agent, calling.ref, asked.id)
        if mine is not None:
            return mine
        given = self._mcp.answer("", "", asked.id)
        if given is not None:
            await self._answer(asked, calling, given, by="journal")
        return given

    async def _asked(self, asked: Elicitation, calling: Calling) -> Answered | None:
        waiting = self._ask is None
        reply: Reply = None
        if self._ask is not None:
            await self._record(asked, calling, waiting=False)
            reply = await self._ask(asked)
            waiting = reply is None
        if waiting:
            await self._record(asked, calling, waiting=True)
            calling.unanswered = _unanswered(asked, on_worker=self._by == "worker")
            return None
        if isinstance(reply, Denied):
            answered = Answered("decline")
        else:
            assert reply is not None
            answered = Answered("accept", content_of(asked, reply))
        await self._answer(asked, calling, answered, by=self._by)
        return answered

    async def _record(self, asked: Elicitation, calling: Calling, *, waiting: bool) -> None:
        record = McpElicited(
            agent=calling.agent,
            server=asked.server,
            tool=asked.tool,
            ref=calling.ref,
            question=asked.id,
            message=asked.message,
            schema=dict(asked.schema),
            waiting=waiting,
        )
        await (calling.events or self._session).emit(record, durable=True)

    async def _answer(
        self, asked: Elicitation, calling: Calling, answered: Answered, *, by: str
    ) -> None:
        record = McpElicitAnswered(
            agent=calling.agent,
            question=asked.id,
            action=answered.action,
            content=answered.content,
            ref=calling.ref,
            by=by,
        )
        await (calling.events or self._session).emit(record, durable=True)


def _unanswered(asked: Elicitation, *, on_worker: bool = False) -> str:
    said = (
        f"MCP server {asked.server!r} asked the person during {asked.tool} "
        f"({' '.join(asked.message.split())[:200]!r}), and nobody can answer "
    )
    if on_worker:  # (the session does not see the question: docs/mcp.md)
        return said + (
            "it on a worker, where no person is asked: ask for what the server wanted "
            "(ask_decision), or go on without it"
        )
    return said + (
        "now: the session stops blocked on it; once the person answers (resume --message), "
        f"call {asked.tool} again and the server gets the answer"
    )
