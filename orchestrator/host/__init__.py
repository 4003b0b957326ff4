"""The host program's calls: a session run, or resumed, in one call (`run`, `resume`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator._face import lazy

if TYPE_CHECKING:
    from orchestrator.host.run import EventHandler, resume, run

_HOMES = {"EventHandler": "run", "resume": "run", "run": "run"}
__all__ = ["EventHandler", "resume", "run"]
__getattr__, __dir__ = lazy(__name__, _HOMES)
