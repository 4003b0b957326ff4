"""Compaction in a team, in memory: subagents compact with their own anchors, mail that
arrives while an agent compacts is delivered once, a summary missing sections is retried
and then replaced by the fallback, and the breaker pauses compactions that free too
little."""

from __future__ import annotations

from collections.abc import Callable

import trio

from orchestrator import (
    CompactionStarted,
    ContextCompacted,
    MessagesDelivered,
    ModelRequest,
    Notice,
    ScriptedReply,
    ToolCallFinished,
    UsageUpdated,
    UserMessage,
)
from orchestrator.loop.anchors import HEADER
from orchestrator.models.base import COMPACTOR
from orchestrator.models.scripted import ScriptedWindow, default_summary
from orchestrator.team.queries import MAIN
from orchestrator.tools import Workspace
from tests.scenes import Brain, Reply, Scene, c, delegates_and_waits, reply, steps

WINDOW = ScriptedWindow(context=6_000)  # 5,000 tokens usable: compaction near 16,000 chars


class CompactingScene(Scene):
    """A scene whose model claims `WINDOW`; summary requests go to the `compactor` brain
    (a made-up summary by default)."""

    def __init__(self, workspace: Workspace, brains: dict[str, Brain], **limits: object) -> None:
        super().__init__(workspace, brains, **limits)
        self.model.window = WINDOW
        self.summaries: list[ModelRequest] = []

    def _answer(self, request: ModelRequest) -> Reply:
        if request.role == COMPACTOR:
            self.summaries.append(request)
            brain = self.brains.get(COMPACTOR)
            return brain(request) if brain else ScriptedReply(text=default_summary(request))
        return super()._answer(request)

    def compacted(self, agent: str = MAIN) -> list[ContextCompacted]:
        return [
            e for e in self.events.events if isinstance(e, ContextCompacted) and e.agent == agent
        ]


def reads(count: int, then: Callable[[ModelRequest], Reply] | ScriptedReply) -> Brain:
    """Reads the big files in turn, `count` times, then `then`."""

    def brain(request: ModelRequest) -> Reply:
        if request.step < count:
            return reply("", c("read_file", path=f"big{request.step % 3}.txt"))
        return then(request) if callable(then) else then

    return brain


def big_file(workspace: Workspace, chars: int = 3_500) -> None:
    for index in range(3):
        (workspace.root / f"big{index}.txt").write_text(str(index) * (chars - 1) + "\n")


async def test_a_subagent_compacts_with_the_anchors_of_its_own_task(workspace: Workspace) -> None:
    big_file(workspace)
    scene = CompactingScene(
        workspace,
        {
            MAIN: delegates_and_waits(description="survey", prompt="read big.txt often"),
            "t1": reads(12, reply("", c("complete", summary="read it 12 times"))),
        },
    )
    outcome = await scene.run()
    assert outcome.reason == "completed"
    assert len(scene.compacted("t1")) >= 2
    assert scene.compacted(MAIN) == []
    assert scene.state.tasks.get("t1").state == "completed"
    # Its anchors are its own: its task's brief, not the session's goal.
    anchors = [m.content for m in scene.state.agents["t1"].messages if _anchored(m)]
    assert anchors
    assert "read big.txt often" in anchors[-1]
    assert "the goal" not in anchors[-1].split("## Goal")[1].split("##")[0]


