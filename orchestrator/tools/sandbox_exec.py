"""Enter the shell's sandbox, then run the command: `python -I -S sandbox_exec.py POLICY...
-- ARGV...`, the policy being `LEVEL NETWORK REPORT PARENT`, then counted lists of paths
(`N path...`, in the order of `LISTS`: where it may write, the device files it may write,
what it may read at `strict`, what is hidden, what is hidden where Landlock cannot guard
socket files, what is shown again beneath what is hidden, what is mounted read-only, where
it may connect to socket files). Run as a script in the child that becomes the command
(never in orchestrator itself), so it imports nothing from the package and only the
cheapest of the standard library (a call pays for its start-up); `sandbox.py` builds its
command line and documents the policy.

In order, before `exec`:

0. `PR_SET_PDEATHSIG`: the helper dies with orchestrator (PARENT, its pid: checked after
   setting it, so an orchestrator that died before is not missed);
1. `unshare` a user namespace (the same uid and gid mapped inside, so files are the
   user's), a mount namespace, a PID namespace and, unless the network is allowed, a
   network namespace;
2. `fork`: the child is PID 1 of the new PID namespace, dying with the helper (its own
   `PR_SET_PDEATHSIG`, then a look at a pipe the helper holds open). When PID 1 exits,
   the kernel kills every process left in the namespace, so nothing the command started
   outlives it;
3. in the child: mounts made private, a fresh `/proc` that shows only the namespace's
   processes (not orchestrator, not its environment), the loopback interface up; then
   the mounts of the policy (`arrange`): an empty tmpfs over each hidden directory (a
   hidden file gets `/dev/null` bound over it), what is shown again bound back at its own
   path, and what must stay read-only bound over itself read-only. Socket directories are
   hidden this way only where Landlock has no socket-file right (before ABI 9);
4. `no_new_privs`, then Landlock: writes (and, at `strict`, reads and execution) only
   beneath the directories the policy names, a file named by itself only; from ABI 9,
   `connect()` to a socket file only beneath the directories the policy names;
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
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND = 32, 1024, 2048, 4096
MS_REC, MS_PRIVATE, MS_RELATIME = 0x4000, 0x40000, 1 << 21
ST_RELATIME = 4096  # statvfs's word for MS_RELATIME
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
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
RESOLVE_UNIX = 1 << 16  # ABI 9: connect() to a socket file
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


LISTS = ("write", "devices", "read", "hide", "sockets", "expose", "readonly", "unix")


class Policy:
    """The command line's policy: `LEVEL NETWORK REPORT PARENT`, a counted list for each
    of `LISTS`, then `--` and the command."""

    def __init__(self, argv: list[str]) -> None:
        self.level, network, report, parent = argv[0], argv[1], argv[2], argv[3]
        self.network = network == "1"
        self.report = int(report)
        self.parent = int(parent)
        at = 4
        lists = []
        for _ in LISTS:
            count = int(argv[at])
            lists.append(argv[at + 1 : at + 1 + count])
            at += 1 + count
        self.write, self.devices, self.read, self.hide, self.sockets = lists[:5]
        self.expose, self.readonly, self.unix = lists[5:]
        if argv[at] != "--":
            raise RuntimeError(f"a malformed policy (expected -- at {argv[at]!r})")
        self.command = argv[at + 1 :]


def hidden(policy: Policy, abi: int) -> list[str]:
    """What the mounts hide: the session's directory always, the socket directories
    where Landlock cannot guard socket files."""
    return policy.hide + (policy.sockets if abi < 9 else [])


def beneath(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def arrange(policy: Policy, abi: int) -> None:
    """The policy's mounts, shallowest first (what is shown again comes back inside what
    was hidden, what is read-only lies over what was shown): each source is opened before
    anything is mounted, so a bind takes the directory as it was."""
    hide = [p for p in hidden(policy, abi) if p not in policy.expose]
    # Shown again: only what lies beneath something hidden (else it is there already).
    expose = [p for p in policy.expose if any(beneath(p, h) for h in hide)]
    operations = [(p, 0) for p in hide] + [(p, 1) for p in expose]
    operations += [(p, 2) for p in policy.readonly]
    sources = {}
    for path, kind in operations:
        if kind:
            try:
                sources[path] = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # gone meanwhile: nothing to show
    operations.sort(key=lambda op: (op[0].count("/"), op[1]))
    for path, kind in operations:
        if kind == 0:
            conceal(path)
        elif path in sources:
            fd = sources.pop(path)
            bind(fd, path, readonly=kind == 2)
            os.close(fd)
    if operations:
        # The working directory was entered before the mounts: entered again through them
        # (else `..` and relative paths would go around them).
        os.chdir(os.getcwd())


def conceal(path: str) -> None:
    """An empty tmpfs over the directory `path`, `/dev/null` over a file; nothing where
    it is not (or no longer: beneath something hidden already)."""
    if os.path.isdir(path) and not os.path.islink(path):
        flags = MS_NOSUID | MS_NODEV
        check(libc.mount(b"tmpfs", path.encode(), b"tmpfs", flags, b"mode=755"), f"hiding {path}")
    elif os.path.lexists(path):
        check(libc.mount(b"/dev/null", path.encode(), None, MS_BIND, None), f"hiding {path}")


def bind(fd: int, path: str, readonly: bool) -> None:
    """The file or directory open as `fd` bound at `path` (made inside a tmpfs when
    hiding took it away), read-only if asked."""
    source = f"/proc/self/fd/{fd}".encode()
    directory = os.path.isdir(source)
    if not os.path.lexists(path):
        if directory:
            os.makedirs(path, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o600))
    target = path.encode()
    check(libc.mount(source, target, None, MS_BIND | MS_REC, None), f"binding {path}")
    if readonly:
        # A remount must keep the flags the user namespace cannot change (nosuid, ...).
        have = os.statvfs(path).f_flag
        kept = have & (MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME)
        kept |= MS_RELATIME if have & ST_RELATIME else 0
        flags = MS_BIND | MS_REMOUNT | MS_RDONLY | kept
        check(libc.mount(None, target, None, flags, None), f"making {path} read-only")


def ruleset(policy: Policy, abi: int) -> tuple[int, int, list[tuple[str, int]]]:
    """The Landlock ruleset of `policy` for ABI `abi`: (handled rights, scoped, rules)."""
    writes = WRITES | (REFER if abi >= 2 else 0) | (TRUNCATE if abi >= 3 else 0)
    strict = policy.level == "strict"
    unix = RESOLVE_UNIX if abi >= 9 else 0
    handled = writes | (READS if strict else 0) | unix
    scoped = SCOPE_SIGNAL if abi >= 6 else 0
    device = WRITE_FILE | (TRUNCATE if abi >= 3 else 0)
    rules = [(p, handled) for p in policy.write]
    rules += [(p, READS) for p in policy.read if strict]
    rules += [(p, device | (READS if strict else 0)) for p in policy.devices]
    rules += [(p, unix) for p in policy.unix if unix]
    return handled, scoped, rules


def restrict(policy: Policy, abi: int) -> None:
    """`no_new_privs`, then the Landlock ruleset of `policy`."""
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "setting no_new_privs")
    if abi < 1:
        raise RuntimeError("Landlock is not available in this kernel")
    handled, scoped, rules = ruleset(policy, abi)

    class Ruleset(ctypes.Structure):
        _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]

    attr = Ruleset(handled, 0, scoped)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    fd_ruleset = check(
        libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0),
        "creating the Landlock ruleset",
    )
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
                libc.syscall(SYS_ADD_RULE, fd_ruleset, RULE_PATH_BENEATH, buffer, 0),
                f"a Landlock rule for {path}",
            )
        finally:
            os.close(fd)
    check(libc.syscall(SYS_RESTRICT_SELF, fd_ruleset, 0), "enforcing the Landlock ruleset")
    os.close(fd_ruleset)


def orphaned(lifeline: int) -> bool:
    """Whether the process holding the other end of the pipe `lifeline` is gone."""
    os.set_blocking(lifeline, False)
    try:
        return os.read(lifeline, 1) == b""
    except BlockingIOError:
        return False


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
    # Dies with orchestrator; one that died before this line is seen by the pid.
    libc.prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0)
    if os.getppid() != policy.parent:
        print("sandbox: orchestrator is gone", file=sys.stderr, flush=True)
        return 125
    command, network, report = policy.command, policy.network, policy.report
    try:
        enter_namespaces(network)
    except (RuntimeError, OSError) as exc:
        print(f"sandbox: {exc}", file=sys.stderr, flush=True)
        return 125
    lifeline, held = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            os.close(held)
            # PID 1 dies with this helper (its parent is out of its sight: no pid to check,
            # the pipe says instead).
            libc.prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0)
            if orphaned(lifeline):
                os._exit(125)
            os.close(lifeline)
            abi = landlock_abi()
            inside(network)
            arrange(policy, abi)
            restrict(policy, abi)
            code = init(command, report)
        except (RuntimeError, OSError) as exc:
            print(f"sandbox: {exc}", file=sys.stderr, flush=True)
            os._exit(125)
        os._exit(code if code >= 0 else 128 - code)
    os.close(lifeline)
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
