"""The plan's approval at the terminal, and who decides on a plan without one.

The plan is shown whole on stderr (stdout stays the transcript's), behind the gutter, as
the planner wrote it; then: approve, reject with feedback for the planner, edit the
markdown in `$VISUAL`/`$EDITOR` (re-validated; an edit that does not parse or check is
shown and asked about again), or quit and decide later. Only `a` approves: an empty
line asks again, EOF (no terminal left) and `q` decide nothing, and Ctrl+C stops the
run. A version that `--approve` covers is approved without asking (team/planning.py's
`in_advance`); `--yes`, which answers tool calls, never approves a plan.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

import trio

from orchestrator.cli.prompt import Asking
from orchestrator.loop.plan import Plan, PlanError, check
from orchestrator.loop.plan_markdown import parse_markdown, render
from orchestrator.state.plans import PlanVersion
from orchestrator.team.plan_host import PlanApprover, PlanVerdict
from orchestrator.text import block, label

CHOICES = "[a]pprove, [r]eject with feedback, [e]dit, [q]uit and decide later"


def plan_approver(
    *,
    interactive: bool,
    asking: Asking | None = None,
    read: Callable[[], str] | None = None,
) -> PlanApprover | None:
    """Who decides on a version that no approval given in advance covers (`--approve`
    is the session's settings', journaled: team/planning.py's `in_advance`): a person at
    a terminal is asked (`asking`: the terminal's questions, one at a time; `read`: the answer,
    standard input's next line when None); else nobody (the run stops blocked, printing
    how to approve)."""
    if not interactive:
        return None
    return PlanPrompt(read=read, asking=asking)


class PlanPrompt:
    """Asks at the terminal; `read` gives a line ("" at EOF), `edit` edits a file."""

    def __init__(
        self,
        out: TextIO | None = None,
        read: Callable[[], str] | None = None,
        edit: Callable[[Path], None] | None = None,
        asking: Asking | None = None,
    ) -> None:
        self._out = out or sys.stderr
        self._read = read or sys.stdin.readline
        self._edit = edit or run_editor
        self._one_at_a_time = asking or Asking()

    async def __call__(self, version: PlanVersion) -> PlanVerdict | None:
        async with self._one_at_a_time("", ""):
            return await self._asked(version)

    async def _asked(self, version: PlanVersion) -> PlanVerdict | None:
        out = self._out
        shown = render(version.plan)
        out.write(f"\n── plan v{version.version} for approval ──\n")
        out.write("\n".join(block(shown.removesuffix("\n"))) + "\n")
        for warning in version.warnings:
            out.write(f"warning: {label(warning, 300)}\n")
        while True:
            line = await self._ask(f"Approve plan v{version.version}? {CHOICES}: ")
            if line is None:
                out.write("\n(no answer: the plan waits for a decision)\n")
                return None
            match line.strip().lower():
                case "a" | "approve":
                    return PlanVerdict("approved")
                case "r" | "reject":
                    feedback = await self._ask("What should the planner change? ")
                    if feedback is None:
                        return None
                    return PlanVerdict("rejected", feedback=feedback.strip())
                case "e" | "edit":
                    edited = await self._edited(version.plan)
                    if edited is not None:
                        return PlanVerdict("approved", plan=edited)
                case "q" | "quit":
                    return None
                case _:
                    out.write("answer a, r, e or q\n")

    async def _ask(self, question: str) -> str | None:
        self._out.write(question)
        self._out.flush()
        # Abandoned on cancel: Ctrl+C stops the run without waiting for a line.
        line = await trio.to_thread.run_sync(self._read, abandon_on_cancel=True)
        return line if line else None

    async def _edited(self, plan: Plan) -> Plan | None:
        """The plan as the person left it in the editor, checked; None (said why) when
        unchanged or not valid, to be asked again."""
        with tempfile.TemporaryDirectory(prefix="orchestrator-plan-") as directory:
            path = Path(directory) / "plan.md"
            path.write_text(render(plan))
            try:
                await trio.to_thread.run_sync(self._edit, path)
            except (OSError, subprocess.CalledProcessError) as exc:
                self._out.write(f"the editor failed: {label(exc, 300)}\n")
                return None
            text = path.read_text()
        try:
            edited = parse_markdown(text)
            warnings = check(edited)
        except PlanError as exc:
            self._out.write(f"the edited plan is not valid, nothing changed:\n{exc}\n")
            return None
        if edited == plan:
            self._out.write("the plan is unchanged\n")
            return None
        for warning in warnings:
            self._out.write(f"warning: {label(str(warning), 300)}\n")
        return edited


def run_editor(path: Path) -> None:
    """`$VISUAL`, else `$EDITOR`, else `vi`, on `path`, at the terminal."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    subprocess.run([*shlex.split(editor), str(path)], check=True)
