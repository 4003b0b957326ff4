"""A plan is data: a goal, constraints and tasks, versioned, in two forms that hold the
same value (`plan.json` for programs, `plan.md` for people), and the rules a plan must
keep before anyone builds it.

Pure: this module reads no files and imports nothing above `loop/`. `validate` returns
every problem at once (errors, then warnings); `check` raises `PlanError` with every
error. `plan_json` / `parse_plan_json` are the JSON form (docs/plan.schema.json);
`plan_markdown.py` holds the markdown form, whose grammar is in docs/plans.md.
`parse_markdown(render(plan)) == plan` for every plan `validate` finds no error in: the
rules on text fields (one line, no edge whitespace, no heading lines in a description)
are exactly what the markdown form needs to hold a value unchanged.

Not here yet (issue 22 goes on): approval, the planner and builder roles, and the runtime
enforcing dependencies.
"""

import re
from collections.abc import Iterable, Sequence
from typing import Literal

import msgspec

from orchestrator.errors import OrchestratorError
from orchestrator.loop.scopes import scopes_overlap as scopes_overlap

PLAN_VERSION = 1
"""The plan format this build writes and reads."""

ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
"""A task id: a letter or digit, then letters, digits, `_` or `-` (64 at most)."""


class PlanTask(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One task of a plan.

    `write_scope`: workspace-relative paths or glob patterns the task may write (`dir/`
    is everything under it, `.` the whole workspace; empty: it writes nothing).
    `acceptance`: a shell command whose success accepts the work, or "" with
    `no_acceptance_reason` saying why there is none."""

    id: str
    title: str
    description: str = ""
    depends_on: tuple[str, ...] = ()
    write_scope: tuple[str, ...] = ()
    agent_type: str = ""
    acceptance: str = ""
    no_acceptance_reason: str = ""


class Plan(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A versioned plan: what to reach, what must hold throughout, and the tasks."""

    goal: str
    constraints: tuple[str, ...] = ()
    tasks: tuple[PlanTask, ...] = ()
    version: int = PLAN_VERSION


class PlanLimits(msgspec.Struct, frozen=True, kw_only=True):
    """How big a plan may be, and how often a session's plan may be re-planned
    (`[plan]` in the config; docs/plans.md#limits). A plan past `max_tasks` or
    `max_bytes` (its JSON form, unindented) is refused whole, before any other rule is
    checked: what a model wrote must not cost the session more than a person can read.
    `max_replans_per_task`: re-plans of one plan task; `max_replans`: of the session."""

    max_tasks: int = 200
    max_bytes: int = 256 * 1024
    max_replans_per_task: int = 3
    max_replans: int = 10


LIMITS = PlanLimits()


def replan_bound(of_task: int, of_session: int, limits: PlanLimits) -> str:
    """Why one more re-plan is refused ("" when it is not): `of_task` re-plans of the
    plan task asked so far, `of_session` of the whole session."""
    if of_task >= limits.max_replans_per_task:
        return (
            f"it was re-planned {of_task} time(s), the limit for one task "
            f"([plan] max_replans_per_task = {limits.max_replans_per_task})"
        )
    if of_session >= limits.max_replans:
        return (
            f"the session's plan was re-planned {of_session} time(s), the limit "
            f"([plan] max_replans = {limits.max_replans})"
        )
    return ""


class Problem(msgspec.Struct, frozen=True):
    """Something wrong with a plan. `task`: the task's id, "" for the plan as a whole.
    A warning does not stop a plan; an error does."""

    level: Literal["error", "warning"]
    task: str
    message: str

    def __str__(self) -> str:
        return f"{self.task}: {self.message}" if self.task else self.message


class PlanError(OrchestratorError, ValueError):
    """A plan that cannot be read or must not be built. `problems`: every error found
    (validation); `line`: the line of `plan.md` a parse stopped at (1-based), if any."""

    def __init__(
        self, message: str, *, problems: Sequence[Problem] = (), line: int | None = None
    ) -> None:
        super().__init__(message)
        self.problems = tuple(problems)
        self.line = line


# --- validation ------------------------------------------------------------------------


def validate(plan: Plan, limits: PlanLimits = LIMITS) -> list[Problem]:
    """Every problem of `plan`: its errors first, then its warnings. A plan past its
    `limits` has that error alone (the other rules cost time in its size)."""
    too_big = size_errors(plan, limits)
    if too_big:
        return too_big
    found = _plan_errors(plan)
    ids = [t.id for t in plan.tasks]
    known = set(ids)
    for task in plan.tasks:
        found += _task_errors(task, known)
    seen: set[str] = set()
    for task_id in ids:
        if task_id in seen:
            found.append(Problem("error", task_id, "the id is used by more than one task"))
        seen.add(task_id)
    graph = {t.id: [d for d in t.depends_on if d in known] for t in plan.tasks}
    found += [
        Problem("error", cycle[0], "dependency cycle: " + " -> ".join(cycle))
        for cycle in _cycles(graph)
    ]
    return found + _scope_warnings(plan.tasks, graph)


def size_errors(plan: Plan, limits: PlanLimits = LIMITS) -> list[Problem]:
    """The plan's size past `limits`: its tasks, its bytes (as JSON)."""
    found = []
    if len(plan.tasks) > limits.max_tasks:
        found.append(
            Problem(
                "error",
                "",
                f"the plan has {len(plan.tasks)} tasks, more than the limit of "
                f"{limits.max_tasks} ([plan] max_tasks)",
            )
        )
    size = len(msgspec.json.encode(plan))
    if size > limits.max_bytes:
        found.append(
            Problem(
                "error",
                "",
                f"the plan is {size:,} bytes, more than the limit of {limits.max_bytes:,} "
                "([plan] max_bytes)",
            )
        )
    return found


def check(plan: Plan, limits: PlanLimits = LIMITS) -> list[Problem]:
    """The plan's warnings; or `PlanError` naming every error."""
    problems = validate(plan, limits)
    errors = [p for p in problems if p.level == "error"]
    if errors:
        lines = "\n".join(f"- {p}" for p in errors)
        raise PlanError(f"the plan has {len(errors)} error(s):\n{lines}", problems=errors)
    return problems


def _plan_errors(plan: Plan) -> list[Problem]:
    found: list[Problem] = []
    if plan.version != PLAN_VERSION:
        found.append(Problem("error", "", f"version {plan.version} is not {PLAN_VERSION}"))
    found += _line_errors("", "the goal", plan.goal)
    for n, constraint in enumerate(plan.constraints, 1):
        found += _line_errors("", f"constraint {n}", constraint)
    if not plan.tasks:
        found.append(Problem("error", "", "the plan has no tasks"))
    return found


def _task_errors(task: PlanTask, known: set[str]) -> list[Problem]:
    tid = task.id
    found: list[Problem] = []
    if not ID.fullmatch(tid):
        found.append(
            Problem("error", tid, f"id {tid!r} is not a letter or digit then [A-Za-z0-9_-]")
        )
    found += _line_errors(tid, "the title", task.title)
    found += _description_errors(tid, task.description)
    for dep in _twice(task.depends_on):
        found.append(Problem("error", tid, f"depends on {dep} twice"))
    for dep in task.depends_on:
        if dep not in known:
            found.append(Problem("error", tid, f"depends on {dep}, which is no task"))
    for entry in task.write_scope:
        found += _line_errors(tid, "a write scope entry", entry, comma=True)
    if task.agent_type:
        found += _line_errors(tid, "the agent type", task.agent_type)
    if task.acceptance and task.no_acceptance_reason:
        found.append(Problem("error", tid, "give an acceptance check or a reason, not both"))
    elif task.acceptance:
        found += _line_errors(tid, "the acceptance check", task.acceptance)
    elif task.no_acceptance_reason:
        found += _line_errors(tid, "the reason for no acceptance check", task.no_acceptance_reason)
    else:
        found.append(
            Problem("error", tid, "no acceptance check: give a command, or say why there is none")
        )
    return found


def _line_errors(tid: str, what: str, text: str, *, comma: bool = False) -> list[Problem]:
    if not text.strip():
        return [Problem("error", tid, f"{what} is empty")]
    if "\n" in text:
        return [Problem("error", tid, f"{what} is more than one line")]
    if text != text.strip():
        return [Problem("error", tid, f"{what} starts or ends with whitespace")]
    if comma and "," in text:
        return [Problem("error", tid, f"{what} holds a comma: {text!r}")]
    return []


HEADING = re.compile(r"#{1,3}(?:[ \t]|$)")


def _description_errors(tid: str, text: str) -> list[Problem]:
    if text != trim_blank(text):
        return [Problem("error", tid, "the description starts or ends with a blank line")]
    for n, line in enumerate(text.split("\n"), 1):
        if HEADING.match(line):
            return [Problem("error", tid, f"description line {n} would be a heading: {line!r}")]
    return []


def trim_blank(text: str) -> str:
    lines = text.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


def _twice(items: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    twice: list[str] = []
    for item in items:
        if item in seen and item not in twice:
            twice.append(item)
        seen.add(item)
    return twice


def _cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """One named cycle per back edge a depth-first walk meets, each once, as
    `[a, b, ..., a]` (a depends on b, ...)."""
    found: dict[frozenset[str], list[str]] = {}
    done: set[str] = set()
    for start in graph:
        if start in done:
            continue
        path: list[str] = [start]
        stack = [iter(graph[start])]
        on_path = {start}
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
                done.add(path[-1])
                on_path.discard(path.pop())
            elif nxt in on_path:
                cycle = [*path[path.index(nxt) :], nxt]
                found.setdefault(frozenset(cycle), cycle)
            elif nxt not in done:
                path.append(nxt)
                on_path.add(nxt)
                stack.append(iter(graph[nxt]))
    return list(found.values())


def _scope_warnings(tasks: Sequence[PlanTask], graph: dict[str, list[str]]) -> list[Problem]:
    """Tasks with no dependency path between them (so they may run at the same time)
    whose write scopes overlap: the runtime will run them one after the other. One
    warning per group of such tasks (joined by any overlapping pair), not one per pair:
    400 tasks sharing a scope are one warning, not 79,800."""
    reach = {tid: _reachable(graph, tid) for tid in graph}
    unique = list({t.id: t for t in tasks}.values())
    group = {t.id: t.id for t in unique}  # union-find: each task's group, by a member

    def root(tid: str) -> str:
        while group[tid] != tid:
            group[tid] = group[group[tid]]
            tid = group[tid]
        return tid

    for i, a in enumerate(unique):
        for b in unique[i + 1 :]:
            if root(a.id) == root(b.id) or b.id in reach[a.id] or a.id in reach[b.id]:
                continue
            if scopes_overlap(a.write_scope, b.write_scope):
                group[root(b.id)] = root(a.id)
    members: dict[str, list[PlanTask]] = {}
    for task in unique:
        members.setdefault(root(task.id), []).append(task)
    return [_overlap_warning(found) for found in members.values() if len(found) > 1]


NAMED = 20
"""Tasks (and distinct scopes) an overlap warning names; the rest it counts."""


def _overlap_warning(tasks: list[PlanTask]) -> Problem:
    ids = [t.id for t in tasks]
    names = ", ".join(ids[: min(len(ids) - 1, NAMED)])
    if len(ids) <= NAMED + 1:
        names += f" and {ids[-1]}"
    else:
        names += f" and {len(ids) - NAMED} more ({len(ids)} tasks)"
    scopes = list(dict.fromkeys(", ".join(t.write_scope) for t in tasks))
    shown = " / ".join(scopes[:NAMED]) + (" / ..." if len(scopes) > NAMED else "")
    if len(ids) == 2:
        said = f"{names} may run at the same time and their write scopes overlap ({shown}):"
        return Problem("warning", ids[0], said + " they will run one after the other")
    return Problem(
        "warning",
        ids[0],
        f"tasks {names} write overlapping scopes ({shown}) and some of them may run at the"
        " same time: those will run one after the other",
    )


def _reachable(graph: dict[str, list[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(graph[start])
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(graph[node])
    return seen


# --- JSON ------------------------------------------------------------------------------


class _Versioned(msgspec.Struct):
    version: int


_DECODER = msgspec.json.Decoder(Plan)
_VERSION = msgspec.json.Decoder(_Versioned)


def plan_json(plan: Plan) -> bytes:
    """The JSON form: every field, indented, ending in a newline."""
    return msgspec.json.format(msgspec.json.encode(plan), indent=2) + b"\n"


def parse_plan_json(data: bytes | str, *, source: str = "plan.json") -> Plan:
    """A plan from its JSON form; `PlanError` naming the field (`$.tasks[0].title`)."""
    try:
        version = _VERSION.decode(data).version
    except msgspec.DecodeError as exc:
        raise PlanError(f"{source}: {exc}") from exc
    if version != PLAN_VERSION:
        raise PlanError(
            f"{source}: format version {version} is not known (this build reads"
            f" {PLAN_VERSION}) - at `$.version`"
        )
    try:
        return _DECODER.decode(data)
    except msgspec.DecodeError as exc:
        raise PlanError(f"{source}: {exc}") from exc


# --- markdown --------------------------------------------------------------------------
