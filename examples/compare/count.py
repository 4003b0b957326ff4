"""Counts what each program of the comparison costs its writer: lines, and the library's
public names it uses. `python examples/compare/count.py [--names] [FILE ...]` prints the
table of docs/library.md ("Compared with pydantic-ai and the Agents SDK"); `--names` lists
each program's names too. Standard library only (`ast`, `tokenize`).

Lines: the physical lines of the file, as `ruff format` (line length 100) leaves it, that
hold code: not blank, not only a comment, not part of a docstring (the string that opens
a module, class or function). Imports count; so does the `if __name__ == "__main__":`
block. "imports" is how many of those lines are import statements.

Names: the distinct names of the library's public API the program has to know, where the
library is `orchestrator`, `pydantic_ai` or `agents` (and their submodules):

1. every name imported from it (`from pydantic_ai import Agent` is `Agent`); a module
   itself is not a name (`import orchestrator as orc` is none);
2. every attribute read on a library value (`orc.run` is `run`, `result.output` is
   `output`), including a class pattern's attributes (`case orc.ToolCallFinished(result=r)`
   is `ToolCallFinished` and `result`);
3. every keyword argument of a call to a library value (`orc.run(goal, model=m)` is `run`
   and `model`; `Agent(name="main")` is `name`);
4. every string key read on a library value (`event["agent"]` is `agent`), and every string
   compared (`==`, `!=`) with an attribute of a library value (`event.type ==
   "run_item_stream_event"`), unless the program itself defines that string (a function
   of its own by that name, or a string it passes as an argument);
5. a library value is a name imported from the library, a module alias of it, a parameter
   annotated with a library name, a variable assigned, iterated or matched from a library
   value, and an attribute, call, subscript or await of one; except that the values of
   the attributes in PLAIN are Python's own (a `Path`, a `dict`), whose methods are not
   the library's.

The same names in different roles count once (a keyword `name=` and an attribute `.name`).
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

LIBRARIES = ("orchestrator", "pydantic_ai", "agents")
# Attributes whose values are Python's own: `ToolContext.workspace.resolve(...)` is a
# `Path`, `ApprovalRequest.arguments` a dict, `ToolCallPart.args_as_dict()` a dict.
PLAIN = frozenset({"resolve", "arguments", "args_as_dict"})
HERE = Path(__file__).resolve().parent
PROGRAMS = {
    "A: custom tool and agent type, two parallel delegations, events streamed": (
        "ours_a.py",
        "pydantic_ai_a.py",
        "agents_sdk_a.py",
    ),
    "B: a worker's question answered by the host, calls approved or denied with a reason": (
        "ours_b.py",
        "pydantic_ai_b.py",
        "agents_sdk_b.py",
    ),
    "C: one agent, one tool of the program's, the answer, from a script without a loop": (
        "ours_c.py",
        "pydantic_ai_c.py",
        "agents_sdk_c.py",
    ),
    "D: an approval that waits for a person who is not there, given later": (
        "ours_d.py",
        "pydantic_ai_d.py",
        "agents_sdk_d.py",
    ),
}


@dataclass(frozen=True)
class Count:
    lines: int
    imports: int
    names: frozenset[str]


def count(source: str) -> Count:
    tree = ast.parse(source)
    code = _code_lines(source) - _docstring_lines(tree)
    imports = {
        line
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for line in range(node.lineno, (node.end_lineno or node.lineno) + 1)
    }
    return Count(len(code), len(code & imports), frozenset(_Names(tree).names))


def _code_lines(source: str) -> set[int]:
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in skip and token.type != tokenize.ENDMARKER:
            lines.update(range(token.start[0], token.end[0] + 1))
    return lines


def _docstring_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        first = node.body[0] if node.body else None
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def _is_library(module: str | None) -> bool:
    return module is not None and module.split(".")[0] in LIBRARIES


def _imported(node: ast.Import | ast.ImportFrom) -> set[str]:
    """The local names an import binds to the library: module aliases and imported names."""
    if isinstance(node, ast.Import):
        return {a.asname or a.name.split(".")[0] for a in node.names if _is_library(a.name)}
    return {a.asname or a.name for a in node.names} if _is_library(node.module) else set()


class _Names:
    """Rules 1 to 5 of the module docstring, over one program."""

    def __init__(self, tree: ast.Module) -> None:
        self.values: set[str] = set()  # variables that hold a library value
        self.names: set[str] = set()
        self.own = {
            n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        } | {
            arg.value
            for call in ast.walk(tree)
            if isinstance(call, ast.Call)
            for arg in [*call.args, *(k.value for k in call.keywords)]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
        }
        for _ in range(3):  # values flow forward and through functions: a few passes settle
            for node in ast.walk(tree):
                self._bind(node)
        for node in ast.walk(tree):
            self._collect(node)

    def library(self, node: ast.expr) -> bool:
        match node:
            case ast.Name(id=name):
                return name in self.values
            case ast.Attribute(value=value, attr=attr):
                return attr not in PLAIN and self.library(value)
            case ast.Call(func=func):
                return self.library(func)
            case ast.Await(value=value) | ast.Subscript(value=value):
                return self.library(value)
            case _:
                return False

    def _bind(self, node: ast.AST) -> None:
        match node:
            case ast.Import() | ast.ImportFrom():
                self.values.update(_imported(node))
            case ast.Assign(targets=targets, value=value) if self.library(value):
                self.values.update(t.id for t in targets if isinstance(t, ast.Name))
            case (
                ast.For(target=ast.Name(id=name), iter=it)
                | ast.AsyncFor(target=ast.Name(id=name), iter=it)
            ) if self.library(it):
                self.values.add(name)
            case ast.arg(arg=name, annotation=annotation) if annotation is not None:
                if any(self.library(n) for n in ast.walk(annotation) if isinstance(n, ast.expr)):
                    self.values.add(name)
            case ast.MatchClass(cls=cls, kwd_patterns=patterns) if self.library(cls):
                for pattern in patterns:
                    if isinstance(pattern, ast.MatchAs) and pattern.name:
                        self.values.add(pattern.name)

    def _collect(self, node: ast.AST) -> None:
        match node:
            case ast.ImportFrom(module=module, names=aliases) if _is_library(module):
                self.names.update(alias.name for alias in aliases)
            case ast.Attribute(value=value, attr=attr) if self.library(value):
                self.names.add(attr)
            case ast.Call(func=func, keywords=keywords) if self.library(func):
                self.names.update(k.arg for k in keywords if k.arg)
            case ast.Subscript(value=value, slice=ast.Constant(value=str(key))) if self.library(
                value
            ):
                self.names.add(key)
            case ast.MatchClass(cls=cls, kwd_attrs=attrs) if self.library(cls):
                self.names.update(attrs)
            case ast.Compare(left=left, ops=ops, comparators=comparators):
                sides = [left, *comparators]
                for op, a, b in zip(ops, sides, sides[1:], strict=False):
                    if isinstance(op, ast.Eq | ast.NotEq):
                        self._compared(a, b)
                        self._compared(b, a)

    def _compared(self, side: ast.expr, other: ast.expr) -> None:
        if (
            isinstance(side, ast.Attribute)
            and self.library(side.value)
            and isinstance(other, ast.Constant)
            and isinstance(other.value, str)
            and other.value not in self.own
        ):
            self.names.add(other.value)


def table(files: list[Path]) -> str:
    rows = ["| program | lines | of which imports | names |", "| --- | --- | --- | --- |"]
    for path in files:
        counted = count(path.read_text())
        rows.append(
            f"| `{path.name}` | {counted.lines} | {counted.imports} | {len(counted.names)} |"
        )
    return "\n".join(rows)


def main(args: list[str]) -> None:
    show_names = "--names" in args
    given = [Path(a) for a in args if a != "--names"]
    groups = {"": given} if given else {k: [HERE / f for f in v] for k, v in PROGRAMS.items()}
    for title, files in groups.items():
        if title:
            print(f"Task {title}\n")
        print(table(files))
        if show_names:
            for path in files:
                names = ", ".join(sorted(count(path.read_text()).names, key=str.lower))
                print(f"\n{path.name}: {names}")
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
