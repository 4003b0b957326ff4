"""Questions the team asks of the folded state (tasks and mailbox together): pure
functions of a `SessionState`, so every part of the team, and a runner, asks them alike.
"""

from __future__ import annotations

from collections.abc import Iterable

from orchestrator.errors import ToolFailed
from orchestrator.loop.assessment import REPEATS, AgentProgress
from orchestrator.loop.deps import Dependency, Verdict, closing_cycle, decide
from orchestrator.messages import AssistantMessage
from orchestrator.state.fold import SessionState
from orchestrator.state.mailbox import MAIN as MAIN
from orchestrator.state.mailbox import Mail
from orchestrator.state.tasks import SETTLED, TaskRecord
from orchestrator.team.definitions import AgentDefinition, Definitions

PLANNER = "planner"
"""The planner's agent id and role (team/planning.py)."""


def is_planner(agent: str) -> bool:
    """The planner (`planner`) or a re-planner (`planner-2`, ...: a fresh context each)."""
    return agent == PLANNER or agent.startswith(PLANNER + "-")


BUILDER = "builder"
"""The main agent's role when it builds an approved plan."""

PARKING = frozenset({"decision_required", "blocked"})  # kinds that park a task until answered


def task(state: SessionState, task_id: str) -> TaskRecord:
    """The task's record; a `ToolFailed` when there is none (naming no other task: an
    agent learns of tasks only from its own, see `own_task`)."""
    record = state.tasks.get(task_id)
    if record is None:
        raise ToolFailed(f"no task {task_id!r}")
    return record


def own_task(state: SessionState, agent: str, task_id: str) -> TaskRecord:
    """`agent`'s own task `task_id`. Another agent's task gets the same error as one that
    does not exist, listing only `agent`'s own: which tasks others run is not its to
    know."""
    record = state.tasks.get(task_id)
    if record is None or record.owner != agent:
        mine = ", ".join(t.task_id for t in state.tasks.tasks.values() if t.owner == agent)
        raise ToolFailed(f"no task {task_id!r} of yours; your tasks: {mine or 'none'}")
    return record


def mail_from_owner(state: SessionState, task_id: str) -> list[Mail]:
    """Undelivered messages from the task's owner."""
    owner = task(state, task_id).owner
    return [m for m in state.mailbox.undelivered(task_id) if m.sender == owner]


def has_work(state: SessionState, record: TaskRecord) -> bool:
    """Live, waiting for its dependencies, or completed while its owner wrote to it (it
    goes on to read that)."""
    if record.state not in SETTLED:
        return True
    return record.state == "completed" and bool(mail_from_owner(state, record.task_id))


def live_children(state: SessionState, agent: str) -> list[TaskRecord]:
    """`agent`'s tasks that are live or about to be."""
    return [t for t in state.tasks.children(agent) if has_work(state, t)]


def orphans(state: SessionState) -> list[TaskRecord]:
    """Live tasks whose owner task has ended: nobody above them waits for them but the
    main agent, which answers for the session (it waits for them before it ends)."""
    found = []
    for record in state.tasks.live() + state.tasks.waiting():
        owner = state.tasks.get(record.owner)
        if owner is not None and not has_work(state, owner):
            found.append(record)
    return found


def waits_for(state: SessionState, agent: str, task_id: str) -> bool:
    """Whether the task is parked on a question or a block `agent` has not answered, or,
    `agent` being its owner, waits for plan tasks nobody has delegated (`undelegated`)."""
    record = task(state, task_id)
    if record.state == "waiting_deps":
        return record.owner == agent and bool(undelegated(state, record))
    if record.state != "waiting_decision":
        return False
    return any(m.task_id == task_id and m.kind in PARKING for m in state.mailbox.unanswered(agent))


# --- dependencies --------------------------------------------------------------------------


