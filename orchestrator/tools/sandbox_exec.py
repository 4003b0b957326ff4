"""Enter the shell's sandbox, then run the command: `python -I -S sandbox_exec.py POLICY...
-- ARGV...`, the policy being `LEVEL NETWORK REPORT`, then three counted lists of paths
(`N path...`: where it may write, the device files it may write, what it may read at
`strict`). Run as a script in the child that becomes the command (never in orchestrator
itself), so it imports nothing from the package and only the cheapest of the standard
library (a call pays for its start-up); `sandbox.py` builds its command line and
documents the policy.

In order, before `exec`:

1. `unshare` a user namespace (the same uid and gid mapped inside, so files are the
   user's), a mount namespace, a PID namespace and, unless the network is allowed, a
   network namespace;
2. `fork`: the child is PID 1 of the new PID namespace. When it exits, the kernel kills
   every process left in the namespace, so nothing the command started outlives it;
3. in the child: mounts made private, a fresh `/proc` that shows only the namespace's
   processes (not orchestrator, not its environment), the loopback interface up;
4. `no_new_privs`, then Landlock: writes (and, at `strict`, reads and execution) only
   beneath the directories the policy names;
5. PID 1 runs the command as its child and, once it has exited, stops what it left
   running and says so on the `report` descriptor; the parent waits for PID 1 and exits
   with the command's status.

A step that fails exits 125 with one line on stderr naming it (`sandbox: ...`).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import struct
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 0x4000, 0x40000
PR_SET_NO_NEW_PRIVS = 38
SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446  # every architecture
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
AF_INET, SOCK_DGRAM, SIGKILL = 2, 2, 9

# Landlock's filesystem rights, and the ABI that brought each.
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE = 1 << 13, 1 << 14  # ABI 2, ABI 3
SCOPE_SIGNAL = 1 << 1  # ABI 6: no signal to a process outside the sandbox

WRITES = (WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_CHAR | MAKE_DIR | MAKE_REG | MAKE_SOCK) | (
    MAKE_FIFO | MAKE_BLOCK | MAKE_SYM
)
READS = EXECUTE | READ_FILE | READ_DIR
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE  # what a rule on a file may hold

libc = ctypes.CDLL(None, use_errno=True)


# A step that fails raises RuntimeError (no class of its own: this script stands alone,
# outside the package's error tree) or OSError.
def check(result: int, what: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise RuntimeError(f"{what}: {os.strerror(code)} (errno {code})")
    return result


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when it has none (or it is disabled)."""
    result: int = libc.syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), CREATE_RULESET_VERSION)
    return max(result, 0)


def enter_namespaces(network: bool) -> None:
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | (0 if network else CLONE_NEWNET)
    check(libc.unshare(flags), "unshare (user namespaces may be disabled)")
    for name, text in (
        ("setgroups", "deny"),
        ("uid_map", f"{uid} {uid} 1"),
        ("gid_map", f"{gid} {gid} 1"),
    ):
        with open(f"/proc/self/{name}", "w") as file:
            file.write(text)


