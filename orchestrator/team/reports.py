"""A subagent's reports to its owner (`report_progress`, `complete`, `report_blocked`,
`ask_decision`, `raise_risk`, `request_direction_change`), and the checks a completion
passes first: the files it says it changed against those it changed, its type's
verification and its plan task's acceptance check. `Delegation` (the tools'
`Coordinator`) hands every report here.
"""

from __future__ import annotations

from typing import Any

from orchestrator.errors import ToolFailed
from orchestrator.state.fold import USER, SessionState
from orchestrator.state.mailbox import MailKind
from orchestrator.state.tasks import TaskRecord, TaskState
from orchestrator.team import queries
from orchestrator.team.asking import ask_host, question
from orchestrator.team.oversight import Oversight
from orchestrator.team.port import SessionLike
from orchestrator.team.postbox import Postbox
from orchestrator.team.scheduler import Scheduler
from orchestrator.team.settings import RunSettings
from orchestrator.team.writes import Writes
from orchestrator.tools.base import ToolOutput


class Reports:
    """What a subagent's report tools do."""

    def __init__(
        self,
        run: RunSettings,
        session: SessionLike,
        postbox: Postbox,
        scheduler: Scheduler,
        oversight: Oversight,
        writes: Writes,
    ) -> None:
        self._run = run
        self._session = session
        self._postbox = postbox
        self._scheduler = scheduler
        self._oversight = oversight
        self._writes = writes

    @property
    def _state(self) -> SessionState:
        return self._session.state

    async def report(
        self,
        agent: str,
        kind: MailKind,
        summary: str,
        *,
        ref: str = "",
        data: dict[str, Any] | None = None,
        requires_ack: bool = False,
        ends_turn: bool = False,
        state: TaskState | None = None,
    ) -> ToolOutput:
        task = self._state.tasks.get(agent)
        if task is None:
            raise ToolFailed(f"{kind}: only a subagent working a task reports to an owner")
        mail = self._state.mailbox.by_call(agent, ref)
        if mail is not None and mail.posted_seq < task.revived_seq:
            # This call ran before a crash, and the task has moved on since (revived by a
            # follow-up): what it did then is done; it changes nothing now.
            return ToolOutput(f"already reported ({mail.message_id})")
        if mail is None and not task.live:
            # A settled task changes only when its owner revives it: what it handed in
            # (or why it failed, or was cancelled) stands.
            raise ToolFailed(
                f"{kind}: task {agent} is already {task.state}; a settled task reports "
                "nothing more (its owner may revive it with a follow-up)"
            )
        answer = None
        if mail is None:
            if kind == "completed":
                checked = self._writes.check_files(agent, data or {})
                _refuse_unexplained(checked["outside_scope"], (data or {}).get("risks") or ())
                await self._verify_completion(agent)
                await self._accept(task)
                data = {**(data or {}), **checked}
            answer = await self._host_answer(task, kind, summary, data)
            mail = await self._postbox.post(
                agent,
                task.owner,
                agent,
                kind,
                summary,
                data=data,
                requires_ack=requires_ack,
                ref=ref,
            )
        if state and task.state != state:
            await self._scheduler.set_state(
                agent, state, by=agent, reason=summary if state != "completed" else ""
            )
        if answer is not None:
            # The owner is told of the question too, and reads it answered.
            reply = await self._postbox.post(
                USER, agent, agent, "answer", answer, in_reply_to=mail.message_id
            )
            return ToolOutput(
                f"the user answered ({reply.message_id}); your turn ends, and the answer "
                "starts your next one",
                ends_turn=ends_turn,
            )
        said = {
            "progress": "progress reported to your owner",
            "completed": "completion handed to your owner; your task is complete and your "
            "turn ends here",
            "blocked": "your owner is told you are blocked; your turn ends, and its answer "
            "starts your next one",
            "decision_required": "question sent to your owner; your turn ends, and the "
            "answer starts your next one",
            "risk_alert": "risk reported to your owner; carry on",
            "direction_change_request": "proposal sent to your owner, who will answer; "
            "carry on meanwhile",
        }[kind]
        return ToolOutput(f"{said} ({mail.message_id})", ends_turn=ends_turn)

    async def _host_answer(
        self, task: TaskRecord, kind: str, summary: str, data: dict[str, Any] | None
    ) -> str | None:
        """The host program's answer to a question the task is about to ask its owner
        (None: no host answers questions, or it leaves this one to the owner)."""
        answer = self._run.answer
        if answer is None or kind not in queries.PARKING:
            return None
        return await ask_host(answer, question(task, kind, summary, data))

    async def _verify_completion(self, agent: str) -> None:
        """A type with `verify` commands completes only once they pass: a failure
        refuses the `complete` call, with the failing output, and the task goes on."""
        definition = queries.definition(self._state, self._run.definitions, agent)
        if definition is None or not definition.verify:
            return
        failure = await self._oversight.verify_in_call(agent, definition.verify)
        if failure:
            raise ToolFailed(
                "complete refused: your type's verification did not pass; fix the cause, "
                f"then call complete again.\n{failure}"
            )

    async def _accept(self, task: TaskRecord) -> None:
        """A plan task completes only once the plan's acceptance check for it passes: a
        failure refuses the `complete` call with the check's output, and the task goes
        on (docs/plans.md)."""
        planned = self._state.plans.task(task.plan_ref) if task.plan_ref else None
        if planned is None or not planned.acceptance:
            return
        failure = await self._oversight.verify_in_call(task.task_id, (planned.acceptance,))
        if failure:
            raise ToolFailed(
                f"complete refused: the plan's acceptance check for task {planned.id} did "
                f"not pass; fix the cause, then call complete again.\n{failure}"
            )


def _refuse_unexplained(outside: list[str], risks: Any) -> None:
    """A task whose commands changed files outside its write scope (next to a file-level
    entry, within the sandbox's directories, or anywhere with the sandbox off) completes
    only once its `risks` name each of them: it has seen them, undone or explained them,
    and its owner reads them (and the session's own list, `outside_scope`)."""
    said = " ".join(str(r) for r in risks)
    unexplained = [path for path in outside if path not in said]
    if unexplained:
        raise ToolFailed(
            "complete refused: your commands changed files outside your write scope: "
            f"{', '.join(unexplained)}. Put them back as they were (remove those you "
            "made), or ask your owner with request_direction_change; then call complete "
            "again naming each of them in `risks` (what you did about it)"
        )
