"""The team as an MCP server: the tools another agent calls (start a session, its status
and task tree, wait for it with progress, a message, an answer, a decision, its result),
written with the official SDK's `MCPServer`, and served over stdio or streamable HTTP.

Everything runs in one trio run: the SDK is on anyio, its stdio transport as it is, and
its streamable HTTP app (Starlette, ASGI) under hypercorn's trio worker rather than the
SDK's uvicorn, which is asyncio's. So a tool's handler and the sessions it starts share
the loop: a handler calls the running `Team` directly, with no bridge between loops.

HTTP listens on a loopback address only, and every request must carry the token
(`Authorization: Bearer TOKEN`), checked by the SDK's bearer middleware through a
`TokenVerifier` of ours that compares it in constant time.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Callable
from functools import partial
from typing import Annotated, Any, cast

import trio
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from orchestrator.errors import ConfigError, OrchestratorError
from orchestrator.serve.desk import Desk, Launcher, ServeError
from orchestrator.serve.views import Data

INSTRUCTIONS = """\
A team of agents that works on a goal in a workspace: a main agent that delegates tasks \
to subagents, each task durable, the whole session journaled on disk (resumable after \
any stop). Start a session with start_session, then call wait_session (repeatedly) \
until it ends, answering what it asks: questions (answer_question) and decisions on \
tool calls or plans (decide). session_result gives the main agent's answer."""

SESSION = Annotated[str, Field(description="The session's id, as start_session gave it.")]
READS = ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False)
WRITES = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)


def make_server(desk: Desk, *, token: str | None = None) -> MCPServer:
    """The server and its tools, over `desk`. `token`: the one bearer token HTTP
    requests must carry (None: no check, for stdio)."""
    auth: dict[str, Any] = {}
    if token is not None:
        # The SDK's bearer middleware, with no OAuth server: the issuer is named because
        # the settings require one; with no resource URL it is advertised nowhere.
        auth = {
            "auth": AuthSettings(issuer_url="http://127.0.0.1", resource_server_url=None),
            "token_verifier": _Token(token),
        }
    server = MCPServer("orchestrator", instructions=INSTRUCTIONS, log_level="WARNING", **auth)
    _watching(server, desk)
    _steering(server, desk)
    return server


def _watching(server: MCPServer, desk: Desk) -> None:
    """The tools that start, watch and read sessions."""

    @server.tool(annotations=WRITES)
    async def start_session(
        goal: Annotated[str, Field(description="What the team should achieve, in plain words.")],
        plan_first: Annotated[
            bool,
            Field(
                description="A planner writes a plan first, which you approve (decide) "
                "before the builder delegates its tasks."
            ),
        ] = False,
    ) -> Data:
        """Start a new session on GOAL in the server's workspace; it runs in the
        background. Returns its session_id at once: follow it with wait_session."""
        return await _answered(desk.start(goal, plan=plan_first))

    @server.tool(annotations=READS)
    async def session_status(session_id: SESSION) -> Data:
        """The session's status, its task tree (each task's owner, type, state and
        progress), its open questions and what waits for your decision."""
        return await _answered(desk.status(session_id))

    @server.tool(annotations=READS)
    async def wait_session(
        session_id: SESSION,
        ctx: Context,
        seconds: Annotated[
            float, Field(ge=0, le=3600, description="How long to wait at most.")
        ] = 60,
    ) -> Data:
        """Wait until the session ends, asks something new (a question to answer, a call
        or a plan to decide), or SECONDS pass, sending what happens meanwhile as
        progress notifications. Returns the status, with `waited`: ended, asked or
        timeout."""

        async def report(number: int, line: str) -> None:
            await ctx.report_progress(number, None, line)

        return await _answered(desk.wait(session_id, seconds, report))

    @server.tool(annotations=READS)
    async def session_result(session_id: SESSION) -> Data:
        """How the session ended: its status, the main agent's answer (`output`), why
        (`detail`, `advice`), its tokens and cost; or that it still runs."""
        return await _answered(desk.result(session_id))

    @server.tool(annotations=READS)
    async def list_sessions(
        limit: Annotated[int, Field(ge=1, le=200, description="How many, newest first.")] = 20,
    ) -> Data:
        """The sessions kept where this server keeps them, newest first."""
        return await _answered(desk.sessions(limit))


