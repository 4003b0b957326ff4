"""A role's model under the session's model-call slots (`SlottedModel`): each call
takes one of them before its stream opens, and gives it back when the stream closes.
`turns.ModelCalls` makes one per role, for the turns' calls and the compactor's
summaries alike."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from types import TracebackType

import trio

from orchestrator.models.base import Model, ModelEvent, ModelRequest


class SlottedModel:
    """A model whose calls take one of the session's model-call slots."""

    def __init__(self, model: Model, slots: trio.Semaphore) -> None:
        self.model = model
        self._slots = slots

    @property
    def name(self) -> str:
        return self.model.name

    def stream(self, request: ModelRequest) -> _Slotted:
        return _Slotted(self._slots, self.model, request)


class _Slotted:
    """A model's stream, opened once a model-call slot is taken, the slot given back
    when it closes. (A class, not a generator's context manager: one opens every
    round.)"""

    __slots__ = ("_model", "_request", "_slots", "_stream")

    def __init__(self, slots: trio.Semaphore, model: Model, request: ModelRequest) -> None:
        self._slots = slots
        self._model = model
        self._request = request
        self._stream: AbstractAsyncContextManager[AsyncIterator[ModelEvent]] | None = None

    async def __aenter__(self) -> AsyncIterator[ModelEvent]:
        await self._slots.acquire()
        try:
            self._stream = self._model.stream(self._request)
            return await self._stream.__aenter__()
        except BaseException:
            self._slots.release()
            raise

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        assert self._stream is not None  # (entered)
        try:
            return await self._stream.__aexit__(kind, error, traceback)
        finally:
            self._slots.release()
