"""A long scripted session with planted facts, for compaction's retention and repeat-work
figures (`bench_compaction.py`) and the retention test (tests/compaction/test_retention.py).

The session runs through `create_session` / `open_session` / `drive`, with one
`ScriptedModel` whose responder decides from the request it gets and claims a small window,
so the main agent's context is compacted again and again. Before its first compaction the
main agent plants the facts a compaction must not lose:

- the goal (the session's);
- 20 todos in mixed states (completed, in progress, pending, blocked, cancelled, failed),
  some blocked by others (`todo_write`);
- 3 live subagent tasks, each with a progress report: `t1` asks a question and is parked
  until answered (the open question), `t2` proposes a change of direction and works on
  (a message that waits for an answer, never given), `t3` works on;
- a correction from the user, said while the session runs (`Team.say`, the path of
  `resume --message`);
- 5 file edits (`write_file`).

Then it works: `Filler` reads big files until the main agent has compacted enough times;
`Worker` works the open todo items in order, deciding each step from what its request
shows (so a fact the compaction lost shows as work done again). The first request after
each compaction is checked for every planted fact (`missing`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import trio

from orchestrator.loop.anchors import HEADER
from orchestrator.loop.compaction import ContextCompacted
from orchestrator.messages import (
    AssistantMessage,
    Message,
    MessageView,
    SystemMessage,
    ToolResult,
    UserMessage,
)
from orchestrator.models.base import COMPACTOR, ModelRequest
from orchestrator.models.scripted import (
    ScriptedModel,
    ScriptedReply,
    ScriptedWindow,
    default_summary,
)
from orchestrator.session.live import create_session, open_session
from orchestrator.state.events import Event
from orchestrator.state.fold import SessionState
from orchestrator.state.settings import SessionSettings
from orchestrator.team.drive import RunResult, RunSettings, drive
from orchestrator.team.queries import MAIN
from orchestrator.team.runtime import Team
from orchestrator.tools import PermissionPolicy, approve_all, workspace_tools
from tests.scenes import c, reply

GOAL = "Port the billing service to the ledger API v2; keep every public endpoint unchanged."
CORRECTION = (
    "Correction: do not touch migrations/0007_ledger.sql, it is frozen; "
    "put the schema change in a new migrations/0008_ledger_v2.sql instead."
)

# id, content, status, blocked_by, failure
TODOS: tuple[tuple[str, str, str, tuple[str, ...], str], ...] = (
    ("1", "Map the billing entry points", "completed", (), ""),
    ("2", "List the ledger v1 calls", "completed", (), ""),
    ("3", "Read the ledger v2 reference", "completed", (), ""),
    ("4", "Benchmark the v1 client", "cancelled", (), "not needed for the port"),
    ("5", "Load the old test fixtures", "failed", (), "the fixtures need a v1 server"),
    ("6", "Port the invoice client", "in_progress", (), ""),
    ("7", "Port the refund client", "pending", ("6",), ""),
    ("8", "Port the credit notes", "pending", ("6", "7"), ""),
    ("9", "Port the tax lookups", "pending", (), ""),
    ("10", "Port the currency rounding", "pending", ("9",), ""),
    ("11", "Write the v2 client settings", "completed", ("3",), ""),
    ("12", "Port the webhooks", "pending", (), ""),
    ("13", "Port the retry policy", "pending", ("12", "6"), ""),
    ("14", "Port the audit log", "pending", (), ""),
    ("15", "Port the v1 admin screens", "cancelled", (), "out of scope"),
    ("16", "Port the reconciliation job", "pending", (), ""),
    ("17", "Port the monthly statements", "pending", ("16",), ""),
    ("18", "Update the API docs", "pending", (), ""),
    ("19", "Run the contract tests", "pending", (), ""),
    ("20", "Remove the v1 client", "pending", ("18", "19"), ""),
)
OPEN = ("pending", "in_progress")


@dataclass(frozen=True)
class Brief:
    task_id: str
    description: str
    progress: str
    scope: str  # its write scope (live tasks' scopes may not overlap)
    question: str = ""  # ask_decision: parks the task (the open question)
    proposal: str = ""  # request_direction_change: waits for an answer, task works on


TASKS = (
    Brief(
        "t1",
        "Map the v1 invoice schema to v2",
        "12 of 30 invoice tables mapped",
        "schema/**",
        question="Keep the legacy invoice numbers, or renumber them in v2?",
    ),
    Brief(
        "t2",
        "Port the payment webhooks",
        "3 of 8 webhook handlers ported",
        "billing/hooks/**",
        proposal="Drop the deprecated /v1/hooks/legacy endpoint instead of porting it",
    ),
    Brief(
        "t3",
        "Write the v2 contract tests",
        "40 of 95 contract tests written",
        "tests/contract/**",
    ),
)
EDITS = (
    "billing/api.py",
    "billing/ledger_client.py",
    "billing/models.py",
    "billing/settings.py",
    "docs/ledger-v2.md",
)
FACTS = 1 + len(TODOS) + len(TASKS) + 2 + 1 + len(EDITS)
"""The planted facts `missing` checks: the goal, each todo, each task, the open question
and the message that waits for an answer, the correction, each edited file."""
FILLERS = 10  # big files the filler reads in turn
FILLER_CHARS = 3_000
MODULE_CHARS = 1_200
WINDOW = 8_000  # tokens claimed: 7,000 usable, compaction from 5,600 (about 22,400 characters)


def make_workspace(root: Path) -> Path:
    """The files the session reads: fillers, and a module and its test per todo item."""
    root.mkdir(parents=True, exist_ok=True)
    for index in range(FILLERS):
        (root / f"fill/f{index}.txt").parent.mkdir(exist_ok=True)
        line = f"filler {index}: " + "lorem ipsum dolor sit amet " * 2 + "\n"
        (root / f"fill/f{index}.txt").write_text(line * (FILLER_CHARS // len(line)))
    for todo_id, content, *_ in TODOS:
        for path in (source(todo_id), test_of(todo_id)):
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            text = f"# {content}: v1 code to port\n" + f"def step_{todo_id}(x):\n    return x\n" * (
                MODULE_CHARS // 30
            )
            (root / path).write_text(text)
    return root


def source(todo_id: str) -> str:
    return f"src/mod{todo_id}.py"


def test_of(todo_id: str) -> str:
    return f"tests/test_mod{todo_id}.py"


# --- what a request shows --------------------------------------------------------------


def text_of(message: Message) -> str:
    match message:
        case SystemMessage() | UserMessage() | ToolResult():
            return message.content
        case AssistantMessage():
            calls = "".join(f"\n-> {c.name}({c.arguments})" for c in message.tool_calls)
            return message.text + calls
    return ""


def request_text(request: ModelRequest) -> str:
    return "\n\n".join(text_of(m) for m in request.messages)


def anchors_of(request: ModelRequest) -> str:
    """The anchors' text in a request ("" when it carries none)."""
    for message in request.messages:
        if isinstance(message, UserMessage) and message.content.startswith(HEADER):
            return message.content
    return ""


