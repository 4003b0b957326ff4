"""An agent whose model call waits on a rate limit is shown waiting, and for how long
(issue 41, item 3): the adapter says the wait (`Waiting`), the turn tells it to the
session's sink (`ModelWaiting`, not journaled), the transcript prints it and the live
view shows it as the agent's activity until its reply. A real run (`orc.run`, in memory)
over httpx's MockTransport, in virtual time: a 429 asking 30 s is waited in no time."""

from __future__ import annotations

import io

import httpx
import trio

import orchestrator as orc
from orchestrator.cli.render import TranscriptSink
from orchestrator.models.http import Backoff, HttpOptions
from orchestrator.models.openai import OpenAIChatModel, OpenAIEndpoint
from orchestrator.view import ViewModel
from tests.providers.sdk_types import OPENAI_DONE, openai_chunk


async def test_a_rate_limited_call_is_shown_waiting_until_its_reply(
    autojump_clock: trio.abc.Clock,
) -> None:
    answered = False

    async def handler(request: httpx.Request) -> httpx.Response:
        nonlocal answered
        if not answered:
            answered = True
            return httpx.Response(429, headers={"retry-after": "30"}, json={"error": {}})
        body = openai_chunk({"content": "ok"}, finish="stop") + OPENAI_DONE
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    endpoint = OpenAIEndpoint(provider="openai", model="m", base_url="http://test/v1")
    model = OpenAIChatModel(endpoint, HttpOptions(client=client, backoff=Backoff()))
    view = ViewModel(clock=trio.current_time)
    shown: list[str] = []
    printed = io.StringIO()
    transcript = TranscriptSink(printed, color=False)

    async def seen(event: orc.Event) -> None:
        view.apply(event)
        main = view.agents.get("main")
        if main is not None:
            shown.append(main.activity)
        await transcript.emit(event)

    start = trio.current_time()
    result = await orc.run("hi", model=model, in_memory=True, on_event=seen)
    assert (result.status, result.output) == ("completed", "ok")
    assert trio.current_time() - start >= 30  # the wait was waited
    assert "waiting 30 s: openai is rate-limited: trying again" in shown
    assert not shown[-1].startswith("waiting")  # the reply came: no longer waiting
    assert "! main's model call waits 30 s: openai is rate-limited: trying again" in (
        printed.getvalue()
    )