def resolve_after(
    state: SessionState, owner: str, entries: Iterable[str] | None, plan_ref: str
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What a task `owner` delegates for `plan_ref` waits for, as (task ids, plan refs):
    each entry of `delegate`'s `after` resolved (a plan ref when the approved plan has
    that task or a task has that plan_ref, else one of `owner`'s own tasks: anything
    else is a `ToolFailed` saying what it could be), and the plan task's own
    dependencies, which the model cannot leave out."""
    tasks = state.tasks
    after: list[str] = []
    after_plan: list[str] = []
    for entry in entries or ():
        if plan_ref and entry == plan_ref:
            raise ToolFailed(
                f"after: {entry!r} is this task's own plan_ref; a task cannot wait for itself"
            )
        if state.plans.task(entry) is not None or tasks.by_plan_ref(entry) is not None:
            found = after_plan
        elif (record := tasks.get(entry)) is not None and record.owner == owner:
            found = after
        else:
            mine = [t.task_id for t in tasks.children(owner)]
            plan = state.plans.approved
            ids = [t.id for t in plan.tasks] if plan is not None else []
            refs = dict.fromkeys([*ids, *tasks.plan_refs()])
            raise ToolFailed(
                f"after: {entry!r} is neither one of your tasks nor a plan task; it could "
                f"be one of your tasks ({', '.join(mine) or 'none'}) or a plan task "
                f"({', '.join(refs) or 'none'})"
            )
        if entry not in found:
            found.append(entry)
    planned = state.plans.task(plan_ref)
    for dep in planned.depends_on if planned is not None else ():
        if dep not in after_plan:
            after_plan.append(dep)
    return tuple(after), tuple(after_plan)


def dependencies(
    state: SessionState, after: Iterable[str], after_plan: Iterable[str]
) -> list[Dependency]:
    """A task's dependencies as they stand: task ids, then plan refs (each the latest
    task with that plan_ref, or none yet)."""
    found = [_dependency(state, state.tasks.get(t), t) for t in after]
    for plan_ref in after_plan:
        record = state.tasks.by_plan_ref(plan_ref)
        which = record.task_id if record is not None else "not delegated yet"
        found.append(_dependency(state, record, f"plan task {plan_ref} ({which})"))
    return found


def _dependency(state: SessionState, record: TaskRecord | None, label: str) -> Dependency:
    if record is None:
        return Dependency(label)
    root = state.tasks.get(record.dependency) if record.state == "cancelled" else None
    return Dependency(
        label,
        task=record.task_id,
        state=record.state,
        root=root.task_id if root is not None else "",
        root_state=root.state if root is not None else "",
    )


def readiness(state: SessionState, record: TaskRecord) -> Verdict:
    """Whether a task waiting for its dependencies may start now, waits on, or can never
    run (`loop/deps.py` decides). A plan task also waits while its write scope overlaps
    a live task's, its own owner and those above it left out."""
    deps = dependencies(state, record.after, record.after_plan)
    conflict = ""
    if record.serialise:
        exclude = ancestors(state, record.owner) | {record.task_id}
        other = state.tasks.scope_conflict(record.write_scope, exclude=exclude)
        conflict = other.task_id if other is not None else ""
    return decide(deps, conflict=conflict)


def upstream(state: SessionState, after: Iterable[str], after_plan: Iterable[str]) -> set[str]:
    """The tasks that complete before a task with these dependencies starts: its
    dependencies, theirs, and so on."""
    found: set[str] = set()
    queue = [*after, *(r.task_id for p in after_plan if (r := state.tasks.by_plan_ref(p)))]
    while queue:
        task_id = queue.pop()
        record = state.tasks.get(task_id)
        if task_id in found or record is None:
            continue
        found.add(task_id)
        queue += record.after
        queue += [r.task_id for p in record.after_plan if (r := state.tasks.by_plan_ref(p))]
    return found


def cycle_closed(
    state: SessionState, plan_ref: str, after: Iterable[str], after_plan: Iterable[str]
) -> list[str]:
    """The dependency cycle a new task for `plan_ref` would close by waiting for `after`
    (task ids) and `after_plan` (plan refs), named (`p`, `q`, `p`: plan refs, or task
    ids for tasks of no plan task), or [] when it closes none. Only a plan ref can be
    waited for before its task exists, so a task of none closes no cycle. The waits are
    those of the tasks waiting for their dependencies now, and of the plan's tasks not
    delegated yet (the plan's own dependencies, which their tasks will wait for)."""
    if not plan_ref:
        return []
    tasks = state.tasks

    def node(record: TaskRecord) -> str:
        latest = tasks.by_plan_ref(record.plan_ref) if record.plan_ref else None
        return record.plan_ref if latest is record else f"task {record.task_id}"

    def waits(ids: Iterable[str], refs: Iterable[str]) -> list[str]:
        found = [node(r) if (r := tasks.get(t)) is not None else f"task {t}" for t in ids]
        return found + list(refs)

    edges: dict[str, list[str]] = {}
    for record in tasks.waiting():
        edges[node(record)] = waits(record.after, record.after_plan)
    plan = state.plans.approved
    for planned in plan.tasks if plan is not None else ():
        if tasks.by_plan_ref(planned.id) is None:
            edges[planned.id] = list(planned.depends_on)
    found = closing_cycle(plan_ref, waits(after, after_plan), edges)
    return [name.removeprefix("task ") for name in found]


