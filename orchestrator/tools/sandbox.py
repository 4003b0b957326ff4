"""The shell's sandbox: what a command may write, read and reach, and how it is entered.

Levels (`[shell] sandbox`, `--sandbox`):

- `off`: the command runs with the user's rights, as orchestrator does;
- `workspace` (the default): writes only beneath the workspace (for a subagent, the
  directories that hold its write-scope entries) and a scratch `TMPDIR`; reads anywhere
  the user can; no network but a loopback of its own unless `[shell] network = true`;
  orchestrator and every other process out of sight (a PID namespace with its own
  `/proc`); no new privileges;
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
import functools
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

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


@dataclass(frozen=True)
class Sandbox:
    """How the shell's commands are confined. `probe="unavailable"` makes this machine
    look like one without the mechanisms (for tests of that path)."""

    level: Level = "workspace"
    network: bool = False
    required: bool = False
    probe: Literal["auto", "unavailable"] = "auto"

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

    def command(self, argv: Sequence[str], writable: Iterable[Path], report: int = -1) -> list[str]:
        """`argv`, run inside the sandbox with writes allowed beneath `writable` (and the
        scratch directory); `report` (a descriptor the child inherits) gets a byte when
        the command left processes running that the sandbox then stopped."""
        scratch = scratch_directory()
        read = [*SYSTEM_DIRS, sys.prefix, sys.base_prefix] if self.level == "strict" else []
        return helper(
            self.level, self.network, report, [*map(str, writable), str(scratch)], read, argv
        )


def helper(
    level: str,
    network: bool,
    report: int,
    write: Sequence[str],
    read: Sequence[str],
    argv: Sequence[str],
) -> list[str]:
    """The command line that runs `argv` in the sandbox (see sandbox_exec.py)."""
    lists = [str(len(write)), *write, str(len(DEVICES)), *DEVICES, str(len(read)), *read]
    flag = "1" if network else "0"
    return [sys.executable, "-I", "-S", str(HELPER), level, flag, str(report), *lists, "--", *argv]


def scope_directories(root: Path, scope: Iterable[str] | None) -> list[str]:
    """The directories, relative to the workspace `root`, that hold a write scope's
    entries: the sandbox confines to directories; the file-level rule is checked after
    each command. `a/` is `a`, `a/x.py` is `a` unless `a/x.py` is a directory, `src/*.py`
    is `src`; None (no scope) is the whole workspace."""
    if scope is None:
        return ["."]
    found = []
    for entry in scope:
        parts = [p for p in entry.strip().strip("/").split("/") if p not in ("", ".")]
        fixed: list[str] = []
        for part in parts:
            if GLOB & set(part):
                break
            fixed.append(part)
        whole = len(fixed) == len(parts)
        if (
            whole
            and fixed
            and not entry.rstrip().endswith("/")
            and not (root.joinpath(*fixed)).is_dir()
        ):
            fixed = fixed[:-1]  # a file: its directory
        found.append("/".join(fixed) or ".")
    return sorted(set(found))


@functools.cache
def scratch_directory() -> Path:
    """The sandboxed commands' `TMPDIR`: one directory for this process, removed when it
    exits (the only place outside the workspace a `workspace` command may write)."""
    made = Path(tempfile.mkdtemp(prefix="orchestrator-scratch-"))
    atexit.register(shutil.rmtree, made, True)
    return made


@functools.cache
def _probe(network: bool) -> str | None:
    """Run `true` in the sandbox once per process: None if it works, else why not."""
    if not sys.platform.startswith("linux"):
        return f"no sandbox on {sys.platform} yet"
    command = helper("workspace", network, -1, [tempfile.gettempdir()], [], ["/bin/true"])
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the sandbox could not be tried ({exc})"
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()
        return said[-1].removeprefix("sandbox: ") if said else f"exit {done.returncode}"
    return None
