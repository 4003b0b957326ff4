"""One hook run (docs/hooks.md): a `Hook` is a command from the config's `[[hooks]]` or a
function given to the library, run at its event with the event as JSON (a command's
stdin, a function's one argument), within its time-out; what it answers is a `Said`.

A command runs as the user's own, outside the shell tool's sandbox, in the workspace,
in a process group of its own that a time-out kills whole. It answers with JSON on
stdout (nothing: no opinion), or with exit code 2 and its reason on stderr (refuse a
call, or send the agent back); any other exit code, a time-out, or an answer that is
not one is a failure (`Failed`), which the caller says in one line.
"""

from __future__ import annotations

import contextlib
import fnmatch
import inspect
import os
import signal
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import msgspec
import orjson
import trio
from pydantic import BaseModel, ValidationError

from orchestrator.config import HookConfig, HookEventName

HookFunction = Callable[
    [dict[str, Any]], Awaitable[Mapping[str, Any] | None] | Mapping[str, Any] | None
]
"""A hook given as code: called with the event (the JSON a command reads, as a dict),
returns the answer (the JSON a command writes, as a dict) or None for no opinion; plain
or async."""

REFUSE_EXIT = 2
"""A command's exit code that refuses the call (`pre_tool`) or sends the agent back
(`stop`), with its stderr as the reason."""
SAID_MAX = 4_000
"""Characters kept of a hook's reason, note or text: what the model reads stays short."""


@dataclass(frozen=True)
class Hook:
    """A hook: at `event`, `run` (a command line, run by `/bin/sh -c`, or a function);
    only for the tools and agent roles whose names match `tools` and `roles` (globs;
    empty: all); stopped after `timeout` seconds. A `pre_tool` hook that is
    `fail_closed` refuses the call when it fails or times out (else a failure lets the
    call go on)."""

    event: HookEventName
    run: str | HookFunction
    tools: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    timeout: float = 30.0
    fail_closed: bool = False

    @classmethod
    def of(cls, config: HookConfig) -> Hook:
        return cls(
            config.event,
            config.command,
            config.tools,
            config.roles,
            config.timeout,
            config.fail_closed,
        )

    @property
    def name(self) -> str:
        run = self.run
        return run if isinstance(run, str) else getattr(run, "__qualname__", repr(run))

    def matches(self, event: str, *, tool: str = "", role: str = "") -> bool:
        if event != self.event:
            return False
        if self.tools and not any(fnmatch.fnmatchcase(tool, glob) for glob in self.tools):
            return False
        return not self.roles or any(fnmatch.fnmatchcase(role, glob) for glob in self.roles)


class Said(BaseModel, frozen=True, extra="forbid"):
    """A hook's answer: `decision` (`allow`, `refuse`, `ask` before a call; `continue`
    at `stop`) with its `reason`; `arguments`, the call's changed arguments; `note`, for
    the model after a call; `text`, kept among a compaction's anchors."""

    decision: Literal["allow", "refuse", "ask", "continue"] | None = None
    reason: str = ""
    arguments: dict[str, Any] | None = None
    note: str = ""
    text: str = ""


class Failed(msgspec.Struct, frozen=True):
    """A hook that failed: why, in one line."""

    why: str


async def run_hook(hook: Hook, event: dict[str, Any], workspace: Path) -> Said | Failed:
    """What `hook` answers to `event`, or why it failed."""
    with trio.move_on_after(hook.timeout):
        try:
            if isinstance(hook.run, str):
                return await _command(hook.run, event, workspace)
            return _read(await _function(hook.run, event))
        except Exception as exc:  # a hook's bug is one line, never the session's end
            return Failed(f"{type(exc).__name__}: {exc}")
    return Failed(f"timed out after {hook.timeout:g} s")


async def _function(run: HookFunction, event: dict[str, Any]) -> object:
    answer = run(dict(event))
    if inspect.isawaitable(answer):
        return await answer
    return answer


async def _command(command: str, event: dict[str, Any], workspace: Path) -> Said | Failed:
    done = await trio.run_process(
        ["/bin/sh", "-c", command],
        stdin=orjson.dumps(event),
        capture_stdout=True,
        capture_stderr=True,
        check=False,
        cwd=workspace,
        start_new_session=True,
        deliver_cancel=_kill_group,
    )
    stderr = done.stderr.decode(errors="replace").strip()
    if done.returncode == REFUSE_EXIT:
        return Said(decision="refuse", reason=stderr[:SAID_MAX] or "refused by a hook")
    if done.returncode != 0:
        last = stderr.splitlines()[-1] if stderr else ""
        return Failed(f"exit code {done.returncode}" + (f": {last[:200]}" if last else ""))
    out = done.stdout.strip()
    if not out:
        return Said()
    try:
        return _read(orjson.loads(out))
    except orjson.JSONDecodeError as exc:
        return Failed(f"its output is not JSON ({exc})")


async def _kill_group(process: trio.Process) -> None:
    """A time-out kills the command and whatever it started."""
    with contextlib.suppress(ProcessLookupError):  # (gone already)
        os.killpg(process.pid, signal.SIGKILL)


def _read(answer: object) -> Said | Failed:
    if answer is None:
        return Said()
    if not isinstance(answer, Mapping):
        return Failed(f"its answer is not a JSON object: {str(answer)[:100]!r}")
    try:
        return Said.model_validate(answer)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'answer'}: {err['msg']}"
            for err in exc.errors()
        )
        return Failed(f"its answer is not one: {problems}")
