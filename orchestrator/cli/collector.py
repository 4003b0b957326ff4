"""The garbage collector of the `orchestrator` process. A command's imports and setup
make tens of thousands of objects that live as long as the process (modules, classes,
the config's models): collecting among them as they are made finds next to nothing,
and a full pass over them later costs each full pass of a long run again. So while the
command starts, the youngest objects are collected rarely (`starting`); once its
session is set up (`settle`), what it made so far is left out of every collection for
good (`gc.freeze`), and the youngest objects are collected every `YOUNG` allocations.

Only for the process's own command (`main()` run as `orchestrator` or `python -m
orchestrator`): a program that calls `main([...])` keeps its collector as it set it.
"""

from __future__ import annotations

import gc

STARTING_YOUNG = 100_000
"""Allocations between two collections of the youngest objects while a command starts
(Python's: 700): none, for most commands, before their session runs."""

YOUNG = 7000
"""Then: a session's tasks make many objects, and a collection every 700 cost a task
on a worker about 2 ms each, under 1 at 7,000 (docs/performance.md)."""

_started = False


def starting() -> None:
    """The collector as a command starts (see the module)."""
    global _started
    _started = True
    gc.set_threshold(STARTING_YOUNG, *gc.get_threshold()[1:])


def settle(*, collect: bool = False) -> None:
    """The collector once the command's session is set up: what exists now left out of
    every collection (after one full collection first, with `collect`), the youngest
    objects collected every `YOUNG` allocations. Nothing unless `starting` ran in this
    process, and only the first time."""
    global _started
    if not _started:
        return
    _started = False
    if collect:
        gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG, *gc.get_threshold()[1:])
