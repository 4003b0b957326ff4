"""The shell's sandbox: what a command may write, read and reach, and how it is entered.

Levels (`[shell] sandbox`, `--sandbox`):

- `off`: the command runs with the user's rights, as orchestrator does;
- `workspace` (the default): writes only beneath the workspace (for a subagent, the
  directories of its write-scope entries, and the files it names by themselves) and a
  scratch `TMPDIR`, never in what runs before or outside the sandbox (`.git`, `.venv`,
  orchestrator's own installation and interpreter: read-only, and a subagent's
  `node_modules`); reads anywhere the user can but the session's directory; no socket
  file outside the workspace and the scratch directory (`SOCKET_DIRS`); no network but a
  loopback of its own unless `[shell] network = true`; orchestrator and every other
  process out of sight (a PID namespace with its own `/proc`); no new privileges;
- `strict`: `workspace`, and reads and execution only beneath the workspace, the scratch
  directory, the system's directories (`/usr`, `/lib`, `/etc`, ...) and the Python that
  runs orchestrator.

The mechanisms are Linux's: user, mount, PID and network namespaces, `no_new_privs` and
Landlock, entered in the child before the command is `exec`ed (`sandbox_exec.py`, run by
the interpreter as a script), never in orchestrator itself. Where they are missing (an
old kernel, user namespaces disabled, not Linux) `Sandbox.unavailable()` says why, and
the command runs unsandboxed unless `required` (the CLI refuses to start instead).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import msgspec

from orchestrator.tools import sandbox_exec

Level = Literal["off", "workspace", "strict"]
LEVELS: tuple[Level, ...] = ("off", "workspace", "strict")
HELPER = Path(__file__).with_name("sandbox_exec.py")

SYSTEM_DIRS = (
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/bin",
    "/sbin",
    "/etc",
    "/opt",
    "/dev",
    "/proc",
    "/sys",
    "/run",
)
"""What a `strict` command may read and execute besides its workspace and scratch."""
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty")
"""The device files every command may write to (`> /dev/null`)."""
GLOB = frozenset("*?[")
SOCKET_DIRS = (
    "/tmp",
    "/var/tmp",
    "/run/user",
    "/run/screen",
    "/run/tmux",
    "/run/dbus",
    "/run/docker.sock",
    "/run/podman",
    "/run/containerd",
)
"""Where socket files of the user's other processes live (tmux, screen, X11, D-Bus, the
ssh and gpg agents, Docker): hidden from a command where Landlock cannot guard socket
files (before ABI 9), with the home's `HOME_SOCKET_DIRS` and those the environment names
(`socket_places`)."""
HOME_SOCKET_DIRS = (".ssh", ".gnupg", ".docker", ".tmux", ".screen", ".colima", ".lima")
SOCKET_VARIABLES = ("SSH_AUTH_SOCK", "TMUX", "DBUS_SESSION_BUS_ADDRESS", "DOCKER_HOST")
TRUSTED_DIRS = (".git", ".venv")
"""Run later, outside the sandbox (git's hooks and config, a venv's scripts): read-only
for every command, but for the main agent's where the person allows (`Sandbox.writable`,
`[shell] writable`)."""
SCOPED_DIRS = (*TRUSTED_DIRS, "node_modules")
"""Never inside a subagent's write scope, whatever its directories: read-only for it."""
PACKAGE = Path(__file__).resolve().parents[1]
SCRATCH_PREFIX = "orchestrator-scratch-"


class Place(msgspec.Struct, frozen=True):
    """Where a command may write: `path`, resolved, and a descriptor of it opened without
    following a link (`fd`), which the Landlock rule is made on: what was checked is what
    is granted, whatever the path has become since."""

    path: Path
    fd: int

    @property
    def pinned(self) -> str:
        return f"/proc/self/fd/{self.fd}"


