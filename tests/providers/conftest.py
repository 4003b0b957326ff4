from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
import trio
from provider_server import LoopbackServer, Sleeps
from sdk_types import check_anthropic_request, check_openai_request, check_responses_request

from orchestrator.models.http import make_client


@pytest.fixture
async def server(nursery: trio.Nursery) -> AsyncIterator[LoopbackServer]:
    srv = LoopbackServer()
    await nursery.start(srv.serve)
    yield srv
    # Every request any test sent must be one the official SDK types accept.
    for request in srv.requests:
        if request.path.endswith("/chat/completions"):
            check_openai_request(request.json())
        elif request.path.endswith("/responses"):
            check_responses_request(request.json())
        elif request.path.endswith("/v1/messages"):
            check_anthropic_request(request.json())


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with make_client(trust_env=False) as c:
        yield c


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()