def inside(network: bool) -> None:
    """In PID 1 of the new namespace: its own /proc, the loopback up."""
    check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "making mounts private")
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    check(libc.mount(b"proc", b"/proc", b"proc", flags, None), "mounting /proc")
    if not network:
        sock = check(libc.socket(AF_INET, SOCK_DGRAM, 0), "a socket to bring loopback up")
        try:
            request = struct.pack("16sH", b"lo", 0)
            current = struct.unpack("16sH", fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
            fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH", b"lo", current | IFF_UP))
        finally:
            os.close(sock)


class Policy:
    """The command line's policy: `LEVEL NETWORK REPORT N write... N device... N read...`,
    then `--` and the command."""

    def __init__(self, argv: list[str]) -> None:
        self.level, network, report = argv[0], argv[1], argv[2]
        self.network = network == "1"
        self.report = int(report)
        at = 3
        lists = []
        for _ in range(3):
            count = int(argv[at])
            lists.append(argv[at + 1 : at + 1 + count])
            at += 1 + count
        self.write, self.devices, self.read = lists
        if argv[at] != "--":
            raise RuntimeError(f"a malformed policy (expected -- at {argv[at]!r})")
        self.command = argv[at + 1 :]


def restrict(policy: Policy) -> None:
    """`no_new_privs`, then the Landlock ruleset of `policy`."""
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "setting no_new_privs")
    abi = landlock_abi()
    if abi < 1:
        raise RuntimeError("Landlock is not available in this kernel")
    writes = WRITES | (REFER if abi >= 2 else 0) | (TRUNCATE if abi >= 3 else 0)
    strict = policy.level == "strict"
    handled = writes | (READS if strict else 0)
    scoped = SCOPE_SIGNAL if abi >= 6 else 0

    class Ruleset(ctypes.Structure):
        _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]

    attr = Ruleset(handled, 0, scoped)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = check(
        libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0),
        "creating the Landlock ruleset",
    )
    device = WRITE_FILE | (TRUNCATE if abi >= 3 else 0)
    rules = [(p, handled) for p in policy.write]
    rules += [(p, READS) for p in policy.read if strict]
    rules += [(p, device | (READS if strict else 0)) for p in policy.devices]
    for path, allowed in rules:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except FileNotFoundError:
            continue  # (a system directory this machine does not have)
        try:
            if not os.path.isdir(path):
                allowed &= FILE_RIGHTS
            rule = struct.pack("=Qi", allowed & handled, fd)
            buffer = ctypes.create_string_buffer(rule, len(rule))
            check(
                libc.syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, buffer, 0),
                f"a Landlock rule for {path}",
            )
        finally:
            os.close(fd)
    check(libc.syscall(SYS_RESTRICT_SELF, ruleset, 0), "enforcing the Landlock ruleset")
    os.close(ruleset)


def init(command: list[str], report: int) -> int:
    """PID 1 of the namespace: run `command` as its child, reap whatever ends meanwhile
    (orphans come to PID 1), and once the command has exited stop what it left running,
    saying so on `report` (a byte, `1`, out of band: the command cannot forge it)."""
    shell = os.fork()
    if shell == 0:
        if report >= 0:
            os.close(report)
        os.execvpe(command[0], command, os.environ)
    while True:
        pid, status = os.wait()
        if pid == shell:
            break
    left = [name for name in os.listdir("/proc") if name.isdigit() and name != "1"]
    if left:
        try:  # noqa: SIM105 (contextlib costs every call 4 ms of start-up)
            os.kill(-1, SIGKILL)  # from PID 1: every other process of the namespace
        except OSError:
            pass
        if report >= 0:
            os.write(report, b"1")
    return os.waitstatus_to_exitcode(status)


def main(argv: list[str]) -> int:
    try:
        policy = Policy(argv[1:])
    except (IndexError, ValueError, RuntimeError) as exc:
        print(f"sandbox: a malformed policy ({exc})", file=sys.stderr, flush=True)
        return 125
    command, network, report = policy.command, policy.network, policy.report
    try:
        enter_namespaces(network)
    except (RuntimeError, OSError) as exc:
        print(f"sandbox: {exc}", file=sys.stderr, flush=True)
        return 125
    child = os.fork()
    if child == 0:
        try:
            inside(network)
            restrict(policy)
            code = init(command, report)
        except (RuntimeError, OSError) as exc:
            print(f"sandbox: {exc}", file=sys.stderr, flush=True)
            os._exit(125)
        os._exit(code if code >= 0 else 128 - code)
    if report >= 0:
        os.close(report)
    while True:
        try:
            _, status = os.waitpid(child, 0)
        except OSError as exc:
            if exc.errno == errno.EINTR:
                continue
            raise
        return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    code = main(sys.argv)
    sys.exit(code if code >= 0 else 128 - code)