@dataclass(frozen=True)
class Sandbox:
    """How the shell's commands are confined. `probe="unavailable"` makes this machine
    look like one without the mechanisms (for tests of that path)."""

    level: Level = "workspace"
    network: bool = False
    required: bool = False
    probe: Literal["auto", "unavailable"] = "auto"
    # Of `TRUSTED_DIRS`, those the main agent's commands may write (a subagent's, never).
    writable: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        """Whether commands run sandboxed: a level other than `off`, on a machine that
        has what it takes."""
        return self.level != "off" and self.unavailable() is None

    def unavailable(self) -> str | None:
        """Why this machine cannot sandbox a command, or None when it can."""
        if self.probe == "unavailable":
            return "the sandbox is turned off for this machine ([shell] sandbox_probe)"
        return _probe(self.network)

    def describe(self) -> str:
        """How a command runs, as the approval prompt says it."""
        if self.level == "off":
            return "not sandboxed: the sandbox is off"
        why = self.unavailable()
        if why is not None:
            return f"not sandboxed: {why}"
        network = "network allowed" if self.network else "no network"
        return f"sandboxed: {self.level}, {network}"

    def protection(self, abi: int | None = None) -> str:
        """How socket files are kept from commands here (or on a kernel of Landlock ABI
        `abi`), in one line (said at start-up)."""
        abi = sandbox_exec.landlock_abi() if abi is None else abi
        if abi >= 9:
            return f"socket files outside the workspace: refused by Landlock (ABI {abi})"
        return (
            "socket files outside the workspace: hidden by the sandbox's mounts "
            f"(/tmp, /run/user, the home's; this kernel's Landlock, ABI {abi}, has no "
            "socket-file right)"
        )

    def command(
        self,
        argv: Sequence[str],
        writable: Sequence[Place],
        report: int = -1,
        *,
        workspace: Path,
        scoped: bool = False,
        session: Path | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> list[str]:
        """`argv`, run inside the sandbox with writes allowed beneath `writable` (and the
        scratch directory; `scoped`: a subagent's, never its `SCOPED_DIRS`), the session's
        directory `session` hidden; `report` (a descriptor the child inherits) gets a byte
        when the command left processes running that the sandbox then stopped."""
        scratch = str(scratch_directory())
        read = [*SYSTEM_DIRS, sys.prefix, sys.base_prefix] if self.level == "strict" else []
        interpreter = [sys.prefix, sys.base_prefix, str(Path(sys.executable).resolve().parent)]
        home = Path((environ or {}).get("HOME") or Path.home())
        policy = {
            "write": [*(p.pinned for p in writable), scratch],
            "read": read,
            "hide": [str(session.resolve())] if session is not None else [],
            "sockets": socket_places(environ or {}, home),
            "expose": [str(workspace), scratch, *interpreter],
            "readonly": read_only(
                [p.path for p in writable], scoped, allowed=() if scoped else self.writable
            ),
            "unix": [str(workspace), scratch],
        }
        return helper(self.level, self.network, report, policy, argv)


def helper(
    level: str,
    network: bool,
    report: int,
    policy: Mapping[str, Sequence[str]],
    argv: Sequence[str],
) -> list[str]:
    """The command line that runs `argv` in the sandbox (see sandbox_exec.py): `policy`
    names a list of paths for each of its `LISTS` (the device files are `DEVICES`)."""
    lists: list[str] = []
    for name in sandbox_exec.LISTS:
        paths = DEVICES if name == "devices" else policy.get(name, ())
        lists += [str(len(paths)), *paths]
    flag = "1" if network else "0"
    head = [sys.executable, "-I", "-S", str(HELPER), level, flag, str(report), str(os.getpid())]
    return [*head, *lists, "--", *argv]


def read_only(writable: Sequence[Path], scoped: bool, *, allowed: Sequence[str] = ()) -> list[str]:
    """What a command could write that runs before or outside the sandbox, to be bound
    read-only: `.git` and `.venv` (with `node_modules` for a subagent) in each writable
    directory, but those `allowed`, and orchestrator's own installation and interpreter
    when they lie beneath one."""
    names = SCOPED_DIRS if scoped else tuple(n for n in TRUSTED_DIRS if n not in allowed)
    found = [str(d / name) for d in writable for name in names if os.path.lexists(d / name)]
    trusted = [PACKAGE, Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()]
    found += [str(t) for t in trusted if any(t.is_relative_to(d) for d in writable)]
    return sorted(set(found))


def socket_places(environ: Mapping[str, str], home: Path) -> list[str]:
    """Where the user's socket files are: `SOCKET_DIRS`, the home's `HOME_SOCKET_DIRS`,
    the temporary directory, and the sockets the environment names (`SSH_AUTH_SOCK`,
    `TMUX`, ...; each file itself, not its directory, which may be the home)."""
    places = [*SOCKET_DIRS, tempfile.gettempdir(), *(str(home / d) for d in HOME_SOCKET_DIRS)]
    for name in SOCKET_VARIABLES:
        value = environ.get(name, "")
        if name == "TMUX":
            value = value.split(",")[0]
        elif name == "DBUS_SESSION_BUS_ADDRESS":
            value = value.partition("path=")[2].split(",")[0] if "path=" in value else ""
        elif name == "DOCKER_HOST":
            value = value.removeprefix("unix://") if value.startswith("unix://") else ""
        if value.startswith("/"):
            places.append(value)
    runtime = environ.get("XDG_RUNTIME_DIR", "")
    if runtime.startswith("/"):
        places.append(runtime)
    return sorted({os.path.realpath(p) for p in places} - {"/", os.path.realpath(home)})


def scope_places(root: Path, scope: Iterable[str] | None) -> list[tuple[tuple[str, ...], bool]]:
    """What a write scope lets a command write, as (components under the workspace `root`,
    whether it is a file): `a/` and `src/*.py` are the directories `a` and `src`, `a/x.py`
    the file alone (Landlock grants a single file), `a/b` the directory it is or, when it
    does not exist, a directory unless its name has an extension; None (no scope) is the
    whole workspace."""
    if scope is None:
        return [((), False)]
    found = []
    for entry in scope:
        parts = [p for p in entry.strip().strip("/").split("/") if p not in ("", ".")]
        fixed: list[str] = []
        for part in parts:
            if GLOB & set(part):
                break
            fixed.append(part)
        is_file = False
        if len(fixed) == len(parts) and fixed and not entry.rstrip().endswith("/"):
            path = root.joinpath(*fixed)
            if path.is_symlink() or path.exists():
                is_file = not path.is_dir() or path.is_symlink()
            else:
                is_file = bool(Path(fixed[-1]).suffix)
        found.append((tuple(fixed), is_file))
    return sorted(set(found))


@functools.cache
def scratch_directory() -> Path:
    """The sandboxed commands' `TMPDIR`: one directory for this process, removed when it
    exits (the only place outside the workspace a `workspace` command may write). It is
    locked while this process lives, so that one left by a process killed outright is
    seen as such and removed by the next (`clean_scratch`)."""
    clean_scratch(Path(tempfile.gettempdir()))
    # Locked before it has its name: a cleaner never sees it unlocked.
    made = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}new-"))
    held = os.open(made, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    fcntl.flock(held, fcntl.LOCK_EX)
    named = made.with_name(made.name.replace(f"{SCRATCH_PREFIX}new-", SCRATCH_PREFIX, 1))
    made.rename(named)
    atexit.register(os.close, held)  # (after the removal: atexit runs last in, first out)
    atexit.register(shutil.rmtree, named, True)
    return named


def clean_scratch(temp: Path) -> list[Path]:
    """Remove the scratch directories in `temp` whose process is gone (nobody holds their
    lock); the ones removed."""
    removed = []
    for directory in temp.glob(f"{SCRATCH_PREFIX}*"):
        if directory.name.startswith(f"{SCRATCH_PREFIX}new-") or directory.is_symlink():
            continue  # (being made; one whose maker died there is a few empty bytes)
        try:
            fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            with contextlib.suppress(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                shutil.rmtree(directory, ignore_errors=True)
                removed.append(directory)
        finally:
            os.close(fd)
    return removed


@functools.cache
def _probe(network: bool) -> str | None:
    """Run `true` in the sandbox once per process: None if it works, else why not."""
    if not sys.platform.startswith("linux"):
        return f"no sandbox on {sys.platform} yet"
    policy = {"write": [tempfile.gettempdir()], "readonly": [str(PACKAGE)]}
    command = helper("workspace", network, -1, policy, ["/bin/true"])
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the sandbox could not be tried ({exc})"
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()
        return said[-1].removeprefix("sandbox: ") if said else f"exit {done.returncode}"
    return None
