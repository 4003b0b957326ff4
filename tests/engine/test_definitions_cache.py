"""A worker reads each workspace's agent types once and again only when a file they come
from changes (team/agent_files.py's `DefinitionsCache`): a file edited (its size or
time), added or removed, the user's or the project's, and the trusted projects' file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrator import stamps
from orchestrator.errors import ConfigError
from orchestrator.team.agent_files import DefinitionsCache, load_definitions
from orchestrator.team.definitions import Definitions
from orchestrator.team.trust import TRUST_FILE, TrustStore, fingerprint
from orchestrator.tools.base import WORKSPACE_TOOLS

SCOUT = 'description = "{}"\nprompt = "look around"\n'


@pytest.fixture(autouse=True)
def settled_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The files here are written a moment before they are read: taken as settled (the
    last test sees what happens before they are)."""
    monkeypatch.setattr(stamps, "RACY_NS", 0)


def cache_for(user: Path) -> DefinitionsCache:
    def load(project: Path) -> Definitions:
        return load_definitions(
            project_dir=project,
            user_dir=user,
            trust=TrustStore(user),
            ask=None,
            known_tools=WORKSPACE_TOOLS,
        )

    return DefinitionsCache(load, user)


def write(path: Path, text: str, *, later: int = 0) -> None:
    """`text` in `path`, its time moved `later` seconds on (an edit within the clock's
    tick must count too: here, one of the same size)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if later:
        found = path.stat()
        os.utime(path, ns=(found.st_atime_ns, found.st_mtime_ns + later * 1_000_000_000))


def test_definitions_are_read_once_while_their_files_are_unchanged(tmp_path: Path) -> None:
    user, project = tmp_path / "user", tmp_path / "project"
    project.mkdir()
    write(project / ".orchestrator" / "agents" / "scout.toml", SCOUT.format("looks"))
    cache = cache_for(user)
    assert cache.known(project) is None
    first = cache.get(project)
    assert first.get("scout").description == "looks"
    assert cache.get(project) is first
    assert cache.known(project) is first  # (its files looked at, none read)
    assert cache.loads == 1


@pytest.mark.parametrize("change", ["edited", "same size, later", "added", "removed", "user's"])
def test_a_changed_file_is_read_again(tmp_path: Path, change: str) -> None:
    user, project = tmp_path / "user", tmp_path / "project"
    agents = project / ".orchestrator" / "agents"
    write(agents / "scout.toml", SCOUT.format("looks"))
    cache = cache_for(user)
    cache.get(project)
    match change:
        case "edited":
            write(agents / "scout.toml", SCOUT.format("looks further"))
        case "same size, later":
            write(agents / "scout.toml", SCOUT.format("books"), later=1)
        case "added":
            write(agents / "other.toml", SCOUT.format("another"))
        case "removed":
            (agents / "scout.toml").unlink()
        case "user's":
            write(user / "agents" / "scout.toml", SCOUT.format("mine"))
    assert cache.known(project) is None
    again = cache.get(project)
    assert cache.loads == 2
    expected = {
        "edited": "looks further",
        "same size, later": "books",
        "removed": None,
        "added": "looks",
        "user's": "looks",  # (the project's file over the user's)
    }[change]
    assert (again.get("scout").description if "scout" in again else None) == expected


def test_each_workspace_has_its_own(tmp_path: Path) -> None:
    user = tmp_path / "user"
    one, two = tmp_path / "one", tmp_path / "two"
    write(one / ".orchestrator" / "agents" / "scout.toml", SCOUT.format("one"))
    write(two / ".orchestrator" / "agents" / "scout.toml", SCOUT.format("two"))
    cache = cache_for(user)
    assert [cache.get(p).get("scout").description for p in (one, two, one, two)] == [
        "one",
        "two",
        "one",
        "two",
    ]
    assert cache.loads == 2


def test_a_trust_given_later_is_seen_and_a_refusal_is_not_kept(tmp_path: Path) -> None:
    # A project file that widens needs the user's trust: refused (and not cached) until
    # the trusted projects' file says so.
    user, project = tmp_path / "user", tmp_path / "project"
    write(project / ".orchestrator" / "agents" / "explorer.toml", "max_rounds = 500\n")
    cache = cache_for(user)
    with pytest.raises(ConfigError, match="you have not trusted"):
        cache.get(project)
    wider = {"agents": {"explorer": {"max_rounds": 500}}}
    TrustStore(user).trust(project, fingerprint(wider))
    assert (user / TRUST_FILE).exists()
    assert cache.get(project).get("explorer").max_rounds == 500


def test_definitions_read_just_after_their_files_changed_are_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file changed within the clock's tick may change again with the same stat: what
    was read from it is read again until it has settled."""
    monkeypatch.setattr(stamps, "RACY_NS", 3_600 * 1_000_000_000)  # all "just now"
    user, project = tmp_path / "user", tmp_path / "project"
    write(project / ".orchestrator" / "agents" / "scout.toml", SCOUT.format("looks"))
    cache = cache_for(user)
    assert cache.get(project).get("scout").description == "looks"
    assert cache.known(project) is None
    cache.get(project)
    assert cache.loads == 2
    monkeypatch.setattr(stamps, "RACY_NS", 0)  # settled: kept from the next read on
    kept = cache.get(project)
    assert cache.get(project) is kept
    assert cache.known(project) is kept
    assert cache.loads == 3
