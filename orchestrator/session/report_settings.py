"""The lines of a session's report (`sessions show`) that say how it runs: its settings
that differ from the defaults, its engine, its sandbox, the plan approval given in advance,
and where its tasks on workers were read."""

from __future__ import annotations

from typing import Any

import orjson

from orchestrator.text import label, visible


def settings_line(settings: dict[str, Any] | None) -> str:
    """The session's settings, as the values that differ from the defaults."""
    if settings is None:
        return "none journaled yet (the next run takes them from its config and flags)"
    from orchestrator.messages import plain
    from orchestrator.state.settings import SessionSettings

    defaults = plain(SessionSettings())
    changed = [
        f"{key} {visible(orjson.dumps(value).decode())}"
        for key, value in settings.items()
        if value != defaults.get(key) and key not in ENGINE_KEYS + SECURITY_KEYS
    ]
    return "the defaults, but " + ", ".join(changed) if changed else "the defaults"


ENGINE_KEYS = ("engine", "engine_database", "engine_workers")
"""The settings `engine_line` shows, on a line of their own."""
SECURITY_KEYS = ("sandbox", "network", "approve", "approve_through")
"""The settings `sandbox_line` and `approval_line` show, on lines of their own."""


def sandbox_line(settings: dict[str, Any] | None) -> str:
    """How the session's shell commands are confined: the sandbox's level and whether
    they reach the network, as journaled (a resume keeps them unless a flag loosens
    them)."""
    if settings is None:
        return ""
    level, network = settings.get("sandbox"), settings.get("network")
    if level is None:
        return "not journaled: each run's own (--sandbox and [shell], or a program's tools)"
    if level == "off":
        return "off (commands run unsandboxed)"
    return f"{visible(str(level))}, {'network allowed' if network else 'no network'}"


def approval_line(settings: dict[str, Any] | None) -> str:
    """The plan approval given in advance (`--approve`), as journaled: a resume keeps it."""
    if settings is None:
        return ""
    match settings.get("approve", ""):
        case "all":
            return "--approve all: every plan version"
        case "seen":
            through = settings.get("approve_through", 1)
            seen = "v1" if through == 1 else f"v1 to v{through}"
            return (
                f"--approve: plan {seen}, and a later version that adds no task and no "
                "command to what was approved"
            )
    return "none in advance: each plan version is decided" if settings.get("plan") else ""


def engine_line(settings: dict[str, Any] | None) -> str:
    """Where the session's delegated tasks run: its engine, the dbos engine's database
    (its password hidden, as journaled), and whether on workers."""
    if settings is None:
        return ""
    engine = settings.get("engine", "local")
    if engine == "local":
        return "local (in the session's process)"
    database = (
        settings.get("engine_database") or "the SQLite file engine/dbos.sqlite in the session"
    )
    workers = ", its tasks on workers" if settings.get("engine_workers") else ""
    return f"{visible(engine)} on {label(database, 200)}{workers}"


SHOWN_IDS = 6
"""The tasks on workers named on their line (more are counted)."""


def workers_line(shown: dict[str, Any] | None) -> str:
    """Where the records of the session's tasks on workers were read, or why not: their
    transcripts and usage are in the engine's database (`on_workers` of the report)."""
    if shown is None:
        return ""
    where = label(shown["database"], 200) if shown["database"] else "the engine's database"
    read, unread = shown["tasks"], visible(shown["unread"])
    if not read:
        why = f", not shown: {unread}" if unread else ": none of its tasks has any yet"
        return f"its tasks' transcripts and usage are in {where}{why}"
    named = ", ".join(label(task, 40) for task in read[:SHOWN_IDS])
    if len(read) > SHOWN_IDS:
        named = f"{len(read)} tasks ({named}, …)"
    line = f"{named}: their transcripts and usage read from {where}"
    return line + (f"; not all: {unread}" if unread else "")