def _steering(server: MCPServer, desk: Desk) -> None:
    """The tools that speak to sessions, decide for them, stop and resume them."""

    @server.tool(annotations=WRITES)
    async def send_message(
        session_id: SESSION,
        text: Annotated[str, Field(description="The message.")],
        task: Annotated[
            str, Field(description="A live task's id to write to (empty: the main agent).")
        ] = "",
    ) -> Data:
        """Say something to the main agent (or to a live task) while the session runs;
        to a session that is not running, the main agent hears it as the session resumes."""
        return await _answered(desk.message(session_id, text, task))

    @server.tool(annotations=WRITES)
    async def answer_question(
        session_id: SESSION,
        question_id: Annotated[str, Field(description="The question's id (its `id`).")],
        text: Annotated[str, Field(description="Your answer.")],
    ) -> Data:
        """Answer an open question of a task (session_status lists them)."""
        return await _answered(desk.answer(session_id, question_id, text))

    @server.tool(annotations=WRITES)
    async def decide(
        session_id: SESSION,
        decision_id: Annotated[
            str, Field(description="What waits (its `id` among the status's `decisions`).")
        ],
        approve: Annotated[bool, Field(description="True to allow the call or the plan.")],
        reason: Annotated[
            str,
            Field(
                description="Why, when you refuse: the model reads it (for a plan: what "
                "the planner should change)."
            ),
        ] = "",
    ) -> Data:
        """Decide on a tool call the permission rules ask about, or on a submitted plan."""
        return await _answered(desk.decide(session_id, decision_id, approve, reason))

    @server.tool(annotations=WRITES)
    async def cancel_session(session_id: SESSION) -> Data:
        """Stop a running session: it is recorded interrupted, and resume_session goes on."""
        return await _answered(desk.cancel(session_id))

    @server.tool(annotations=WRITES)
    async def resume_session(
        session_id: SESSION,
        message: Annotated[
            str,
            Field(
                description="Said to the main agent as it resumes, or the answer to the "
                "oldest open question (empty: none)."
            ),
        ] = "",
    ) -> Data:
        """Go on with a session that stopped (interrupted, failed, blocked, out of
        budget), from where its journal left it."""
        return await _answered(desk.resume(session_id, message))


async def _answered(work: Any) -> Data:
    """What a tool returns; a failure the client can act on as the tool's error, which
    the SDK sends with its text as the tool's error result (a `ToolError`; anything
    else it sends as "Error executing tool", without the text)."""
    try:
        data: Data = await work
    except (ServeError, ConfigError, OSError) as exc:
        raise ToolError(str(exc)) from None
    except OrchestratorError as exc:  # SessionNotFound, SessionLocked, ...
        raise ToolError(f"{type(exc).__name__}: {exc}") from None
    return data


class _Token:
    """The SDK's `TokenVerifier` for one token."""

    def __init__(self, token: str) -> None:
        self._token = token.encode()

    async def verify_token(self, token: str) -> AccessToken | None:
        if hmac.compare_digest(token.encode(), self._token):
            return AccessToken(token=token, client_id="orchestrator", scopes=[])
        return None


def check_loopback(host: str) -> None:
    """Only a loopback address: the server runs agents with your tools."""
    if host == "localhost":
        return
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ConfigError(
            f"--host {host}: the server listens on a loopback address only (127.0.0.1, "
            "::1, localhost): it runs agents with your tools and your keys"
        )


async def serve_stdio(launcher: Launcher) -> None:
    """Serve on standard input and output until the client closes them; the sessions
    still running are then stopped (interrupted, resumable)."""
    async with trio.open_nursery() as nursery:
        server = make_server(Desk(launcher, nursery))
        await server.run_stdio_async()
        nursery.cancel_scope.cancel()


async def serve_http(
    launcher: Launcher,
    *,
    host: str,
    port: int,
    token: str,
    ready: Callable[[str], None],
) -> None:
    """Serve streamable HTTP at http://HOST:PORT/mcp until cancelled; `ready` is told
    the address once it listens."""
    from hypercorn.config import Config as HyperConfig
    from hypercorn.trio import serve

    check_loopback(host)
    async with trio.open_nursery() as nursery:
        server = make_server(Desk(launcher, nursery), token=token)
        config = HyperConfig()
        config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
        config.accesslog = None
        app = server.streamable_http_app(host=host)
        # (Starlette's ASGI callable, which hypercorn's own types do not spell)
        binds = await nursery.start(partial(serve, cast(Any, app), config, mode="asgi"))
        ready(f"{binds[0]}/mcp")