TOOL_MARKS = {
    "pending": ("todo", "blocked by"),
    "in_progress": ("doing",),
    "completed": ("done",),
    "cancelled": ("cancelled",),
    "failed": ("failed",),
}


def todo_status(request: ModelRequest, todo_id: str) -> str | None:
    """The status the request shows for a todo item last (in the anchors, or in a todo
    tool's output), or None when it shows none."""
    anchor = re.compile(rf"^- \[(\w+)\] {re.escape(todo_id)}: ", re.MULTILINE)
    tool = re.compile(rf"^\[{re.escape(todo_id)}\] \[([^\]]+)\]", re.MULTILINE)
    found = None
    for message in request.messages:
        text = text_of(message)
        for match in anchor.finditer(text):
            found = match.group(1)
        for match in tool.finditer(text):
            mark = match.group(1)
            found = next(s for s, marks in TOOL_MARKS.items() if mark.startswith(marks))
    return found


def calls_shown(request: ModelRequest, name: str) -> set[str]:
    """The `path` arguments of the calls of tool `name` a request still shows."""
    paths = set()
    for message in request.messages:
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                if call.name == name:
                    paths.add(str(orjson.loads(call.arguments).get("path", "")))
    return paths


def said_by_user(request: ModelRequest) -> str:
    """What the user messages of a request say (summaries and anchors among them)."""
    return "\n".join(m.content for m in request.messages if isinstance(m, UserMessage))


TOUCHED = ("## Files touched",)
"""The headings of the anchors' list of files touched, and of the summary's section."""


