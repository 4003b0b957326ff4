"""The planner's tool: `submit_plan`. It checks the plan by the rules of `loop/plan.py`
and hands a valid one to the session (the `PlanHost` protocol, implemented by
`team/plan_host.py`'s `Planning`), which journals it and asks for approval. Every error goes back to
the planner, all at once, to fix; warnings go with the submission."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.errors import ToolFailed
from orchestrator.loop.plan import LIMITS, Plan, PlanLimits, PlanTask, Problem, validate
from orchestrator.tools.base import Tool, ToolContext, ToolOutput


class PlanHost(Protocol):
    """What `submit_plan` needs of the session."""

    async def submit(self, agent: str, plan: Plan, warnings: list[Problem], *, ref: str) -> int:
        """Journal `plan` as the next version; its number. A call that ran before a crash
        finds its version instead of adding another."""
        ...


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PlanTaskArgs(_Args):
    id: str = Field(description="A short id: a letter or digit, then letters, digits, _ or -.")
    title: str = Field(description="What the task does, in one line.")
    description: str = Field(
        default="", description="Everything the worker needs to know (may span lines)."
    )
    depends_on: list[str] = Field(
        default_factory=list, description="Ids of the tasks that must complete first."
    )
    write_scope: list[str] = Field(
        default_factory=list,
        description="Workspace paths or globs the task may write ('dir/' for all under it); "
        "empty: it only reads.",
    )
    agent_type: str = Field(default="", description="The subagent type to run it, if it matters.")
    acceptance: str = Field(
        default="",
        description="A shell command that succeeds when the task's work is right (run in the "
        "workspace when the task completes).",
    )
    no_acceptance_reason: str = Field(
        default="", description="Why no command can check this task (instead of acceptance)."
    )


class SubmitPlanArgs(_Args):
    goal: str = Field(description="What the plan reaches, in one line.")
    constraints: list[str] = Field(
        default_factory=list, description="What must hold throughout (one line each)."
    )
    tasks: list[PlanTaskArgs] = Field(description="The tasks, in the order to read them.")


class SubmitPlan(Tool[SubmitPlanArgs]):
    name = "submit_plan"
    description = (
        "Submit your plan for approval. It is checked first: every task needs a unique id, "
        "dependencies that exist and no cycle, and an acceptance command (or a reason why "
        "none can check it); tasks that may run at the same time with overlapping write "
        "scopes get a warning (they will run one after the other). Errors come back to you "
        "to fix. A valid plan ends your turn: the person approves it, or rejects it with "
        "feedback you will read."
    )
    args_model = SubmitPlanArgs
    idempotent = True
    approval = False
    journaled = True

    def __init__(self, host: PlanHost, limits: PlanLimits = LIMITS) -> None:
        self.host = host
        self.limits = limits

    async def run(self, args: SubmitPlanArgs, ctx: ToolContext) -> ToolOutput:
        plan = plan_of(args)
        problems = validate(plan, self.limits)
        errors = [p for p in problems if p.level == "error"]
        if errors:
            lines = "\n".join(f"- {p}" for p in errors)
            raise ToolFailed(
                f"the plan was not submitted: {len(errors)} error(s) to fix, then call "
                f"submit_plan again with the whole plan:\n{lines}"
            )
        warnings = [p for p in problems if p.level == "warning"]
        version = await self.host.submit(ctx.agent, plan, warnings, ref=ctx.call)
        said = "".join(f"\n- warning: {w}" for w in warnings)
        return ToolOutput(
            f"plan v{version} submitted with {len(plan.tasks)} task(s); it awaits approval, "
            f"and your turn ends here.{said}",
            ends_turn=True,
        )


def plan_of(args: SubmitPlanArgs) -> Plan:
    """The plan the arguments describe (as data: checked by `validate`, not here)."""
    tasks = tuple(PlanTask(**_task_fields(t)) for t in args.tasks)
    return Plan(goal=args.goal, constraints=tuple(args.constraints), tasks=tasks)


def _task_fields(task: PlanTaskArgs) -> dict[str, Any]:
    fields = task.model_dump()
    fields["depends_on"] = tuple(fields["depends_on"])
    fields["write_scope"] = tuple(fields["write_scope"])
    return fields


class Replanner(Protocol):
    """What `replan` needs of the session."""

    async def request_replan(self, agent: str, target: str, reason: str, *, ref: str) -> str: ...


class ReplanArgs(_Args):
    task: str = Field(description="The plan task's id (or the id of the task delegated for it).")
    reason: str = Field(description="What went wrong, for the planner: why the plan must change.")


class Replan(Tool[ReplanArgs]):
    name = "replan"
    description = (
        "Send a plan task that failed or is blocked back to a planner: its task (and what "
        "waits on it) is cancelled, a planner writes the next version of the plan from its "
        "state and your reason, and it is approved like the first; tasks that do not "
        "depend on it keep running. Ends your turn; you are told when the new version is "
        "approved. To ask the person instead, use report_blocked."
    )
    args_model = ReplanArgs
    idempotent = True
    approval = False
    journaled = True

    def __init__(self, host: Replanner) -> None:
        self.host = host

    async def run(self, args: ReplanArgs, ctx: ToolContext) -> ToolOutput:
        said = await self.host.request_replan(ctx.agent, args.task, args.reason, ref=ctx.call)
        return ToolOutput(said, ends_turn=True)
