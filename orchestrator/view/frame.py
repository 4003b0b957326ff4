"""Frames of the live view: the model drawn as a tree of agents and tasks (a glyph and
the state of each, what it does, its model, how full its context is, its tokens and cost
with its subtree's, how long it has run), the session's plan and compactions, the last
mail, the latest verdict and the status line.

`rows` is the tree as plain strings (each made one safe line: `text.label`); `lines` lays
them out, each line with the spans a coloured frame styles; `plain_frame` is that text
without markup (for tests and pipes), `terminal_lines` the same coloured with SGR codes
(what the live view writes), `rich_frame` a rich renderable. All take `now`, so a fixed
clock gives the same frame every time, spinner included. rich is imported only for a
line with characters wider than one column, and by `rich_frame`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from orchestrator.session import shown
from orchestrator.session.runs import ran
from orchestrator.text import label
from orchestrator.view.model import ViewModel
from orchestrator.view.parts import SETTLED, AgentView, Status, Totals

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType, RenderResult

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
SPINNER_RATE = 10  # frames of the spinner a second
GLYPHS: dict[Status, str] = {
    "running": "●",
    "thinking": SPINNER[0],
    "needs input": "?",
    "blocked": "■",
    "waiting": "◌",
    "done": "✓",
    "failed": "✗",
    "cancelled": "⊘",
}
STYLES: dict[Status, str] = {
    "running": "cyan",
    "thinking": "cyan",
    "needs input": "bold yellow",
    "blocked": "bold red",
    "waiting": "dim",
    "done": "green",
    "failed": "red",
    "cancelled": "dim red",
}
NAME_WIDTH = 32
MODEL_LONGEST = 120  # a model's name past this is no name (labels cut it)
MODEL_LEAST = 12  # the model column shrinks to fit a narrow terminal, down to this
ACTIVITY_ROOM = 20  # the columns left to the activity before the model column shrinks


@dataclass(frozen=True)
class Row:
    """One agent's line, as strings: `tree` is the guides before it (`├─ `, `│  `)."""

    tree: str
    glyph: str
    status: Status
    name: str  # its id, and its task's description or its kind
    state: str
    model: str
    context: str
    tokens: str
    cost: str
    elapsed: str
    activity: str


def rows(model: ViewModel, now: float, *, still: bool = False) -> list[Row]:
    """The tree, one row per agent, each task under the agent that delegated it; `still`:
    a frame that stays (the last), with no spinner frozen mid-turn."""
    found: list[Row] = []
    runs = model.runs.spans(now)

    def visit(agent: AgentView, guides: str, branch: str) -> None:
        took = ran(runs, agent.started, agent.ended if agent.ended is not None else now)
        found.append(_row(model, agent, guides + branch, now, took, still))
        below = guides + {"├─ ": "│  ", "└─ ": "   "}.get(branch, "")
        for n, child in enumerate(agent.children, 1):
            visit(model.agents[child], below, "└─ " if n == len(agent.children) else "├─ ")

    for root in model.roots():
        visit(root, "", "")
    return found


def _row(
    model: ViewModel, agent: AgentView, tree: str, now: float, took: float, still: bool
) -> Row:
    status = agent.status
    if status == "thinking":
        glyph = GLYPHS["running"] if still else _spinner(now)
    else:
        glyph = GLYPHS[status]
    share = agent.context_share
    subtree = model.subtree(agent.id) if agent.children else None
    what = agent.description or agent.kind
    return Row(
        tree=tree,
        glyph=glyph,
        status=status,
        name=label(f"{agent.id} {what}" if what else agent.id, NAME_WIDTH),
        state=status,
        model=label(agent.model, MODEL_LONGEST),
        context="" if share is None else f"{share:.0%}",
        tokens=_tokens(agent.own, subtree),
        cost=_cost(agent.own, subtree),
        elapsed=shown.duration(took),
        activity=label(agent.activity, 400),
    )


