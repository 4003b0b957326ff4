"""The multi-agent runtime: the team, delegation, oversight, the main agent's and a
subagent's loops, agent definitions, and `drive`, which runs a session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator._face import lazy

if TYPE_CHECKING:
    from orchestrator.team.definitions import AgentDefinition, Definitions, load_definitions
    from orchestrator.team.delegation import Delegation
    from orchestrator.team.drive import RunResult, RunSettings, drive
    from orchestrator.team.main_agent import MainOutcome, open_team, resume_tasks, run_main
    from orchestrator.team.oversight import Oversight, Policy
    from orchestrator.team.runtime import Limits, Runner, Team, TeamSettings
    from orchestrator.team.subagent import InProcessRunner, run_task

_HOMES = {
    "AgentDefinition": "definitions",
    "Definitions": "definitions",
    "Delegation": "delegation",
    "InProcessRunner": "subagent",
    "Limits": "runtime",
    "MainOutcome": "main_agent",
    "Oversight": "oversight",
    "Policy": "oversight",
    "RunResult": "drive",
    "RunSettings": "drive",
    "Runner": "runtime",
    "Team": "runtime",
    "TeamSettings": "runtime",
    "drive": "drive",
    "load_definitions": "definitions",
    "open_team": "main_agent",
    "resume_tasks": "main_agent",
    "run_main": "main_agent",
    "run_task": "subagent",
}

__all__ = [
    "AgentDefinition",
    "Definitions",
    "Delegation",
    "InProcessRunner",
    "Limits",
    "MainOutcome",
    "Oversight",
    "Policy",
    "RunResult",
    "RunSettings",
    "Runner",
    "Team",
    "TeamSettings",
    "drive",
    "load_definitions",
    "open_team",
    "resume_tasks",
    "run_main",
    "run_task",
]

__getattr__, __dir__ = lazy(__name__, _HOMES)
