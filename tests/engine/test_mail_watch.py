"""A task's workflow waits on its worker for its loop's end or for mail
(engine/mail_watch.py): one look every 0.2 s for all that wait, and mail seen only by a
look begun after the wait began."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from orchestrator.engine.mail_watch import EVERY, MailWatch


async def test_a_wait_ends_at_the_loop_s_end_or_at_mail_and_looks_only_while_some_wait(
    autojump_clock: trio.testing.MockClock,
) -> None:
    mailed: set[str] = set()
    looks: list[list[str]] = []

    async def look(workflows: list[str]) -> set[str]:
        looks.append(sorted(workflows))
        await trio.sleep(0.01)  # (the query's time)
        return mailed & set(workflows)

    watch = MailWatch(look)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch.run)
        await trio.sleep(10)
        assert looks == []  # nobody waits: no look

        ended = trio.Event()
        nursery.start_soon(_set_after, ended, 1.0)
        started = trio.current_time()
        assert await watch.wait("s/t1", ended) is False  # its loop ended: no mail
        assert trio.current_time() - started == pytest.approx(1.0)
        assert len(looks) == 4  # at 0.2, 0.41, 0.62, 0.83 s
        assert all(seen == ["s/t1"] for seen in looks)

        mailed.add("s/t2")
        started = trio.current_time()
        assert await watch.wait("s/t2", trio.Event()) is True
        assert trio.current_time() - started <= EVERY + 0.01  # the next look saw it
        assert looks[-1] == ["s/t2"]

        ended = trio.Event()
        ended.set()
        assert await watch.wait("s/t2", ended) is False  # ended and mailed: the end wins
        nursery.cancel_scope.cancel()


async def test_mail_seen_by_a_look_begun_before_a_wait_does_not_end_that_wait(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A workflow that has just received its mail waits again while a look is under way
    that may have read the message still unconsumed: that look does not count for it."""
    looking, go = trio.Event(), trio.Event()
    looks: list[list[str]] = []

    async def look(workflows: list[str]) -> set[str]:
        looks.append(sorted(workflows))
        if len(looks) == 1:
            looking.set()
            await go.wait()
            return {"s/a", "s/b"}
        return set()

    watch = MailWatch(look)
    results: dict[str, bool] = {}
    done = {"s/a": trio.Event(), "s/b": trio.Event()}

    async def waits(workflow: str, ended: trio.Event) -> None:
        results[workflow] = await watch.wait(workflow, ended)
        done[workflow].set()

    b_ended = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch.run)
        nursery.start_soon(waits, "s/a", trio.Event())
        await looking.wait()  # the first look, under way, with a's wait alone
        nursery.start_soon(waits, "s/b", b_ended)
        await trio.testing.wait_all_tasks_blocked()
        go.set()
        await done["s/a"].wait()
        assert results == {"s/a": True}  # b began after that look: not woken by it
        await trio.sleep(3 * EVERY)
        assert "s/b" not in results
        assert len(looks) >= 3
        assert all(seen == ["s/b"] for seen in looks[1:])
        b_ended.set()
        await done["s/b"].wait()
        nursery.cancel_scope.cancel()
    assert results == {"s/a": True, "s/b": False}


async def _set_after(event: trio.Event, seconds: float) -> None:
    await trio.sleep(seconds)
    event.set()