def section(text: str, heading: str) -> str:
    """The text under each `heading` line of `text`, up to the next heading."""
    parts = []
    for chunk in text.split("\n" + heading)[1:]:
        parts.append(chunk.split("\n## ", 1)[0])
    return "\n".join(parts)


# --- the planted facts, checked -----------------------------------------------------------


def missing(request: ModelRequest, state: SessionState) -> list[str]:
    """The planted facts the request does not show: each todo's id and status, each
    task's id, state and latest progress, the open question, the message that waits for
    an answer, the correction (verbatim), each edited file's path, and the goal."""
    text = request_text(request)
    lines = text.splitlines()
    lost = []
    if GOAL not in text:
        lost.append("the goal")
    todos = state.todo_list(MAIN).items
    for todo_id, *_ in TODOS:
        status = todos[todo_id].status
        if todo_status(request, todo_id) != status:
            lost.append(f"todo {todo_id} [{status}]")
    for brief in TASKS:
        task = state.tasks.tasks[brief.task_id]
        if not any(
            brief.task_id in line and task.state in line and task.progress in line for line in lines
        ):
            lost.append(f"task {brief.task_id} ({task.state}; {task.progress})")
        for asked, what in ((brief.question, "open question"), (brief.proposal, "message")):
            if asked and asked not in text:
                lost.append(f"the {what} of {brief.task_id}: {asked}")
    if CORRECTION not in text:
        lost.append("the correction, verbatim")
    lost.extend(f"edited file {path}" for path in EDITS if path not in text)
    return lost


# --- the session ----------------------------------------------------------------------------


@dataclass
class Check:
    """The first request of the main agent after its `compactions`th compaction."""

    compactions: int
    request: ModelRequest
    record: ContextCompacted
    missing: list[str]
    chars: int  # of the whole request
    anchors_chars: int
    tasks: dict[str, str]  # each task's state then


@dataclass
class Scene:
    """One long session: the planting, then `work` (`filler` or `worker`) until the
    main agent has compacted `compactions` times (or the work is done), then the end:
    its tasks cancelled and its list closed."""

    workspace: Path
    work: Callable[[Scene, ModelRequest], ScriptedReply | None]
    compactions: int = 10
    window: int = WINDOW
    team: Team | None = None
    checks: list[Check] = field(default_factory=list)
    records: list[ContextCompacted] = field(default_factory=list)
    calls: list[tuple[int, str, str]] = field(default_factory=list)  # compactions, name, args
    _seen: int = 0
    _ending: int = -1

    @property
    def state(self) -> SessionState:
        assert self.team is not None
        return self.team.state

    async def run(self, root: Path) -> RunResult:
        session_id, _ = create_session(root, goal=GOAL, model="m", workspace=self.workspace)
        model = ScriptedModel(self.respond, window=ScriptedWindow(context=self.window))
        settings = RunSettings(
            model=model,
            tools=workspace_tools(),
            ui=_Records(self.records),
            policy=PermissionPolicy(),
            approve=approve_all,
            session=SessionSettings(max_rounds=2_000, max_auto_continues=2),
            on_team=self._keep,
        )
        async with open_session(root, session_id, warn=_fail) as live:
            return await drive(live, settings)

    def _keep(self, team: Team) -> None:
        self.team = team

    async def respond(self, request: ModelRequest) -> ScriptedReply:
        if request.role == COMPACTOR:
            return ScriptedReply(text=default_summary(request))
        if request.agent != MAIN:
            return await self._subagent(request)
        chosen = await self._main(request)
        compactions = self.state.agents[MAIN].compactions
        self.calls.extend((compactions, c.name, _key(c.arguments)) for c in chosen.tool_calls)
        return chosen

    async def _main(self, request: ModelRequest) -> ScriptedReply:
        compactions = self.state.agents[MAIN].compactions
        if compactions > self._seen:
            self._seen = compactions
            self.checks.append(
                Check(
                    compactions,
                    request,
                    self.records[-1],
                    missing(request, self.state),
                    MessageView.of(request.messages).chars,
                    len(anchors_of(request)),
                    {t.task_id: t.state for t in self.state.tasks.tasks.values()},
                )
            )
        step = request.step
        if step == 0:
            return reply("", c("todo_write", goal=GOAL, todos=[_spec(t) for t in TODOS]))
        if step == 1:
            return reply(
                "",
                *(
                    c(
                        "delegate",
                        description=b.description,
                        prompt=b.description,
                        write_scope=[b.scope],
                    )
                    for b in TASKS
                ),
            )
        if step == 2:
            await self._planted()
            return reply("", *(c("write_file", path=p, content=f"# {p}: ported\n") for p in EDITS))
        if step == 3:
            assert self.team is not None
            await self.team.say(CORRECTION)
            return reply("", c("read_file", path="fill/f0.txt"))
        if self._ending < 0:
            chosen = None if compactions >= self.compactions else self.work(self, request)
            if chosen is not None:
                return chosen
            self._ending = step
        if step == self._ending:  # the end: the tasks cancelled, the list closed
            cancel = [c("cancel_task", task=b.task_id, reason="done") for b in TASKS]
            return reply("", *cancel, c("todo_write", todos=[_spec(t, closed=True) for t in TODOS]))
        return reply("done")

    async def _planted(self) -> None:
        """Wait until every task has reported progress and t1 and t2 have asked."""
        team = self.team
        assert team is not None

        def planted() -> bool:
            tasks = team.state.tasks.tasks
            asked = {m.summary for m in team.state.mailbox.messages.values()}
            return all(
                b.task_id in tasks
                and tasks[b.task_id].progress == b.progress
                and (not b.question or tasks[b.task_id].state == "waiting_decision")
                and (not b.proposal or b.proposal in asked)
                for b in TASKS
            )

        while not planted():
            await team.changed.wait()

    async def _subagent(self, request: ModelRequest) -> ScriptedReply:
        brief = next(b for b in TASKS if b.task_id == request.agent)
        if request.step == 0:
            return reply("", c("report_progress", summary=brief.progress))
        if request.step == 1 and brief.question:
            return reply(
                "", c("ask_decision", question=brief.question, options=["keep", "renumber"])
            )
        if request.step == 1 and brief.proposal:
            return reply(
                "",
                c("request_direction_change", proposal=brief.proposal, reason="unused since 2023"),
            )
        await trio.sleep_forever()  # works on, until the main agent cancels it
        raise AssertionError("unreachable")


