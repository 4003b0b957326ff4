"""The tools agents coordinate with: the main agent's (`delegate`, `send_message`,
`cancel_task`, `wait_tasks`, `list_tasks`) and a subagent's (`report_progress`,
`complete`, `report_blocked`, `ask_decision`, `raise_risk`, `request_direction_change`).

They are thin: each checks its arguments and calls the multi-agent layer through the
`Coordinator` protocol (implemented by `team/delegation.py`), and every result tells the model
plainly what happened. Each tool is idempotent by its call's ref: run again after a
crash, it finds what its first run recorded instead of doing it twice.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.state.mailbox import MailKind
from orchestrator.state.tasks import TaskState
from orchestrator.tools.base import AnyTool, Tool, ToolContext, ToolOutput

BlockedCategory = Literal["credential", "dependency", "input", "workspace", "decision"]


class Coordinator(Protocol):
    """What the tools need of the multi-agent layer (see team/delegation.py)."""

    async def delegate(self, owner: str, args: DelegateArgs, *, ref: str) -> ToolOutput: ...

    async def send(self, sender: str, args: SendMessageArgs, *, ref: str) -> ToolOutput: ...

    async def cancel_tree(self, by: str, task_id: str, reason: str) -> ToolOutput: ...

    async def wait(self, agent: str, task_ids: list[str], seconds: float) -> ToolOutput: ...

    def describe_tasks(self, agent: str) -> str: ...

    async def report(
        self,
        agent: str,
        kind: MailKind,
        summary: str,
        *,
        ref: str,
        data: dict[str, Any] | None = None,
        requires_ack: bool = False,
        ends_turn: bool = False,
        state: TaskState | None = None,
    ) -> ToolOutput: ...


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


# Bounds on every number a model gives: past them a value is a mistake, and refused before
# anything is recorded (a later step could not store or compute with it).
MAX_SECONDS = 7 * 24 * 3600  # a deadline or a wait: a week at most
MAX_ROUNDS = 100_000  # a task's model calls in all
MAX_TOKENS = 10_000_000_000  # a task's tokens in all


class _CoordinationTool(Tool[Any]):
    idempotent = True
    approval = False
    journaled = True

    def __init__(self, team: Coordinator) -> None:
        self.team = team


# --- the main agent's (and a delegating subagent's) tools ---------------------------------


class DelegateArgs(_Args):
    description: str = Field(description="A short title for the task (one line).")
    prompt: str = Field(description="Everything the subagent needs to do the task.")
    agent_type: str = Field(default="worker", description="The subagent's type (role).")
    plan_ref: str = Field(default="", description="The plan task this is, if any.")
    write_scope: list[str] | None = Field(
        default=None,
        description="Workspace paths or glob patterns the task may write; omit for anywhere.",
    )
    deadline_seconds: float | None = Field(
        default=None,
        gt=0,
        le=MAX_SECONDS,
        description="Fail the task if it has not finished in this time.",
    )
    round_budget: int | None = Field(
        default=None, gt=0, le=MAX_ROUNDS, description="Model calls the subagent may make in all."
    )
    token_budget: int | None = Field(
        default=None, gt=0, le=MAX_TOKENS, description="Tokens the subagent may spend in all."
    )
    after: list[str] | None = Field(
        default=None,
        description="Task ids or plan refs this task must wait for; it starts by itself "
        "when they have completed.",
    )


class Delegate(_CoordinationTool):
    name = "delegate"
    description = (
        "Hand a task to a new subagent, which starts in the background (at once, or once "
        "the tasks named in `after` have completed), and get its task_id. It reports back "
        "through your mailbox; use wait_tasks to wait for it."
    )
    args_model = DelegateArgs

    async def run(self, args: DelegateArgs, ctx: ToolContext) -> ToolOutput:
        return await self.team.delegate(ctx.agent, args, ref=ctx.call)


class SendMessageArgs(_Args):
    task: str = Field(description="The task_id to write to.")
    text: str = Field(description="The message.")
    kind: Literal["instruction", "answer"] = Field(
        default="instruction",
        description="'answer' replies to a question (give in_reply_to); 'instruction' "
        "informs or corrects the task's direction.",
    )
    in_reply_to: str = Field(default="", description="The message id you answer.")
    priority: Literal["notify", "urgent", "interrupt"] | None = Field(
        default=None,
        description="urgent (default): read at the task's next step; interrupt: stop "
        "what it is thinking now; notify: at its next turn.",
    )


class SendMessage(_CoordinationTool):
    name = "send_message"
    description = (
        "Send a message to one of your tasks: information, an answer to its question, or "
        "a correction. A finished task is revived to act on it, with its context intact."
    )
    args_model = SendMessageArgs

    async def run(self, args: SendMessageArgs, ctx: ToolContext) -> ToolOutput:
        return await self.team.send(ctx.agent, args, ref=ctx.call)


class CancelTaskArgs(_Args):
    task: str
    reason: str


class CancelTask(_CoordinationTool):
    name = "cancel_task"
    description = "Cancel one of your tasks and every task under it, saying why."
    args_model = CancelTaskArgs

    async def run(self, args: CancelTaskArgs, ctx: ToolContext) -> ToolOutput:
        return await self.team.cancel_tree(ctx.agent, args.task, args.reason)


class WaitTasksArgs(_Args):
    tasks: list[str] = Field(
        default_factory=list, description="The task_ids to wait for; empty: all of yours."
    )
    timeout: float = Field(
        default=300, gt=0, le=MAX_SECONDS, description="Seconds to wait at most."
    )


class WaitTasks(_CoordinationTool):
    name = "wait_tasks"
    description = (
        "Wait until the given tasks finish or ask you something (or the timeout), and get "
        "their completions and messages."
    )
    args_model = WaitTasksArgs
    read_only = True  # it changes nothing but this agent's own context
    interruptible = True

    async def run(self, args: WaitTasksArgs, ctx: ToolContext) -> ToolOutput:
        return await self.team.wait(ctx.agent, args.tasks, args.timeout)


class ListTasksArgs(_Args):
    pass


class ListTasks(_CoordinationTool):
    name = "list_tasks"
    description = "List your tasks with their state, latest progress and open questions."
    args_model = ListTasksArgs
    read_only = True

    async def run(self, args: ListTasksArgs, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(self.team.describe_tasks(ctx.agent))


# --- a subagent's tools -----------------------------------------------------------------


class ReportProgressArgs(_Args):
    summary: str
    percent: int | None = Field(default=None, ge=0, le=100)


class ReportProgress(_CoordinationTool):
    name = "report_progress"
    description = "Tell your owner how the task is going (a milestone, briefly)."
    args_model = ReportProgressArgs

    async def run(self, args: ReportProgressArgs, ctx: ToolContext) -> ToolOutput:
        data = {"percent": args.percent} if args.percent is not None else None
        return await self.team.report(ctx.agent, "progress", args.summary, ref=ctx.call, data=data)


class CompleteArgs(_Args):
    summary: str = Field(description="What was done, for your owner.")
    files_changed: list[str] = Field(default_factory=list)
    verification: list[str] = Field(
        default_factory=list, description="Checks you ran and their outcome."
    )
    risks: list[str] = Field(default_factory=list)
    follow_ups: list[str] = Field(default_factory=list)


class Complete(_CoordinationTool):
    name = "complete"
    description = "Finish your task: hand your owner the summary and evidence. Ends your turn."
    args_model = CompleteArgs

    async def run(self, args: CompleteArgs, ctx: ToolContext) -> ToolOutput:
        data = args.model_dump(exclude={"summary"})
        return await self.team.report(
            ctx.agent,
            "completed",
            args.summary,
            ref=ctx.call,
            data=data,
            ends_turn=True,
            state="completed",
        )


class ReportBlockedArgs(_Args):
    category: BlockedCategory
    reason: str


class ReportBlocked(_CoordinationTool):
    name = "report_blocked"
    description = (
        "Tell your owner you cannot go on, and why (credential, dependency, input, "
        "workspace or decision). Ends your turn; its answer starts your next one."
    )
    args_model = ReportBlockedArgs

    async def run(self, args: ReportBlockedArgs, ctx: ToolContext) -> ToolOutput:
        return await self.team.report(
            ctx.agent,
            "blocked",
            args.reason,
            ref=ctx.call,
            data={"category": args.category},
            requires_ack=True,
            ends_turn=True,
            state="waiting_decision",
        )


class AskDecisionArgs(_Args):
    question: str
    options: list[str] = Field(default_factory=list)


class AskDecision(_CoordinationTool):
    name = "ask_decision"
    description = (
        "Ask your owner to decide something that is theirs to decide. Ends your turn; "
        "the answer starts your next one."
    )
    args_model = AskDecisionArgs

    async def run(self, args: AskDecisionArgs, ctx: ToolContext) -> ToolOutput:
        return await self.team.report(
            ctx.agent,
            "decision_required",
            args.question,
            ref=ctx.call,
            data={"options": args.options} if args.options else None,
            requires_ack=True,
            ends_turn=True,
            state="waiting_decision",
        )


class RaiseRiskArgs(_Args):
    risk: str


class RaiseRisk(_CoordinationTool):
    name = "raise_risk"
    description = "Warn your owner of a risk you found (you keep working)."
    args_model = RaiseRiskArgs

    async def run(self, args: RaiseRiskArgs, ctx: ToolContext) -> ToolOutput:
        return await self.team.report(ctx.agent, "risk_alert", args.risk, ref=ctx.call)


class RequestDirectionChangeArgs(_Args):
    proposal: str
    reason: str


class RequestDirectionChange(_CoordinationTool):
    name = "request_direction_change"
    description = (
        "Propose that your task change direction (scope, approach), and why; your owner "
        "answers. You keep working meanwhile unless you also ask_decision."
    )
    args_model = RequestDirectionChangeArgs

    async def run(self, args: RequestDirectionChangeArgs, ctx: ToolContext) -> ToolOutput:
        return await self.team.report(
            ctx.agent,
            "direction_change_request",
            args.proposal,
            ref=ctx.call,
            data={"reason": args.reason},
            requires_ack=True,
        )


class BlockReporter(Protocol):
    async def report_blocked(self, agent: str, category: str, reason: str, *, ref: str) -> None: ...


class ReportBlockedMain(Tool[Any]):
    """The main agent's `report_blocked`: the session stops as blocked, with the reason,
    until the person answers (resume with a message)."""

    name = "report_blocked"
    description = (
        "Say that you cannot go on without the user, and why (credential, dependency, "
        "input, workspace or decision). Ends your turn; the session stops as blocked until "
        "the user answers."
    )
    args_model = ReportBlockedArgs
    idempotent = True
    approval = False
    journaled = True

    def __init__(self, host: BlockReporter) -> None:
        self.host = host

    async def run(self, args: ReportBlockedArgs, ctx: ToolContext) -> ToolOutput:
        await self.host.report_blocked(ctx.agent, args.category, args.reason, ref=ctx.call)
        return ToolOutput(
            f"blocked ({args.category}): {args.reason}. Your turn ends here; the user is told.",
            ends_turn=True,
        )


DELEGATING: tuple[type[_CoordinationTool], ...] = (
    Delegate,
    SendMessage,
    CancelTask,
    WaitTasks,
    ListTasks,
)
REPORTING: tuple[type[_CoordinationTool], ...] = (
    ReportProgress,
    Complete,
    ReportBlocked,
    AskDecision,
    RaiseRisk,
    RequestDirectionChange,
)


def main_tools(team: Coordinator) -> list[AnyTool]:
    """The main agent's coordination tools."""
    return [tool(team) for tool in DELEGATING]


def subagent_tools(team: Coordinator, *, may_delegate: bool) -> list[AnyTool]:
    """A subagent's: its reporting tools, and the delegating ones if its type may."""
    tools: list[AnyTool] = [tool(team) for tool in REPORTING]
    if may_delegate:
        tools += [tool(team) for tool in DELEGATING]
    return tools
