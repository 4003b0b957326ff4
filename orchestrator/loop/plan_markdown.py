"""A plan's markdown form, `plan.md`, for people: `render` and `parse_markdown`, whose
grammar is in docs/plans.md. `parse_markdown(render(plan)) == plan` for every plan
`plan.validate` finds no error in. Parse errors are a `PlanError` naming the line.
"""

from __future__ import annotations

import re

import msgspec

from orchestrator.loop.plan import HEADING, Plan, PlanError, trim_blank

TITLE = "# Plan: "
"""How a plan's markdown begins: the title line, then the goal."""
_GOAL = re.compile(r"# Plan:(.*)")
_TASK = re.compile(r"### ([A-Za-z0-9][A-Za-z0-9_-]*)\.(?:[ \t]+(.*))?")
_FIELD = re.compile(r"- (depends on|writes|agent|acceptance|no acceptance):(.*)")
_LOOKS_LIKE_FIELD = re.compile(r"- [a-z ]+:")
_FIELDS = "'- depends on:', '- writes:', '- agent:', '- acceptance:', '- no acceptance:'"


def render(plan: Plan) -> str:
    """The markdown form (docs/plans.md), for people; `parse_markdown` reads it back."""
    out = [f"{TITLE}{plan.goal}", ""]
    if plan.constraints:
        out += ["## Constraints", "", *(f"- {c}" for c in plan.constraints), ""]
    out += ["## Tasks", ""]
    for task in plan.tasks:
        out.append(f"### {task.id}. {task.title}")
        if task.depends_on:
            out.append(f"- depends on: {', '.join(task.depends_on)}")
        if task.write_scope:
            out.append(f"- writes: {', '.join(task.write_scope)}")
        if task.agent_type:
            out.append(f"- agent: {task.agent_type}")
        if task.acceptance:
            out.append(f"- acceptance: {_code(task.acceptance)}")
        if task.no_acceptance_reason:
            out.append(f"- no acceptance: {task.no_acceptance_reason}")
        out.append("")
        if task.description:
            out += [task.description, ""]
    return "\n".join(out)


def _code(text: str) -> str:
    """`text` as markdown inline code: a fence longer than any run of backticks in it,
    padded with a space where it starts or ends with one (CommonMark)."""
    fence = "`" * (max((len(r) for r in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _uncode(text: str, line: int, source: str) -> str:
    run = len(text) - len(text.lstrip("`"))
    if not run:
        return text
    fence = "`" * run
    if len(text) < 2 * run + 1 or not text.endswith(fence) or text.endswith(fence + "`"):
        raise PlanError(f"{source} line {line}: expected the command closed by {fence}", line=line)
    inner = text[run:-run]
    if len(inner) > 1 and inner.startswith(" ") and inner.endswith(" ") and inner.strip():
        inner = inner[1:-1]
    return inner


class _Reader:
    """The parse's state: where it is and what it has read so far."""

    def __init__(self, source: str) -> None:
        self.source = source  # how errors name the text: "plan.md", or a file's path
        self.goal: str | None = None
        self.constraints: list[str] = []
        self.tasks: list[dict[str, object]] = []
        self.section = "start"  # start, top, constraints, tasks, fields, description
        self.description: list[str] = []

    def fail(self, n: int, expected: str, line: str) -> PlanError:
        return PlanError(f"{self.source} line {n}: expected {expected}, found {line!r}", line=n)

    def end_task(self) -> None:
        if self.tasks:
            self.tasks[-1]["description"] = trim_blank("\n".join(self.description))
        self.description = []

    def read(self, n: int, line: str) -> None:
        task = _TASK.fullmatch(line)
        if self.section == "description" and not HEADING.match(line):
            self.description.append(line)
        elif task and self.section != "start":
            self.end_task()
            title = (task.group(2) or "").strip()
            self.tasks.append({"id": task.group(1), "title": title})
            self.section = "fields"
        elif self.section == "fields":
            self.field(n, line)
        elif not line.strip():
            pass
        elif self.section == "start":
            goal = _GOAL.fullmatch(line)
            if not goal:
                raise self.fail(n, "the title '# Plan: GOAL'", line)
            self.goal, self.section = goal.group(1).strip(), "top"
        elif line.rstrip() == "## Constraints" and self.section == "top":
            self.section = "constraints"
        elif line.rstrip() == "## Tasks" and self.section in ("top", "constraints"):
            self.section = "tasks"
        elif self.section == "constraints" and line.startswith("- "):
            self.constraints.append(line[2:].strip())
        else:
            raise self.fail(n, self._expected(), line)

    def _expected(self) -> str:
        return {
            "top": "'## Constraints', '## Tasks' or a task '### ID. Title'",
            "constraints": "a constraint '- TEXT', '## Tasks' or a task '### ID. Title'",
        }.get(self.section, "a task '### ID. Title'")

    def field(self, n: int, line: str) -> None:
        found = _FIELD.fullmatch(line)
        if not found:
            if _LOOKS_LIKE_FIELD.match(line) or HEADING.match(line):
                raise self.fail(n, f"one of {_FIELDS}, a blank line or a task", line)
            self.section = "description"
            if line.strip():
                self.description.append(line)
            return
        key, value = found.group(1), found.group(2).strip()
        name = {
            "depends on": "depends_on",
            "writes": "write_scope",
            "agent": "agent_type",
            "acceptance": "acceptance",
            "no acceptance": "no_acceptance_reason",
        }[key]
        task = self.tasks[-1]
        if name in task:
            raise PlanError(f"{self.source} line {n}: '{key}' given twice for one task", line=n)
        if name in ("depends_on", "write_scope"):
            items = tuple(item.strip() for item in value.split(","))
            if not all(items):
                raise self.fail(n, f"'{key}' as a list like 'a, b'", line)
            task[name] = items
        else:
            task[name] = _uncode(value, n, self.source) if name == "acceptance" else value


def parse_markdown(text: str, *, source: str = "plan.md") -> Plan:
    """A plan from its markdown form (docs/plans.md); `PlanError` naming `source` (a file's
    path), the line and what was expected there. The plan is read, not validated: call
    `validate`."""
    reader = _Reader(source)
    lines = text.split("\n")
    for n, line in enumerate(lines, 1):
        reader.read(n, line)
    reader.end_task()
    if reader.goal is None:
        raise PlanError(
            f"{source} line {len(lines)}: expected the title '{TITLE}GOAL', found the end",
            line=len(lines),
        )
    try:
        return msgspec.convert(
            {"goal": reader.goal, "constraints": reader.constraints, "tasks": reader.tasks},
            Plan,
        )
    except msgspec.ValidationError as exc:  # pragma: no cover - the reader builds it right
        raise PlanError(f"{source}: {exc}") from exc
