"""The host program's calls: a session run, or resumed, in one call (`run`, `resume`),
from trio or asyncio; its events pulled (`stream`, `stream_resume`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator._face import lazy

if TYPE_CHECKING:
    from orchestrator.host.options import EventHandler
    from orchestrator.host.run import resume, run
    from orchestrator.host.stream import EventStream, stream, stream_resume

_HOMES = {
    "EventHandler": "options",
    "EventStream": "stream",
    "resume": "run",
    "run": "run",
    "stream": "stream",
    "stream_resume": "stream",
}
__all__ = ["EventHandler", "EventStream", "resume", "run", "stream", "stream_resume"]
__getattr__, __dir__ = lazy(__name__, _HOMES)
