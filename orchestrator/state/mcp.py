"""What a session keeps of its MCP servers' tools (docs/mcp.md): the definition of each
tool as the session pinned it, and the tools each agent loaded on demand.

Two records:

- `mcp_pinned`: the definitions (name, description, schemas, flags) of tools of `server`
  and their digests, journaled the first time the session offers them to a model, and
  again when a person approved a changed one (`approved`). The fold keeps each tool's
  latest: what a resume offers the model, and what a call is checked against.
  (Format 15) `resources`: whether the server's resources were readable through its
  `read_resource` tool then (None: not said, an older session's); a resumed session
  starts a server it pinned, whose resources it did not read so, at the first call of
  one of its tools (mcp/source.py).
- `mcp_tools_loaded`: `agent` loaded the full definitions of `tools` (names as the model
  sees them, `SERVER__TOOL`) with `search_tools`; from then on they are among the tools
  its requests offer, in the order loaded, on resume too.
- `mcp_elicited` (format 15): `server` asked the person a question (elicitation) while
  `agent`'s call `ref` of `tool` ran; `waiting`: nobody could answer it then, and the
  session stops `blocked` on it until a person answers (a resume's message).
- `mcp_elicit_answered` (format 15): the answer to the question of digest `question`
  (`accept` with `content`, `decline` or `cancel`), given to the call `ref` of `agent`
  (`ref` "": given as a run started, for the next call that asks it). A call that asks a
  question already answered for it (run again after a crash), or answered for the next
  call, is answered from here without asking again.
- `mcp_sampled` (format 15): `server` asked for a completion during `agent`'s call and
  `model` answered it; its `usage` counts to the agent and the session.
"""

from collections.abc import Callable, Mapping
from typing import Any

import msgspec
import orjson

from orchestrator.eventbase import EventBase
from orchestrator.messages import Usage


class PinnedTool(msgspec.Struct, frozen=True, kw_only=True):
    """One tool's definition as the session pinned it: `name` is the server's (`search`),
    `digest` the `sha256:` of the rest (mcp/pins.py)."""

    name: str
    digest: str
    description: str = ""
    input_schema: dict[str, Any] = msgspec.field(default_factory=dict)
    output_schema: dict[str, Any] | None = None
    read_only: bool = False
    idempotent: bool = False
    destructive: bool = False


class McpPinned(EventBase, frozen=True, tag="mcp_pinned"):
    """Record: these definitions of `server`'s tools are pinned for the session; with
    `approved`, a person approved them after they changed."""

    server: str
    tools: tuple[PinnedTool, ...]
    approved: bool = False
    resources: bool | None = None  # (format 15) its resources read through a tool then


class McpToolsLoaded(EventBase, frozen=True, tag="mcp_tools_loaded"):
    """Record: `agent` loaded the full definitions of `tools` (`SERVER__TOOL`)."""

    tools: tuple[str, ...]


class McpAsked(EventBase, frozen=True):
    """What a server asked the client during a call, and its answer (the three below)."""


class McpElicited(McpAsked, frozen=True, tag="mcp_elicited"):
    """Record: `server` asked the person `message` (its answer's JSON `schema`) during
    `agent`'s call `ref` of `tool`; `question` is the digest of server, message and
    schema. `waiting`: nobody could answer it now (the session stops blocked on it)."""

    server: str
    tool: str
    ref: str
    question: str
    message: str
    schema: dict[str, Any] = msgspec.field(default_factory=dict)
    waiting: bool = False


class McpElicitAnswered(McpAsked, frozen=True, tag="mcp_elicit_answered"):
    """Record: the answer to the question `question` (a digest), for `agent`'s call `ref`
    ("": for the next call that asks it); `by`: "person", "host" or "journal" (an answer
    given before, claimed by this call)."""

    question: str
    action: str  # accept, decline, cancel
    content: dict[str, Any] | None = None
    ref: str = ""
    by: str = "person"


class McpSampled(McpAsked, frozen=True, tag="mcp_sampled"):
    """Record: `server` asked for a completion during `agent`'s call, which `model`
    answered using `usage`."""

    server: str
    model: str
    usage: Usage


McpRecords = McpPinned | McpToolsLoaded | McpElicited | McpElicitAnswered | McpSampled


class Answered(msgspec.Struct, frozen=True):
    action: str
    content: dict[str, Any] | None = None