def undelegated(state: SessionState, record: TaskRecord) -> list[str]:
    """The plan refs a waiting task waits for, itself or through the waiting tasks it
    waits for, that no task has: nothing will start it until someone delegates them."""
    found: list[str] = []
    seen: set[str] = set()
    queue = [record]
    while queue:
        current = queue.pop()
        if current.task_id in seen:
            continue
        seen.add(current.task_id)
        for plan_ref in current.after_plan:
            dep = state.tasks.by_plan_ref(plan_ref)
            if dep is None and plan_ref not in found:
                found.append(plan_ref)
            elif dep is not None and dep.state == "waiting_deps":
                queue.append(dep)
        for task_id in current.after:
            dep = state.tasks.get(task_id)
            if dep is not None and dep.state == "waiting_deps":
                queue.append(dep)
    return found


def ancestors(state: SessionState, agent: str) -> frozenset[str]:
    """`agent`'s own task and every task above it (empty for the main agent)."""
    found = set()
    record = state.tasks.get(agent)
    while record is not None:
        found.add(record.task_id)
        record = state.tasks.get(record.owner)
    return frozenset(found)


def progress(state: SessionState, agent: str) -> AgentProgress:
    """The agent's progress as the fold has it, read without adding an entry for an
    agent the fold has none for (a read must not make the live state differ from the
    same records folded again on resume)."""
    return state.progress.get(agent) or AgentProgress()


def repeating(state: SessionState, agent: str) -> bool:
    """The same call again and again: the turn ends, for the assessment to stop it."""
    return progress(state, agent).call_repeats >= REPEATS


def definition(state: SessionState, definitions: Definitions, agent: str) -> AgentDefinition | None:
    """The type of the task `agent` works (None for the main agent)."""
    record = state.tasks.get(agent)
    return None if record is None else definitions.get(record.agent_type)


def unanswerable(state: SessionState, *, main_idle: bool) -> list[Mail]:
    """The open questions (and reports of being blocked) that park their task and that
    no agent is there to answer: asked of a task that is not running (it ended, or it
    sleeps waiting itself), or of the main agent when its turn is over (`main_idle`).
    Oldest first. The person answers them (`resume --message`), or nobody does."""
    found = []
    for parked in state.tasks.live():
        if parked.state != "waiting_decision":
            continue
        owner = state.tasks.get(parked.owner)
        if owner is None and not (parked.owner == MAIN and main_idle):
            continue
        if owner is not None and owner.state == "running":
            continue
        found += [
            m
            for m in state.mailbox.unanswered(parked.owner)
            if m.sender == parked.task_id and m.kind in PARKING
        ]
    found.sort(key=lambda m: m.posted_seq)
    return found


def describe_question(state: SessionState, mail: Mail) -> str:
    """One line for a person: which task asks what, of whom."""
    owner = state.tasks.get(mail.recipient)
    how = {
        "waiting_children": "waits for its own tasks",
        "waiting_decision": "waits for an answer itself",
    }
    whom = (
        "the main agent"
        if owner is None
        else f"task {owner.task_id}, which {how.get(owner.state, 'has ' + owner.state)}"
    )
    return f"task {mail.sender} asks ({mail.message_id}, of {whom}): {mail.summary}"


def final_answer(state: SessionState) -> str:
    """The text of the main agent's last reply that has any."""
    context = state.agents.get(MAIN)
    for message in reversed(context.messages if context is not None else ()):
        if isinstance(message, AssistantMessage) and message.text.strip():
            return message.text
    return ""
