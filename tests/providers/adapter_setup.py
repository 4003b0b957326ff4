"""What the adapter tests share: the HTTP options they give a model (short timeouts, the
waits recorded in `Sleeps` rather than slept, no jitter), a request offering one tool,
and the events a model streams for a request."""

from __future__ import annotations

import httpx
from provider_server import Sleeps

from orchestrator import UserMessage
from orchestrator.models import Model, ModelEvent, ModelRequest, ToolSpec
from orchestrator.models.http import HttpOptions, RetryPolicy, Timeouts

READ_FILE = ToolSpec(
    name="read_file",
    description="Read a file",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}},
)
REQUEST = ModelRequest(messages=(UserMessage(content="hi"),), tools=(READ_FILE,))
RETRY = RetryPolicy(max_retries=3)


def http_options(
    client: httpx.AsyncClient,
    sleeps: Sleeps,
    retry: RetryPolicy = RETRY,
    timeouts: Timeouts | None = None,
) -> HttpOptions:
    return HttpOptions(
        client=client,
        timeouts=timeouts or Timeouts(first_byte=10, idle=10),
        retry=retry,
        sleep=sleeps,
        rand=lambda: 1.0,  # no jitter: a delay is exactly its base * 2**n
    )


async def events_of(model: Model, request: ModelRequest = REQUEST) -> list[ModelEvent]:
    async with model.stream(request) as stream:
        return [event async for event in stream]
