"""The cost of token usage: a model's price (dollars per million tokens, from the
config's `[prices]`, else the table of known models in `known`) and what a call
cost. The sums per agent, per model and for the session (and per task subtree) are
`session.ledger.usage_ledger`'s, for `sessions show`; calls of a model without a price
are counted there as unpriced rather than guessed.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, Field

from orchestrator.messages import Usage
from orchestrator.prices.known import known_figures

PER = 1_000_000


class Price(BaseModel, frozen=True, extra="forbid"):
    """Dollars per million tokens. Cache prices default to the input price."""

    # (At most a million dollars per million tokens: a bound that keeps `inf` out.)
    input: float = Field(ge=0, le=1_000_000)
    output: float = Field(ge=0, le=1_000_000)
    cache_read: float | None = Field(default=None, ge=0, le=1_000_000)
    cache_write: float | None = Field(default=None, ge=0, le=1_000_000)

    def cost(self, usage: Usage) -> float:
        cache_read = self.input if self.cache_read is None else self.cache_read
        cache_write = self.input if self.cache_write is None else self.cache_write
        return (
            usage.input_tokens * self.input
            + usage.output_tokens * self.output
            + usage.cache_read_tokens * cache_read
            + usage.cache_write_tokens * cache_write
        ) / PER


def find_price(prices: Mapping[str, Price], model: str) -> Price | None:
    """The price of `model` ("openai:gpt-4o"): by its full name in `prices`, else by the
    name after the provider ("gpt-4o"), so one entry can serve several providers of a
    model; else the known models' table (`prices.known`), else None."""
    if model in prices:
        return prices[model]
    _, sep, bare = model.partition(":")
    if sep and bare in prices:
        return prices[bare]
    figures = known_figures(model)
    if figures is None:
        return None
    given, output, cache_read, cache_write = figures
    return Price(input=given, output=output, cache_read=cache_read, cache_write=cache_write)


def call_cost(prices: Mapping[str, Price], model: str, usage: Usage) -> float | None:
    price = find_price(prices, model)
    return None if price is None else price.cost(usage)
