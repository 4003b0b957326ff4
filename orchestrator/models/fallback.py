"""A fallback chain: a role's models in order of preference (`anthropic:a,openai:b`), the
next answering a call the one before failed before its reply began.

A chain is on one model at a time, shared by every agent of the roles it serves. A call
goes to that model; when it fails before anything of its reply arrived, after the wire
layer's own retries (models/retrying.py: a 429, a 529, a 5xx and a dropped connection are
retried on the same model first, within its budget), the next model of the chain is
asked the same request (after the last, the ones before the model it was on), and the
chain stays on the one that answered. Any failure moves
on: a quota or billing error, a key the provider refuses, a model it does not know, an
overload that outlasted its retries, a request too long for that model's window (a later
model's may be larger). When every model failed, the call fails with the first model's
error, the others' named in its message; a request too long for all of them fails as too
long, so the turn compacts.

`cooldown` seconds after it last moved, the chain goes back to its first model. Each
move is said by a `ModelChosen` event before the reply (`instead_of` and `why` set), which
the turn journals (`model_switched`, state/fallbacks.py) so a resume goes on with the model
the journal says (`restore`). A reply cut after part of it arrived is not the chain's to
answer: the turn asks the same model again (agent/turn.py).
"""

from __future__ import annotations

import copy
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager

from orchestrator.errors import ContextTooLong, ModelError
from orchestrator.models.base import Model, ModelChosen, ModelEvent, ModelRequest, Waiting

SEPARATOR = ","
"""Between the specs of a chain's models in one spec string (`--model a,b`)."""

COOLDOWN = 600.0
"""Seconds after its last move a chain goes back to its first model (`[agents.ROLE]
cooldown`, `fallback(..., cooldown=)`)."""


def chain_specs(spec: str) -> list[str]:
    """The specs of a chain's models, in order (one for a spec that is not a chain)."""
    return [part.strip() for part in spec.split(SEPARATOR)]


class Fallback:
    """A `Model` made of `models`, tried in order (see the module's doc). `name` is the
    name of the model the chain is on now; `spec` names them all. `clock` gives wall
    time (`time.time`), which the journal records and a resume compares with."""

    def __init__(
        self,
        models: Sequence[Model],
        *,
        cooldown: float = COOLDOWN,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if len(models) < 2:
            raise ValueError("a fallback chain needs at least two models")
        if cooldown < 0:
            raise ValueError(f"a chain's cooldown is seconds, at least 0: got {cooldown}")
        self.models = tuple(models)
        self.cooldown = cooldown
        self._clock = clock
        self._on = 0  # the index of the model the chain is on
        self._moved = 0.0  # the wall time of its last move

    @property
    def name(self) -> str:
        return self.models[self._on].name

    @property
    def spec(self) -> str:
        return SEPARATOR.join(m.name for m in self.models)

    def __repr__(self) -> str:
        return f"Fallback({self.spec!r}, on {self.name!r})"

    def restore(self, model: str, at: float) -> None:
        """Go on with `model` (a name of one of the chain's), moved to at wall time `at`:
        what a resume reads from the journal. A name the chain does not hold (the config
        changed since) leaves it on its first model."""
        names = [m.name for m in self.models]
        if model in names:
            self._on, self._moved = names.index(model), at

    @asynccontextmanager
    async def stream(self, request: ModelRequest) -> AsyncIterator[AsyncIterator[ModelEvent]]:
        events = self._events(request)
        try:
            yield events
        finally:
            await events.aclose()

    async def _events(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
        first = self._back_to_first()
        errors: list[tuple[Model, ModelError]] = []
        start = self._on
        count = len(self.models)
        for index in [(start + step) % count for step in range(count)]:
            model = self.models[index]
            began = False  # whether the reply began (its waits are shown as they come)
            try:
                async with model.stream(request) as events:
                    async for event in events:
                        if not began and not isinstance(event, Waiting):
                            began = True
                            yield self._chose(index, start, first, errors)
                        yield event
            except ModelError as exc:
                if began:
                    raise  # cut after its reply began: the turn asks the same model again
                errors.append((model, exc))
                continue
            if not began:
                yield self._chose(index, start, first, errors)
            return
        raise _all_failed(errors)

    def _back_to_first(self) -> ModelChosen | None:
        """The event of a return to the first model, its cool-down over; else None."""
        if self._on == 0 or self._clock() - self._moved < self.cooldown:
            return None
        left = self.name
        self._on, self._moved = 0, self._clock()
        why = f"back to the first model of the chain, {self.cooldown:.0f} s after it moved"
        return self._event(0, instead_of=left, why=why)

    def _chose(
        self,
        index: int,
        start: int,
        first: ModelChosen | None,
        errors: list[tuple[Model, ModelError]],
    ) -> ModelChosen:
        if index == start:
            return first or self._event(index)
        self._on, self._moved = index, self._clock()
        failed, error = errors[-1]
        return self._event(index, instead_of=failed.name, why=str(error))

    def _event(self, index: int, *, instead_of: str = "", why: str = "") -> ModelChosen:
        at = self._moved if instead_of else 0.0
        name = self.models[index].name
        return ModelChosen(model=name, chain=self.spec, instead_of=instead_of, why=why, at=at)


def _all_failed(errors: list[tuple[Model, ModelError]]) -> ModelError:
    """The error of a call every model of the chain failed: too long if one said so (the
    turn compacts, and asks again), else the first model's; the others' in its words."""
    too_long = [(m, e) for m, e in errors if isinstance(e, ContextTooLong)]
    _, error = (too_long or errors)[0]
    others = "; ".join(f"{m.name}: {e}" for m, e in errors if e is not error)
    if not others:
        return error
    error = copy.copy(error)
    error.message = f"{error.message} (and every other model of the chain failed: {others})"
    error.args = (error.message,)
    return error