def _tokens(own: Totals, subtree: Totals | None) -> str:
    text = shown.tokens(own.tokens)
    if subtree is not None and subtree.tokens != own.tokens:
        text += f" Σ{shown.tokens(subtree.tokens)}"
    return text


def _cost(own: Totals, subtree: Totals | None) -> str:
    def one(totals: Totals) -> str:
        return shown.cost(totals.priced, lower_bound=0 < totals.unpriced < totals.calls)

    if subtree is not None and subtree.priced is not None and subtree.calls != own.calls:
        return f"{one(own)} Σ{one(subtree)}"
    return one(own) if own.calls else ""


def _spinner(now: float) -> str:
    return SPINNER[int(now * SPINNER_RATE) % len(SPINNER)]


def notes(model: ViewModel) -> list[str]:
    """The lines above the tree: the plan's state and the compactions under way."""
    found = [f"plan: {label(model.plan)}"] if model.plan and model.ended is None else []
    found += [
        f"⧉ compacting {label(agent, 40)}: {what}" for agent, what in model.compacting.items()
    ]
    return found


def footer(model: ViewModel) -> list[str]:
    """The lines below the tree: the last messages and the latest verdict."""
    found = [
        f"✉ {label(m.id, 12)} {m.kind} {label(m.sender, 40)} → {label(m.recipient, 40)}: "
        + label(m.summary, 200)
        for m in model.mail
    ]
    if model.verdicts:
        verdict = model.verdicts[-1]
        why = f": {label(verdict.reasons, 200)}" if verdict.reasons else ""
        found.append(f"◆ {label(verdict.agent, 40)} {verdict.action.replace('_', ' ')}{why}")
    return found


def plain_frame(model: ViewModel, now: float, *, width: int = 100, still: bool = False) -> str:
    """The frame as plain text, `width` columns at most: aligned columns, the activity
    last and cut to fit, then the mail, the latest verdict and the status line."""
    return "".join(text + "\n" for text, _ in lines(model, now, width, still=still))


Span = tuple[int, int, str]  # (start, end, rich style) of a part of a line


def lines(
    model: ViewModel, now: float, width: int, *, still: bool = False
) -> list[tuple[str, list[Span]]]:
    """The frame's lines, `width` columns at most, each with the spans a styled frame
    colours: the one layout of both frames (`still`: see `rows`)."""
    table = rows(model, now, still=still)
    cells = [_cells(r) for r in table]
    widths = [max((len(c[i]) for c in cells), default=0) for i in range(len(_JUSTIFY))]
    _shrink_models(cells, widths, width)
    found: list[tuple[str, list[Span]]] = [
        (_cut(line, width), [(0, width, "bold")]) for line in notes(model)
    ]
    for r, cell in zip(table, cells, strict=True):
        parts, spans, at = [], [], 0
        for i, (c, w) in enumerate(zip(cell, widths, strict=True)):
            if not w:
                continue
            part = c.rjust(w) if _JUSTIFY[i] == "right" else c.ljust(w)
            spans += _styled(r, i, at, len(c))
            parts.append(part)
            at += len(part) + 2
        line = "  ".join(parts)
        room = width - len(line) - 2
        if room > 0:
            activity = _cut(r.activity, room)
            style = "" if r.status in SETTLED else "italic"
            spans.append((len(line) + 2, len(line) + 2 + len(activity), style))
            line = f"{line}  {activity}".rstrip()
        found.append((_cut(line, width), spans))
    found += [(_cut(line, width), [(0, width, "dim")]) for line in footer(model)]
    found.append((_cut(model.status_line(now), width), [(0, width, "bold")]))
    return found


def _shrink_models(cells: list[list[str]], widths: list[int], width: int) -> None:
    """A model's name is shown whole while the row has room for it and some activity;
    past that, the model column gives up what the row lacks, down to `MODEL_LEAST`
    columns: a name too long for it loses its provider first (`openai:gpt-4.1` is
    `gpt-4.1`), then its start (`…claude-sonnet-4`: a name's end tells models apart)."""
    used = sum(w + 2 for w in widths if w)
    over = used + ACTIVITY_ROOM - width
    if over <= 0 or widths[2] <= MODEL_LEAST:
        return
    room = widths[2] = max(widths[2] - over, MODEL_LEAST)
    for cell in cells:
        cell[2] = model_in(cell[2], room)


