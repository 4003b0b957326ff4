"""The team tests' engine: a test that asks for `engine` runs once on each, its id
ending `[local]` and `[dbos]` (engines.py).

Which tests ask: those that run a session (in memory through `Scene`, or on disk
through `drive`) on trio's real clock. A test on `autojump_clock` stays on `local`: the
virtual clock would jump ahead while trio waits on DBOS's threads (launching it, starting
a workflow), so its timeouts would fire at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.engine import ENGINES
from tests.team.engines import Engine, engine_named


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Engine:
    return engine_named(request.param, tmp_path)
