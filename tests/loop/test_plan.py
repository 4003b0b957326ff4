"""Plans as data (loop/plan.py): each validation rule, the JSON form and its errors, the
markdown form, its errors with line numbers, and the round trip render -> parse."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from orchestrator import Plan, PlanError, PlanTask, parse_plan_json
from orchestrator.loop.plan import PLAN_VERSION, Problem, check, plan_json, validate
from orchestrator.loop.plan_markdown import parse_markdown, render

SCHEMA = Path(__file__).parents[2] / "docs" / "plan.schema.json"


def task(id: str, **fields: Any) -> PlanTask:
    fields.setdefault("title", f"do {id}")
    if "no_acceptance_reason" not in fields:
        fields.setdefault("acceptance", "true")
    return PlanTask(id=id, **fields)


def plan(*tasks: PlanTask, **fields: Any) -> Plan:
    return Plan(goal=fields.pop("goal", "ship it"), tasks=tasks, **fields)


def errors(p: Plan) -> list[str]:
    return [str(x) for x in validate(p) if x.level == "error"]


def warnings(p: Plan) -> list[str]:
    return [str(x) for x in validate(p) if x.level == "warning"]


# --- validation --------------------------------------------------------------------------


def test_a_good_plan_has_no_problem() -> None:
    p = plan(task("T1", write_scope=("src/a.py",)), task("T2", depends_on=("T1",)))
    assert validate(p) == []
    assert check(p) == []


@pytest.mark.parametrize(
    ("p", "expected"),
    [
        (plan(task("T1"), task("T1")), "T1: the id is used by more than one task"),
        (plan(task("T 1")), "T 1: id 'T 1' is not a letter or digit then [A-Za-z0-9_-]"),
        (plan(task("-x")), "-x: id '-x' is not a letter or digit then [A-Za-z0-9_-]"),
        (plan(task("a" * 65)), f"{'a' * 65}: id '{'a' * 65}' is not"),
        (plan(task("T1", depends_on=("T9",))), "T1: depends on T9, which is no task"),
        (plan(task("T1"), task("T2", depends_on=("T1", "T1"))), "T2: depends on T1 twice"),
        (plan(task("T1", acceptance="")), "T1: no acceptance check: give a command, or say"),
        (
            plan(task("T1", acceptance="x", no_acceptance_reason="y")),
            "T1: give an acceptance check or a reason, not both",
        ),
        (plan(task("T1"), goal=""), "the goal is empty"),
        (plan(task("T1"), goal="a\nb"), "the goal is more than one line"),
        (plan(task("T1"), constraints=(" x",)), "constraint 1 starts or ends with whitespace"),
        (plan(), "the plan has no tasks"),
        (plan(task("T1"), version=2), "version 2 is not 1"),
        (plan(task("T1", title="")), "T1: the title is empty"),
        (plan(task("T1", write_scope=("a,b",))), "T1: a write scope entry holds a comma"),
        (plan(task("T1", description="\nx")), "T1: the description starts or ends with a blank"),
        (plan(task("T1", description="x\n## y")), "T1: description line 2 would be a heading"),
        (plan(task("T1", acceptance="a\nb")), "T1: the acceptance check is more than one line"),
    ],
)
def test_each_rule_is_an_error(p: Plan, expected: str) -> None:
    assert any(e.startswith(expected) for e in errors(p)), errors(p)
    with pytest.raises(PlanError) as raised:
        check(p)
    assert raised.value.problems
    assert all(isinstance(x, Problem) and x.level == "error" for x in raised.value.problems)


def test_a_cycle_is_named() -> None:
    p = plan(
        task("A", depends_on=("C",)),
        task("B", depends_on=("A",)),
        task("C", depends_on=("B",)),
        task("D", depends_on=("D",)),
    )
    assert errors(p) == ["A: dependency cycle: A -> C -> B -> A", "D: dependency cycle: D -> D"]


def test_check_names_every_error_at_once() -> None:
    p = plan(task("T1", depends_on=("T9",), title=""), task("T1"), goal="")
    with pytest.raises(PlanError) as raised:
        check(p)
    assert len(raised.value.problems) == 4
    assert "4 error(s)" in str(raised.value)
    assert "- T1: depends on T9, which is no task" in str(raised.value)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (("src/a.py",), ("src/a.py",)),
        (("src/",), ("src/a.py",)),
        (("src",), ("src/deep/b.py",)),
        (("src/*.py",), ("src/a.py",)),
        ((".",), ("docs/x.md",)),
        (("./src/../src/a.py",), ("src/a.py",)),
    ],
)
def test_tasks_that_may_run_together_with_overlapping_scopes_draw_a_warning(
    a: tuple[str, ...], b: tuple[str, ...]
) -> None:
    p = plan(task("T1", write_scope=a), task("T2", write_scope=b))
    assert errors(p) == []
    [warning] = warnings(p)
    assert warning.startswith("T1: T1 and T2 may run at the same time")
    assert check(p) == validate(p)  # a warning does not stop a plan


def test_no_warning_when_a_dependency_path_orders_them_or_scopes_are_apart() -> None:
    ordered = plan(
        task("T1", write_scope=("src/",)),
        task("T2", depends_on=("T1",)),
        task("T3", depends_on=("T2",), write_scope=("src/a.py",)),
    )
    apart = plan(
        task("T1", write_scope=("src/",)),
        task("T2", write_scope=("tests/", "srcx/")),
        task("T3"),  # writes nothing
    )
    assert validate(ordered) == []
    assert validate(apart) == []


# --- JSON --------------------------------------------------------------------------------

GOOD = plan(
    task("T1", write_scope=("src/",), agent_type="worker", description="first\n\nsecond"),
    task("T2", depends_on=("T1",), no_acceptance_reason="docs only"),
    constraints=("no new dependencies",),
)


def test_json_round_trips() -> None:
    data = plan_json(GOOD)
    assert parse_plan_json(data) == GOOD
    assert parse_plan_json(data.decode()) == GOOD
    assert json.loads(data)["version"] == PLAN_VERSION


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"{", "plan.json: "),
        (b"[]", "plan.json: Expected `object`, got `array`"),
        (b'{"goal": "g"}', "Object missing required field `version`"),
        (b'{"version": 2, "goal": "g"}', "format version 2 is not known"),
        (b'{"version": "1", "goal": "g"}', "at `$.version`"),
        (b'{"version": 1}', "Object missing required field `goal`"),
        (b'{"version": 1, "goal": "g", "tasks": [{"id": "T1"}]}', "at `$.tasks[0]`"),
        (
            b'{"version": 1, "goal": "g", "tasks": [{"id": "T1", "title": 3}]}',
            "Expected `str`, got `int` - at `$.tasks[0].title`",
        ),
        (b'{"version": 1, "goal": "g", "owner": "x"}', "unknown field `owner`"),
    ],
)
def test_json_errors_name_the_field(data: bytes, expected: str) -> None:
    with pytest.raises(PlanError, match=expected.replace("[", r"\[").replace("$", r"\$")):
        parse_plan_json(data)


def _fields(struct: type[msgspec.Struct]) -> tuple[set[str], set[str]]:
    info = msgspec.inspect.type_info(struct)
    assert isinstance(info, msgspec.inspect.StructType)
    return {f.name for f in info.fields}, {f.name for f in info.fields if f.required}


def test_the_json_schema_matches_the_structs() -> None:
    schema = json.loads(SCHEMA.read_text())
    task_schema = schema["$defs"]["PlanTask"]
    for struct, part, extra in ((Plan, schema, {"version"}), (PlanTask, task_schema, set())):
        fields, required = _fields(struct)
        assert set(part["properties"]) == fields
        # `version` has a default in Python but must be written in the file.
        assert set(part["required"]) == required | extra
        assert part["additionalProperties"] is False
    assert schema["properties"]["version"]["const"] == PLAN_VERSION
    assert set(json.loads(plan_json(GOOD))) == set(schema["properties"])
    assert set(json.loads(plan_json(GOOD))["tasks"][0]) == set(task_schema["properties"])


def test_a_rendered_plan_validates_against_the_json_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(json.loads(plan_json(GOOD)), json.loads(SCHEMA.read_text()))


# --- markdown ----------------------------------------------------------------------------

HAND_WRITTEN = """\
# Plan: Add a --dry-run flag to the CLI