async def test_a_completion_arriving_while_the_parent_compacts_is_delivered_once(
    workspace: Workspace,
) -> None:
    big_file(workspace)
    scene: CompactingScene

    async def summary_once_t1_is_done(request: ModelRequest) -> ScriptedReply:
        assert scene.team is not None
        while (task := scene.state.tasks.get("t1")) is None or task.state != "completed":
            await scene.team.changed.wait()
        return ScriptedReply(text=default_summary(request))

    def main(request: ModelRequest) -> Reply:
        if request.step == 0:
            return reply("", c("delegate", description="quick", prompt="finish at once"))
        if request.step < 8:
            return reply("", c("read_file", path=f"big{request.step % 3}.txt"))
        if request.step == 8:
            return reply("", c("wait_tasks"))
        return reply("done")

    scene = CompactingScene(
        workspace,
        {
            MAIN: main,
            "t1": steps(reply("", c("complete", summary="quick job finished"))),
            COMPACTOR: summary_once_t1_is_done,
        },
    )
    outcome = await scene.run()
    assert outcome.reason == "completed"
    assert scene.compacted(MAIN)
    [completion] = [m for m in scene.mail.values() if m.kind == "completed"]
    deliveries = [
        e
        for e in scene.events.events
        if (isinstance(e, MessagesDelivered) and completion.message_id in e.ids)
        or (isinstance(e, ToolCallFinished) and completion.message_id in e.delivers)
    ]
    assert len(deliveries) == 1
    context = scene.state.agents[MAIN].messages
    said = [m for m in context if "quick job finished" in getattr(m, "content", "")]
    assert len([m for m in said if not _anchored(m)]) == 1


def _summaries(*texts: str) -> Callable[[ModelRequest], ScriptedReply]:
    def brain(request: ModelRequest) -> ScriptedReply:
        return ScriptedReply(text=texts[min(request.step, len(texts) - 1)])

    return brain


async def test_a_summary_missing_sections_is_repaired_once(workspace: Workspace) -> None:
    big_file(workspace)
    incomplete = "## Goal and constraints\nread\n## Next step\nmore"
    scene = CompactingScene(workspace, {MAIN: reads(6, reply("done"))})
    scene.brains[COMPACTOR] = lambda r: (
        ScriptedReply(text=incomplete) if r.step == 0 else ScriptedReply(text=default_summary(r))
    )
    assert (await scene.run()).reason == "completed"
    first = scene.compacted()[0]
    assert (first.method, first.attempts) == ("summary", 2)
    repair = scene.summaries[1].messages[-1]
    assert isinstance(repair, UserMessage)
    assert "User messages" in repair.content
    assert "Decisions" in repair.content
    assert scene.state.agents[MAIN].summary_calls == sum(e.attempts for e in scene.compacted())


async def test_two_failed_summaries_give_the_fallback(workspace: Workspace) -> None:
    big_file(workspace)
    scene = CompactingScene(workspace, {MAIN: reads(6, reply("done"))})
    scene.brains[COMPACTOR] = _summaries("no headings at all")
    assert (await scene.run()).reason == "completed"
    first = scene.compacted()[0]
    assert (first.method, first.attempts) == ("fallback", 2)
    summary = first.messages[1]
    assert isinstance(summary, UserMessage)
    assert "[compacted without a model summary]" in summary.content
    assert "the goal" in summary.content


async def test_compactions_that_free_too_little_pause_the_trigger(workspace: Workspace) -> None:
    # The goal alone is most of the window, and the anchors carry it whole: no compaction
    # can free a fifth of the context.
    for index in range(3):
        (workspace.root / f"small{index}.txt").write_text(str(index) * 100)

    def main(request: ModelRequest) -> Reply:
        if request.step < 40:
            return reply("", c("read_file", path=f"small{request.step % 3}.txt"))
        return reply("done")

    scene = CompactingScene(workspace, {MAIN: main})
    outcome = await scene.run(goal="g" * 13_000)
    assert outcome.reason == "completed"
    steps_at = _steps_at_compactions(scene)
    assert len(steps_at) >= 3
    # Two ineffective compactions in a row, then three rounds without one.
    assert steps_at[2] - steps_at[1] > 3, steps_at
    notices = [e for e in scene.events.events if isinstance(e, Notice) and "paused" in e.message]
    assert notices


def _steps_at_compactions(scene: CompactingScene) -> list[int]:
    """The main agent's model calls before each of its compactions."""
    found, steps_so_far = [], 0
    for event in scene.events.events:
        if event.kind == "assistant_replied" and event.agent == MAIN:
            steps_so_far += 1
        if isinstance(event, ContextCompacted) and event.agent == MAIN:
            found.append(steps_so_far)
    return found


def _anchored(message: object) -> bool:
    return isinstance(message, UserMessage) and message.content.startswith(HEADER)