def model_in(name: str, room: int) -> str:
    """`name` in `room` columns (see `_shrink_models`)."""
    if len(name) <= room:
        return name
    _, colon, bare = name.partition(":")
    name = bare if colon and bare else name
    return name if len(name) <= room else "…" + name[len(name) - room + 1 :]


def _styled(r: Row, cell: int, at: int, size: int) -> list[Span]:
    """The spans of a row's cell of `size` columns that starts at column `at`."""
    style = STYLES[r.status]
    match cell:
        case 0:  # the tree's guides dim, the glyph in the state's colour
            glyph = at + len(r.tree)
            return [(at, glyph, "dim"), (glyph, glyph + len(r.glyph), style)]
        case 1:
            return [(at, at + len(r.state), style)]
        case 2:
            return [(at, at + size, "dim")]
    return []


_JUSTIFY: tuple[Literal["left", "right"], ...] = (
    "left", "left", "left", "right", "right", "right", "right"
)  # fmt: skip


def _cells(r: Row) -> list[str]:
    """A row's cells before its activity, as both frames lay them out."""
    return [f"{r.tree}{r.glyph} {r.name}", r.state, r.model, r.context, r.tokens, r.cost, r.elapsed]


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


SGR = {"bold": "1", "dim": "2", "italic": "3", "red": "31", "green": "32", "yellow": "33",
       "cyan": "36"}  # fmt: skip
"""The SGR parameter of each word of the frames' styles."""


def terminal_lines(
    model: ViewModel, now: float, width: int, *, color: bool = True, still: bool = False
) -> list[str]:
    """The frame's lines for a terminal, each at most `width` columns, coloured with SGR
    codes when `color` (each styled part reset after itself; `still`: see `rows`)."""
    found = []
    for line, spans in lines(model, now, width, still=still):
        if not line.isascii():
            line = _fit(line, width)
        found.append(_coloured(line, spans) if color else line)
    return found


def at_most(frame: list[str], room: int) -> list[str]:
    """A frame's lines in `room` lines (at least 2): the first ones, a line saying how
    many are left out, and the status line."""
    room = max(room, 2)
    if len(frame) <= room:
        return frame
    left_out = len(frame) - room + 1
    return [*frame[: room - 2], f"… {left_out} more lines", frame[-1]]


def _fit(line: str, width: int) -> str:
    """`line` cut to `width` columns (a wide character takes two)."""
    from rich.cells import cell_len, set_cell_size

    return line if cell_len(line) <= width else set_cell_size(line, width)


def _coloured(line: str, spans: list[Span]) -> str:
    parts, at = [], 0
    for start, end, style in spans:
        end = min(end, len(line))
        if not style or start < at or start >= end:
            continue
        codes = ";".join(SGR[word] for word in style.split())
        parts += [line[at:start], f"\x1b[{codes}m", line[start:end], "\x1b[0m"]
        at = end
    parts.append(line[at:])
    return "".join(parts)


def rich_frame(model: ViewModel, now: float) -> RenderableType:
    """The frame as a rich renderable: `lines` at the console's width, coloured. (Laid
    out here rather than by a rich table, whose measuring cost 3 ms a frame of a tree of
    ten against 0.4 ms.)"""
    return _RichFrame(model, now)


class _RichFrame:
    def __init__(self, model: ViewModel, now: float) -> None:
        self._model = model
        self._now = now

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.text import Text

        for line, spans in lines(self._model, self._now, options.max_width):
            text = Text(line, no_wrap=True, end="\n")
            for start, end, style in spans:
                if style:
                    text.stylize(style, start, min(end, len(line)))
            yield text