def _fail(message: str) -> None:
    raise AssertionError(message)


class _Records:
    """The UI sink: keeps the compaction records."""

    def __init__(self, records: list[ContextCompacted]) -> None:
        self._records = records

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        if isinstance(event, ContextCompacted):
            self._records.append(event)


def _spec(
    todo: tuple[str, str, str, tuple[str, ...], str], *, closed: bool = False
) -> dict[str, Any]:
    todo_id, content, status, blocked_by, failure = todo
    if closed and status in OPEN:
        status = "completed"
    spec: dict[str, Any] = {"id": todo_id, "content": content, "status": status}
    if blocked_by:
        spec["blocked_by"] = list(blocked_by)
    if failure:
        spec["failure"] = failure
    return spec


def _key(arguments: dict[str, Any] | str) -> str:
    if isinstance(arguments, str):
        return arguments
    return orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS).decode()


# --- the work between compactions -------------------------------------------------------------


def filler(scene: Scene, request: ModelRequest) -> ScriptedReply:
    """Reads the big files in turn (a different one each round)."""
    return reply("", c("read_file", path=f"fill/f{request.step % FILLERS}.txt"))


def worker(scene: Scene, request: ModelRequest) -> ScriptedReply | None:
    """Works the open todo items in order, each step decided from what the request shows:
    the first item not shown settled; its module read unless the request shows it read
    (a `read_file` call still in the context, or its path in the summary or the anchors),
    then its test likewise, then the module written unless shown written (a `write_file`
    call, or its path among the files touched that the anchors or the summary list), then
    the item marked completed. None: all done."""
    read = calls_shown(request, "read_file")
    written = calls_shown(request, "write_file")
    said = said_by_user(request)
    touched = "\n".join(section(said, heading) for heading in TOUCHED)
    for todo_id, *_ in TODOS:
        if todo_status(request, todo_id) not in OPEN:
            continue
        module, test = source(todo_id), test_of(todo_id)
        for path in (module, test):
            if path not in read and path not in said:
                return reply("", c("read_file", path=path))
        if module not in written and module not in touched:
            return reply("", c("write_file", path=module, content=f"# {module}: on ledger v2\n"))
        return reply("", c("todo_update", id=todo_id, status="completed"))
    return None