## Constraints
- no new runtime dependencies
-   keep the flag off by default

## Tasks

### parse. Parse the flag
- writes: orchestrator/cli/parser.py,   tests/cli/
- agent: worker
- acceptance: `pytest tests/cli -q`
Read the flag in the parser.

Pass it to the settings.
### run. Honour it
- depends on: parse
- writes: orchestrator/team/
- acceptance: ``pytest -k "dry`run"``

### docs. Say so in docs/cli.md
- depends on: parse, run
- no acceptance: a doc change; read it
"""


def test_a_hand_written_plan_is_read() -> None:
    p = parse_markdown(HAND_WRITTEN)
    assert p == Plan(
        goal="Add a --dry-run flag to the CLI",
        constraints=("no new runtime dependencies", "keep the flag off by default"),
        tasks=(
            PlanTask(
                id="parse",
                title="Parse the flag",
                description="Read the flag in the parser.\n\nPass it to the settings.",
                write_scope=("orchestrator/cli/parser.py", "tests/cli/"),
                agent_type="worker",
                acceptance="pytest tests/cli -q",
            ),
            PlanTask(
                id="run",
                title="Honour it",
                depends_on=("parse",),
                write_scope=("orchestrator/team/",),
                acceptance='pytest -k "dry`run"',
            ),
            PlanTask(
                id="docs",
                title="Say so in docs/cli.md",
                depends_on=("parse", "run"),
                no_acceptance_reason="a doc change; read it",
            ),
        ),
    )
    assert validate(p) == []
    assert parse_markdown(render(p)) == p


def test_the_rendered_form() -> None:
    assert render(GOOD) == (
        "# Plan: ship it\n\n## Constraints\n\n- no new dependencies\n\n## Tasks\n\n"
        "### T1. do T1\n- writes: src/\n- agent: worker\n- acceptance: `true`\n\n"
        "first\n\nsecond\n\n"
        "### T2. do T2\n- depends on: T1\n- no acceptance: docs only\n"
    )


@pytest.mark.parametrize(
    ("text", "line", "expected"),
    [
        ("", 1, "expected the title '# Plan: GOAL', found the end"),
        ("Plan: x\n", 1, "expected the title '# Plan: GOAL', found 'Plan: x'"),
        ("\n\n### T1. x\n", 3, "expected the title '# Plan: GOAL'"),
        ("# Plan: g\nsome words\n", 2, "expected '## Constraints', '## Tasks' or a task"),
        ("# Plan: g\n## Constraints\n* x\n", 3, "expected a constraint '- TEXT'"),
        ("# Plan: g\n## Tasks\n- x\n", 3, "expected a task '### ID. Title', found '- x'"),
        ("# Plan: g\n## Tasks\n### T.1 x\n", 3, "expected a task '### ID. Title'"),
        ("# Plan: g\n### T1. x\n- owner: me\n", 3, "expected one of '- depends on:'"),
        ("# Plan: g\n### T1. x\n- writes: a\n- writes: b\n", 4, "'writes' given twice"),
        ("# Plan: g\n### T1. x\n- writes: a,,b\n", 3, "expected 'writes' as a list"),
        ("# Plan: g\n### T1. x\n- acceptance: ``make`\n", 3, "closed by ``"),
        ("# Plan: g\n### T1. x\n## Notes\n", 3, "expected one of"),
        ("# Plan: g\n### T1. x\n\ntext\n## Notes\n", 5, "expected a task '### ID. Title'"),
        ("# Plan: g\n## Tasks\n## Constraints\n", 3, "expected a task '### ID. Title'"),
    ],
)
def test_markdown_errors_name_the_line(text: str, line: int, expected: str) -> None:
    with pytest.raises(PlanError, match=f"^plan.md line {line}: ") as raised:
        parse_markdown(text)
    assert expected in str(raised.value)
    assert raised.value.line == line


# --- the round trip ----------------------------------------------------------------------

# Text with what the markdown form must survive: backticks, commas, colons, hashes, dashes.
CHARS = "ab `,:#-.*/ "
one_line = st.text(alphabet=CHARS, min_size=1, max_size=12).filter(lambda s: s == s.strip())
lines = st.text(alphabet=CHARS + "\t", max_size=10).filter(
    lambda s: not re.match(r"#{1,3}(\s|$)", s)
)
descriptions = st.lists(lines, max_size=4).map(lambda ls: "\n".join(ls).strip("\n"))

ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_-]{0,5}", fullmatch=True)


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    names = draw(st.lists(ids, min_size=1, max_size=6, unique=True))
    tasks = []
    for i, name in enumerate(names):
        has_check = draw(st.booleans())
        tasks.append(
            PlanTask(
                id=name,
                title=draw(one_line),
                description=draw(descriptions),
                # Only on earlier tasks: no cycles.
                depends_on=tuple(draw(st.lists(st.sampled_from(names[:i]), unique=True)))
                if i
                else (),
                write_scope=tuple(draw(st.lists(one_line.filter(lambda s: "," not in s)))),
                agent_type=draw(st.one_of(st.just(""), one_line)),
                acceptance=draw(one_line) if has_check else "",
                no_acceptance_reason="" if has_check else draw(one_line),
            )
        )
    return Plan(
        goal=draw(one_line),
        constraints=tuple(draw(st.lists(one_line, max_size=3))),
        tasks=tuple(tasks),
    )


def _trimmed(p: Plan) -> bool:
    return all(
        not t.description
        or (t.description.split("\n")[0].strip() and t.description.split("\n")[-1].strip())
        for t in p.tasks
    )


@settings(max_examples=300, deadline=None)
@given(plans())
def test_render_then_parse_gives_the_same_plan(p: Plan) -> None:
    assume(_trimmed(p))  # no description starting or ending with a line of blanks
    assert errors(p) == []
    assert parse_markdown(render(p)) == p
    assert parse_plan_json(plan_json(p)) == p


def test_the_example_in_docs_plans_md_is_a_valid_plan() -> None:
    text = (SCHEMA.parent / "plans.md").read_text()
    example = text.split("```markdown\n", 1)[1].split("```\n", 1)[0]
    p = parse_markdown(example)
    assert [t.id for t in p.tasks] == ["parse", "docs"]
    assert validate(p) == []
    assert render(p) == example


scope_entries = st.lists(
    st.text(alphabet="ab/.*?", min_size=1, max_size=6), min_size=1, max_size=2
).map(tuple)


@settings(max_examples=300, deadline=None)
@given(scope_entries, scope_entries)
def test_the_copied_scope_rule_agrees_with_the_task_registry(
    a: tuple[str, ...], b: tuple[str, ...]
) -> None:
    """Plans and the task registry judge scope overlap by one rule (loop/scopes.py)."""
    from orchestrator.loop.plan import scopes_overlap as copied
    from orchestrator.state.tasks import scopes_overlap

    assert copied(a, b) == scopes_overlap(a, b)
