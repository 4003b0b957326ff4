"""Token usage and cost: per call, per agent, per model and per session.

`UsageLedger` is a frozen value: `record` returns a new ledger, so folding a journal's
model replies rebuilds it after a resume, and a session can snapshot it as JSON. Cost
comes from an optional price table (dollars per million tokens, from the config); calls
of a model without a price are counted in `unpriced_calls` rather than guessed.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, Field

from orchestrator.messages import Usage

PER = 1_000_000


class Price(BaseModel, frozen=True, extra="forbid"):
    """Dollars per million tokens. Cache prices default to the input price."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_read: float | None = Field(default=None, ge=0)
    cache_write: float | None = Field(default=None, ge=0)

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
    """The price of `model` ("openai:gpt-4o"): by its full name, else by the name after
    the provider ("gpt-4o"), so one entry can serve several providers of a model."""
    if model in prices:
        return prices[model]
    _, sep, bare = model.partition(":")
    return prices.get(bare) if sep else None


def call_cost(prices: Mapping[str, Price], model: str, usage: Usage) -> float | None:
    price = find_price(prices, model)
    return None if price is None else price.cost(usage)


class UsageTotals(BaseModel, frozen=True):
    calls: int = 0
    usage: Usage = Usage()
    cost_usd: float = 0.0
    unpriced_calls: int = 0

    def add(self, usage: Usage, cost: float | None) -> UsageTotals:
        return UsageTotals(
            calls=self.calls + 1,
            usage=self.usage + usage,
            cost_usd=self.cost_usd + (cost or 0.0),
            unpriced_calls=self.unpriced_calls + (cost is None),
        )

    @property
    def cache_share(self) -> float | None:
        """The share of prompt tokens read from the provider's cache (None without any
        prompt tokens): cache reads over all input, read, written or plain."""
        u = self.usage
        prompt = u.input_tokens + u.cache_read_tokens + u.cache_write_tokens
        return u.cache_read_tokens / prompt if prompt else None

    @property
    def cost_known(self) -> bool:
        """False when some calls had no price, so `cost_usd` is a lower bound."""
        return self.unpriced_calls == 0


class UsageLedger(BaseModel, frozen=True):
    session: UsageTotals = UsageTotals()
    by_agent: dict[str, UsageTotals] = Field(default_factory=dict)
    by_model: dict[str, UsageTotals] = Field(default_factory=dict)

    def record(
        self,
        *,
        agent: str,
        model: str,
        usage: Usage,
        prices: Mapping[str, Price] | None = None,
    ) -> UsageLedger:
        """This ledger plus one model call of `agent` to `model`."""
        cost = call_cost(prices or {}, model, usage)
        return UsageLedger(
            session=self.session.add(usage, cost),
            by_agent={
                **self.by_agent,
                agent: self.by_agent.get(agent, UsageTotals()).add(usage, cost),
            },
            by_model={
                **self.by_model,
                model: self.by_model.get(model, UsageTotals()).add(usage, cost),
            },
        )