class McpState(msgspec.Struct):
    """The pinned definitions by server and tool, each agent's loaded tools in the order
    it loaded them, the questions servers asked that wait for a person (by digest), the
    answers given (by agent, call ref and question digest; ("", "", digest) for the next
    call), how many completions each agent's servers asked for, and whether each
    server's resources were read through a tool when it was last pinned."""

    pins: dict[str, dict[str, PinnedTool]] = msgspec.field(default_factory=dict)
    loaded: dict[str, list[str]] = msgspec.field(default_factory=dict)
    waiting: dict[str, McpElicited] = msgspec.field(default_factory=dict)
    answers: dict[str, Answered] = msgspec.field(default_factory=dict)
    sampled: dict[str, int] = msgspec.field(default_factory=dict)
    resources: dict[str, bool] = msgspec.field(default_factory=dict)  # (format 15) by server

    def answer(self, agent: str, ref: str, question: str) -> Answered | None:
        """The answer given to `agent`'s call `ref` for `question`, if any."""
        return self.answers.get(answer_key(agent, ref, question))


def answer_key(agent: str, ref: str, question: str) -> str:
    """Where an answer is kept: by call (`main 3.0 sha256:...`), or for the next call
    that asks (`  sha256:...`)."""
    return f"{agent} {ref} {question}" if ref else f"  {question}"


def _pinned(mcp: McpState, seq: int, record: McpPinned) -> None:
    tools = mcp.pins.setdefault(record.server, {})
    for tool in record.tools:
        tools[tool.name] = tool
    if record.resources is not None:
        mcp.resources[record.server] = record.resources


def _loaded(mcp: McpState, seq: int, record: McpToolsLoaded) -> None:
    loaded = mcp.loaded.setdefault(record.agent, [])
    loaded.extend(name for name in record.tools if name not in loaded)


def form_content(schema: Mapping[str, Any], reply: Mapping[str, Any] | str) -> dict[str, Any]:
    """A person's answer to a server's form (`schema`: an object of flat properties) as
    its content: a mapping as it is, or text (a one-field form's value, typed as the
    field is; else a JSON object); a `ValueError` saying what does not fit."""
    properties = schema.get("properties")
    fields: dict[str, Any] = dict(properties) if isinstance(properties, dict) else {}
    if isinstance(reply, str):
        text = reply.strip()
        if len(fields) == 1 and not text.startswith("{"):
            ((name, spec),) = fields.items()
            return {name: _typed(name, spec, text)}
        try:
            reply = orjson.loads(text)
        except orjson.JSONDecodeError:
            raise ValueError(f"answer with a JSON object of {', '.join(fields)}") from None
        if not isinstance(reply, dict):
            raise ValueError("answer with a JSON object")
    content = {str(k): v for k, v in reply.items()}
    unknown = sorted(set(content) - set(fields)) if fields else []
    if unknown:
        raise ValueError(f"no such field: {', '.join(unknown)} (fields: {', '.join(fields)})")
    missing = [name for name in schema.get("required") or () if name not in content]
    if missing:
        raise ValueError(f"missing: {', '.join(missing)}")
    return content


def _typed(name: str, spec: Any, text: str) -> Any:
    kind = spec.get("type") if isinstance(spec, dict) else None
    try:
        if kind == "integer":
            return int(text)
        if kind == "number":
            return float(text)
    except ValueError:
        raise ValueError(f"{name} takes a {kind}, not {text!r}") from None
    if kind == "boolean":
        if text.lower() in ("y", "yes", "true"):
            return True
        if text.lower() in ("n", "no", "false"):
            return False
        raise ValueError(f"{name} takes yes or no, not {text!r}")
    return text


def waiting_answer(mcp: McpState, text: str) -> McpElicitAnswered | None:
    """A person's message as the answer to the oldest question a server asked that
    nobody could answer, for the next call that asks it; None when none waits, or the
    message does not fit its form (then it is only said to the main agent)."""
    first = next(iter(mcp.waiting.values()), None)
    if first is None:
        return None
    try:
        content = form_content(first.schema, text)
    except ValueError:
        return None
    return McpElicitAnswered(
        agent="main", question=first.question, action="accept", content=content, by="person"
    )


def _elicited(mcp: McpState, seq: int, record: McpElicited) -> None:
    if record.waiting:
        mcp.waiting[record.question] = record


def _answered(mcp: McpState, seq: int, record: McpElicitAnswered) -> None:
    mcp.waiting.pop(record.question, None)
    answered = Answered(record.action, record.content)
    mcp.answers[answer_key(record.agent, record.ref, record.question)] = answered
    if record.by == "journal":  # claimed by this call: no longer for the next one
        mcp.answers.pop(answer_key("", "", record.question), None)


def _sampled(mcp: McpState, seq: int, record: McpSampled) -> None:
    mcp.sampled[record.agent] = mcp.sampled.get(record.agent, 0) + 1


MCP_FOLDS: dict[type, Callable[[McpState, int, Any], None]] = {
    McpPinned: _pinned,
    McpToolsLoaded: _loaded,
    McpElicited: _elicited,
    McpElicitAnswered: _answered,
    McpSampled: _sampled,
}
