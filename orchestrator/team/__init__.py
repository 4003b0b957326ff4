"""The multi-agent runtime: the team (a facade over its postbox, scheduler, turn factory
and round hooks), delegation, oversight, the main agent's and a subagent's loops, agent
definitions, and `drive`, which runs a session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator._face import lazy

if TYPE_CHECKING:
    from orchestrator.team.agent_files import load_definitions
    from orchestrator.team.definitions import AgentDefinition, Definitions
    from orchestrator.team.delegation import Delegation
    from orchestrator.team.drive import RunResult, drive
    from orchestrator.team.main_agent import MainOutcome, open_team, resume_tasks, run_main
    from orchestrator.team.oversight import Oversight, Policy
    from orchestrator.team.port import Runner, TaskPort
    from orchestrator.team.runtime import Team
    from orchestrator.team.settings import Limits, RunSettings, Seat
    from orchestrator.team.subagent import InProcessRunner, run_task

_HOMES = {
    "AgentDefinition": "definitions",
    "Definitions": "definitions",
    "Delegation": "delegation",
    "InProcessRunner": "subagent",
    "Limits": "settings",
    "MainOutcome": "main_agent",
    "Oversight": "oversight",
    "Policy": "oversight",
    "RunResult": "drive",
    "RunSettings": "settings",
    "Runner": "port",
    "Seat": "settings",
    "TaskPort": "port",
    "Team": "runtime",
    "drive": "drive",
    "load_definitions": "agent_files",
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
    "Seat",
    "TaskPort",
    "Team",
    "drive",
    "load_definitions",
    "open_team",
    "resume_tasks",
    "run_main",
    "run_task",
]

__getattr__, __dir__ = lazy(__name__, _HOMES)
