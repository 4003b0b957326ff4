"""What a person sees when a provider misbehaves (issue 41, items 1 and 3), through real
runs (`orc.run`) over httpx's MockTransport. An agent whose model call waits on a rate
limit is shown waiting, and for how long: the adapter says the wait (`Waiting`), the turn
tells the sink (`ModelWaiting`, not journaled), the transcript prints it and the live
view shows it as the agent's activity until its reply (in virtual time: a 429 asking
30 s is waited in no time). A reply cut after some text is asked for again, said
(`ReplyCut`), and only the whole reply is journaled."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx
import pytest
import trio

import orchestrator as orc
from orchestrator.cli.render import TranscriptSink
from orchestrator.messages import AssistantMessage
from orchestrator.models.http import HttpOptions
from orchestrator.models.limits import Backoff
from orchestrator.models.openai import OpenAIChatModel, OpenAIEndpoint
from orchestrator.view import ViewModel
from tests.providers.sdk_types import OPENAI_DONE, openai_chunk, openai_usage

Handler = Callable[[httpx.Request], Awaitable[httpx.Response]]


class Watched:
    """What a person sees of a run: the live view's activity and model of the main agent
    after each event, and the transcript printed."""

    def __init__(self) -> None:
        self.view = ViewModel(clock=trio.current_time)
        self.activities: list[str] = []
        self.models: list[str] = []
        self.printed = io.StringIO()
        self.transcript = TranscriptSink(self.printed, color=False)

    async def seen(self, event: orc.Event) -> None:
        self.view.apply(event)
        main = self.view.agents.get("main")
        if main is not None:
            self.activities.append(main.activity)
            self.models.append(main.model)
        await self.transcript.emit(event)


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
    watched = Watched()
    seen, shown, printed = watched.seen, watched.activities, watched.printed
    start = trio.current_time()
    result = await orc.run("hi", model=model, in_memory=True, on_event=seen)
    assert (result.status, result.output) == ("completed", "ok")
    assert trio.current_time() - start >= 30  # the wait was waited
    assert "waiting 30 s: openai is rate-limited: trying again" in shown
    assert not shown[-1].startswith("waiting")  # the reply came: no longer waiting
    assert "! main's model call waits 30 s: openai is rate-limited: trying again" in (
        printed.getvalue()
    )


class CutAfter(httpx.AsyncByteStream):
    """Sends `first`, then the connection drops, as a peer that closes mid-body."""

    def __init__(self, first: bytes) -> None:
        self.first = first

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.first
        raise httpx.RemoteProtocolError("peer closed connection without sending complete body")


def cut_then(times: int) -> httpx.AsyncClient:
    """A provider whose first `times` replies are cut after some text, then whole."""
    sent = 0

    async def handler(request: httpx.Request) -> httpx.Response:
        nonlocal sent
        sent += 1
        headers = {"content-type": "text/event-stream"}
        if sent <= times:
            cut = CutAfter(openai_chunk({"content": f"partial {sent}"}))
            return httpx.Response(200, headers=headers, stream=cut)
        body = openai_chunk({"content": "whole"}, finish="stop") + OPENAI_DONE
        return httpx.Response(200, headers=headers, content=body)

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


async def test_a_reply_cut_after_text_is_asked_again_and_only_the_whole_one_kept(
    tmp_path: Path,
) -> None:
    endpoint = OpenAIEndpoint(provider="openai", model="m", base_url="http://test/v1")
    model = OpenAIChatModel(endpoint, HttpOptions(client=cut_then(2)))
    printed = io.StringIO()
    result = await orc.run(
        "hi",
        model=model,
        sessions_dir=tmp_path,
        on_event=TranscriptSink(printed, color=False),
    )
    assert (result.status, result.output) == ("completed", "whole")
    shown = printed.getvalue()
    assert "partial 1\n! main's reply was cut (connection failed: peer closed" in shown
    assert shown.count("asking for it again") == 2
    assert result.session_dir is not None
    state = orc.load_state(result.session_dir, warn=pytest.fail)
    replies = [m.text for m in state.agents["main"].messages if isinstance(m, AssistantMessage)]
    assert replies == ["whole"]  # what arrived of the cut ones is not kept


async def test_a_third_cut_ends_the_run_with_the_error(tmp_path: Path) -> None:
    endpoint = OpenAIEndpoint(provider="openai", model="m", base_url="http://test/v1")
    model = OpenAIChatModel(endpoint, HttpOptions(client=cut_then(3)))
    result = await orc.run("hi", model=model, sessions_dir=tmp_path)
    assert result.status == "failed"
    assert "peer closed connection" in result.detail


async def test_a_chain_that_moves_shows_the_model_answering_and_its_cost(tmp_path: Path) -> None:
    async def out_of_credit(request: httpx.Request) -> httpx.Response:
        error = {"type": "insufficient_quota", "code": "insufficient_quota", "message": "quota"}
        return httpx.Response(429, json={"error": error})

    async def answers(request: httpx.Request) -> httpx.Response:
        body = openai_chunk({"content": "ok"}, finish="stop") + openai_usage(10, 2) + OPENAI_DONE
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    def model(name: str, handler: Handler) -> OpenAIChatModel:
        client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
        endpoint = OpenAIEndpoint(provider="openai", model=name, base_url="http://test/v1")
        return OpenAIChatModel(endpoint, HttpOptions(client=client))

    chain = orc.Fallback([model("first", out_of_credit), model("second", answers)])
    watched = Watched()
    seen, models, printed = watched.seen, watched.models, watched.printed
    result = await orc.run("hi", model=chain, sessions_dir=tmp_path, on_event=seen)

    assert (result.status, result.output) == ("completed", "ok")
    assert models[-1] == "openai:second"
    assert "! openai:second answers instead of openai:first: HTTP 429: quota" in printed.getvalue()
    assert result.session_dir is not None
    state = orc.load_state(result.session_dir, warn=pytest.fail)
    assert set(state.usage_by_model) == {"openai:second"}  # its tokens are its own
    assert state.fallbacks.chains["openai:first,openai:second"].model == "openai:second"
