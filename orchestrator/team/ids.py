"""Ids of new tasks and messages: derived from the fold, never counted, so a call that
fails takes none and a team that starts after a crash cannot hand one out twice."""

from __future__ import annotations

import contextlib
from collections.abc import Container, Iterator


@contextlib.contextmanager
def free_id(prefix: str, start: int, taken: Container[str], held: set[str]) -> Iterator[str]:
    """The first id `prefix` + n, from n = `start`, that neither the fold has (`taken`)
    nor a call whose records are on their way to the journal holds (`held`); held for
    the block."""
    number = start
    while (found := f"{prefix}{number}") in taken or found in held:
        number += 1
    held.add(found)
    try:
        yield found
    finally:
        held.discard(found)