async def test_the_agent_goes_on_while_its_summary_is_written(workspace: Workspace) -> None:
    big_file(workspace)
    went_on = trio.Event()
    scene: CompactingScene
    asked_while_pending: list[int] = []

    def main(request: ModelRequest) -> Reply:
        kinds = [e.kind for e in scene.events.events]
        if "compaction_started" in kinds and "context_compacted" not in kinds:
            asked_while_pending.append(request.step)
            went_on.set()
        return reads(8, reply("done"))(request)

    async def summary_after_the_agent_went_on(request: ModelRequest) -> ScriptedReply:
        await went_on.wait()  # a summary the agent waited for would never come
        return ScriptedReply(text=default_summary(request))

    scene = CompactingScene(workspace, {MAIN: main, COMPACTOR: summary_after_the_agent_went_on})
    with trio.fail_after(20):
        assert (await scene.run()).reason == "completed"
    [first, *_] = scene.compacted()
    assert asked_while_pending[:1] == [_steps_at_compactions(scene)[0] - 1]
    # The checkpoint holds the round made meanwhile, verbatim after the summary.
    replies_after = [m for m in first.messages if m.role == "assistant"]
    assert replies_after
    assert first.method == "summary"


async def test_at_its_whole_window_the_agent_waits_for_the_summary(
    workspace: Workspace,
) -> None:
    # One read takes the context from under the trigger to over the whole window.
    (workspace.root / "huge.txt").write_text("h" * 15_000)
    big_file(workspace)

    def main(request: ModelRequest) -> Reply:
        if request.step < 8:
            return reply("", c("read_file", path=f"big{request.step % 3}.txt"))
        if request.step == 8:
            return reply("", c("read_file", path="huge.txt"))
        return reply("done")

    scene = CompactingScene(workspace, {MAIN: main})
    assert (await scene.run()).reason == "completed"
    events = scene.events.events
    whole = [
        i for i, e in enumerate(events) if isinstance(e, CompactionStarted) and e.tokens >= e.usable
    ]
    assert whole, "no compaction started at the whole window"
    for start in whole:
        end = next(i for i in range(start, len(events)) if isinstance(events[i], ContextCompacted))
        between = [e.kind for e in events[start:end]]
        assert "assistant_replied" not in between  # it waited for its checkpoint
    # Below it, the agent went on while its summary was written.
    fraction = [
        i for i, e in enumerate(events) if isinstance(e, CompactionStarted) and e.tokens < e.usable
    ]
    assert fraction, "no compaction in the background before it"
    end = next(
        i for i in range(fraction[0], len(events)) if isinstance(events[i], ContextCompacted)
    )
    assert events[end].method == "summary"
    assert "assistant_replied" in [e.kind for e in events[fraction[0] : end]]


async def test_each_usage_event_says_how_full_the_context_is(workspace: Workspace) -> None:
    big_file(workspace)
    scene = CompactingScene(workspace, {MAIN: reads(6, reply("done"))})
    assert (await scene.run()).reason == "completed"
    usage = [e for e in scene.events.events if isinstance(e, UsageUpdated)]
    assert {e.usable for e in usage} == {WINDOW.context - 1_000}
    sizes = [e.context for e in usage]
    assert sizes[1] > sizes[0] > 0
    assert min(sizes[3:]) < max(sizes[:4])  # a compaction made it smaller


async def test_the_anchors_list_the_files_read_with_the_ref_to_recall(
    workspace: Workspace,
) -> None:
    big_file(workspace)
    scene = CompactingScene(workspace, {MAIN: reads(14, reply("done"))})
    assert (await scene.run()).reason == "completed"
    checkpoints = scene.compacted()
    assert len(checkpoints) >= 2
    last = checkpoints[-1]
    assert {path for path, _ in last.read} == {"big0.txt", "big1.txt", "big2.txt"}
    [anchors] = [m.content for m in last.messages if _anchored(m)]
    for path, ref in last.read:
        assert f'- {path} (recall("{ref}") shows what it read)' in anchors
