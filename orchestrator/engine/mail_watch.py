"""Which of the tasks running on a worker have mail waiting for them in DBOS.

A task's workflow (engine/workflow.py) does not wait in DBOS's `recv` while its loop
runs: each `recv` is four of DBOS's transactions, and waking it when the loop ends was a
message of the worker's own, a fifth workflow's worth of them, for every task. It waits
here instead, on the worker's trio loop, for its loop's end or for mail, and receives
only when mail is there. One query every `EVERY` seconds, for all the tasks that wait,
reads which of them DBOS holds unconsumed messages for (`Store.mailed`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import trio

EVERY = 0.2  # seconds between looks for mail (the session looks at its tasks' news as often)

Look = Callable[[list[str]], Awaitable[set[str]]]
"""Those of some workflows that mail waits for (`Store.mailed` in a thread)."""


@dataclass
class _Wait:
    since: int  # how many looks had begun when the wait began
    woken: trio.Event = field(default_factory=trio.Event)
    mailed: bool = False


class MailWatch:
    """The waits of the workflows running here, and the looks that end them."""

    def __init__(self, look: Look) -> None:
        self._look = look
        self._waits: dict[str, _Wait] = {}
        self._someone = trio.Event()  # set while anyone waits
        self._looks = 0  # begun so far

    async def wait(self, workflow_id: str, ended: trio.Event) -> bool:
        """Until mail waits for `workflow_id` (True) or `ended` is set (False). Mail is
        seen only by a look begun after this wait began, so mail its workflow received
        just before (and has consumed) does not count again."""
        wait = self._waits[workflow_id] = _Wait(self._looks)
        self._someone.set()
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_set_when, ended, wait.woken)
                await wait.woken.wait()
                nursery.cancel_scope.cancel()
        finally:
            del self._waits[workflow_id]
            if not self._waits:
                self._someone = trio.Event()
        return wait.mailed and not ended.is_set()

    async def run(self) -> None:
        """Look for the waiting workflows' mail every `EVERY` seconds while any wait."""
        while True:
            await self._someone.wait()
            await trio.sleep(EVERY)
            if not self._waits:
                continue
            self._looks += 1
            look = self._looks
            found = await self._look(list(self._waits))
            for workflow_id in found:
                wait = self._waits.get(workflow_id)
                if wait is not None and wait.since < look:
                    wait.mailed = True
                    wait.woken.set()


async def _set_when(ended: trio.Event, woken: trio.Event) -> None:
    await ended.wait()
    woken.set()
