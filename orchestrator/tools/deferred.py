"""Tool definitions on demand (docs/mcp.md, "Definitions on demand"): past a budget, an
agent is not sent the full definitions of its deferrable tools (an MCP server's: their
`deferrable` flag) with every request. It is offered `search_tools` instead, whose
description names each of those tools with a one-line summary; a call loads the best
matches, whose full definitions join the tools its requests offer from the next one on,
after the tools it had, in the order loaded. The load is journaled (`mcp_tools_loaded`,
state/mcp.py), so a resumed agent sends the requests it sent before.

The budget: an agent's deferrable tools are deferred when there are more than
`MAX_UPFRONT` of them, or when their definitions would take more than `WINDOW_SHARE` of
the usable window of its role's model.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from typing import Final

import orjson
from pydantic import BaseModel, Field

from orchestrator.loop.compaction import CHARS_PER_TOKEN
from orchestrator.models.base import ToolSpec
from orchestrator.state.mcp import McpToolsLoaded
from orchestrator.tools.base import AnyTool, Tool, ToolContext, ToolOutput, ToolRegistry

MAX_UPFRONT: Final = 40
"""Deferrable tools an agent is sent in full, at most; past that they load on demand."""
WINDOW_SHARE: Final = 0.05
"""Of the usable window, what deferrable tools' definitions may take before they load on
demand."""
LOAD_AT_MOST: Final = 5
"""Tools one `search_tools` call loads, the best matches first."""
SUMMARY_CHARS: Final = 100


def tokens_of(tool: AnyTool) -> int:
    """The tokens a tool's definition costs a request, estimated from its JSON."""
    spec = tool.spec()
    size = len(orjson.dumps([spec.name, spec.description, spec.parameters]))
    return round(size / CHARS_PER_TOKEN)


def summary(text: str) -> str:
    """The first line of a description, cut to `SUMMARY_CHARS`."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= SUMMARY_CHARS else line[: SUMMARY_CHARS - 1] + "…"


def over_budget(tools: Sequence[AnyTool], usable: int) -> bool:
    """Whether an agent offered `tools` (its deferrable tools) gets them on demand: more than
    `MAX_UPFRONT`, or definitions over `WINDOW_SHARE` of `usable` tokens (0: the window
    is not known)."""
    if len(tools) > MAX_UPFRONT:
        return True
    # (A window not known, 0, leaves the count alone to decide.)
    return usable > 0 and sum(map(tokens_of, tools)) > WINDOW_SHARE * usable


class SearchArgs(BaseModel):
    query: str = Field(
        description="words of what you need done, or tool names (as listed), space-separated"
    )


class SearchTools(Tool[SearchArgs]):
    """Loads the full definitions of the deferred tools that best match a query."""

    name = "search_tools"
    args_model = SearchArgs
    read_only = True
    idempotent = True
    approval = False
    journaled = True  # all it changes is the session, by its record

    def __init__(self, deferred: Sequence[AnyTool], loaded: Callable[[str], Sequence[str]]):
        self._deferred = tuple(deferred)
        self._loaded = loaded  # an agent's loaded tools, from the session's fold
        listing = "\n".join(f"- {t.name}: {summary(t.description)}" for t in self._deferred)
        self.description = (
            "Load tools of MCP servers: their full definitions are not sent until loaded. "
            "Give words of what you need, or the names of the tools; the best matches, up to "
            f"{LOAD_AT_MOST}, join your tools from your next step on, and stay. "
            f"The tools:\n{listing}"
        )

    def _matches(self, query: str) -> list[AnyTool]:
        """The tools `query` names, if it names any; else those with the most of its
        words (whole words of the name, its server's and the description), in the
        listing's order."""
        given = query.lower().split()
        named = [t for t in self._deferred if t.name.lower() in given]
        if named:
            return named[:LOAD_AT_MOST]
        words = set(_words(query))
        scored: list[tuple[int, int, AnyTool]] = []
        for index, tool in enumerate(self._deferred):
            score = len(words & set(_words(f"{tool.name} {tool.description}")))
            if score:
                scored.append((-score, index, tool))
        return [tool for _, _, tool in sorted(scored)][:LOAD_AT_MOST]

    async def run(self, args: SearchArgs, ctx: ToolContext) -> ToolOutput:
        found = self._matches(args.query)
        if not found:
            return ToolOutput(
                f"No tool matches {args.query!r}: try other words, or a name from the list "
                "in this tool's description."
            )
        had = set(self._loaded(ctx.agent))
        new = tuple(t.name for t in found if t.name not in had)
        if new and ctx.events is not None:
            await ctx.events.emit(McpToolsLoaded(agent=ctx.agent, tools=new))
        lines = [f"- {t.name}: {summary(t.description)}" for t in found]
        return ToolOutput("Loaded (you may call them from your next step on):\n" + "\n".join(lines))


def _words(text: str) -> list[str]:
    return [word for word in re.split(r"[^a-z0-9]+", text.lower()) if word]


class OnDemand(ToolRegistry):
    """One agent's tools (`base`) with its deferrable tools `deferred`: offered are the others,
    then `search_tools`, then those it loaded (`loaded()`, the session's fold), in the
    order it loaded them. Any of its tools may be called by name."""

    def __init__(
        self,
        base: ToolRegistry,
        deferred: Sequence[AnyTool],
        search: SearchTools,
        loaded: Callable[[], Sequence[str]],
    ) -> None:
        super().__init__([search])
        self._base = base
        self._search = search
        self._deferred = {tool.name for tool in deferred}
        self._loaded = loaded
        self._made: tuple[tuple[ToolSpec, ...], int] | None = None  # made from, loaded
        self._specs_made: tuple[ToolSpec, ...] = ()

    def specs(self) -> tuple[ToolSpec, ...]:
        base = self._base.specs()  # (the same tuple until the base registry changes)
        loaded = self._loaded()  # (loads only add: their count says what changed)
        made = self._made
        if made is None or made[0] is not base or made[1] != len(loaded):
            upfront = [spec for spec in base if spec.name not in self._deferred]
            extra = [self._base.get(name) for name in loaded if name in self._deferred]
            more = [tool.spec() for tool in extra if tool is not None]
            self._specs_made = (*upfront, self._search.spec(), *more)
            self._made = (base, len(loaded))
        return self._specs_made

    def get(self, name: str) -> AnyTool | None:
        return self._base.get(name) or super().get(name)

    def names(self) -> list[str]:
        return [spec.name for spec in self.specs()]

    def tools(self) -> list[AnyTool]:
        return [*self._base.tools(), self._search]

    def __contains__(self, name: object) -> bool:
        return name in self._base or super().__contains__(name)

    def __len__(self) -> int:
        return len(self._base) + 1

    def __iter__(self) -> Iterator[AnyTool]:
        return iter(self.tools())


def on_demand(
    tools: ToolRegistry, usable: int, loaded: Callable[[str], Sequence[str]], agent: str
) -> ToolRegistry:
    """`agent`'s tools, its deferrable tools on demand when they are over the budget (of
    `usable` tokens); `loaded`: an agent's loaded tools, from the session's fold."""
    deferred = [tool for tool in tools if tool.deferrable]
    if not over_budget(deferred, usable) or SearchTools.name in tools:
        return tools
    search = SearchTools(deferred, loaded)
    return OnDemand(tools, deferred, search, lambda: loaded(agent))
