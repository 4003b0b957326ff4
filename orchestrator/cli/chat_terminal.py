"""`orchestrator chat` (and `run` without a goal) at the terminal: the input line with
the live view under it (`chat_input.py`), the transcript above, and a `Chat` between
what is typed and the session (`chat.py`).
"""

from __future__ import annotations

import argparse
import functools
import math
import shutil
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO, cast

import trio

from orchestrator.cli.chat import PROMPT, Chat, Focus, Questions
from orchestrator.cli.chat_commands import Commands
from orchestrator.cli.chat_earlier import earlier
from orchestrator.cli.chat_input import InputLine, Key, ToolbarView, Typed, history_file
from orchestrator.cli.engine import check_resumed_engine
from orchestrator.cli.env import sessions_root
from orchestrator.cli.mcp import opened_for_run
from orchestrator.cli.out import carried, session_ref
from orchestrator.cli.parser import EXIT_OK
from orchestrator.cli.render import TranscriptSink
from orchestrator.cli.run import EXIT_CODES
from orchestrator.cli.screen import model_names
from orchestrator.cli.setup import (
    NewSession,
    default_workspace,
    new_session,
    overrides,
    run_config,
    run_settings,
)
from orchestrator.cli.storage import kept_on_full_disk
from orchestrator.cli.summary import spent, summary
from orchestrator.config import Config
from orchestrator.errors import ConfigError
from orchestrator.models.http import make_client
from orchestrator.session.listing import find_session
from orchestrator.session.live import open_session
from orchestrator.state.events import FanOut
from orchestrator.state.manifest import read_manifest
from orchestrator.store import Durability, session_dir
from orchestrator.team.definitions import Definitions
from orchestrator.text import visible
from orchestrator.view.frame import plain_frame
from orchestrator.view.history import session_view

NO_TERMINAL = "a goal is required without a terminal (orchestrator run GOAL)"
GOAL_PROMPT = "goal› "


def chat(args: argparse.Namespace) -> int:
    """`chat [GOAL]`, `chat --resume ID|--last`, `run` without a goal."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise ConfigError(NO_TERMINAL)
    root = sessions_root(args)
    resumed: str | None = getattr(args, "resume", None)
    last = getattr(args, "last", False)
    if resumed is not None or last:
        resumed = find_session(root, resumed, last=last)
    if resumed is not None:
        if args.goal:
            raise ConfigError("give a goal for a new session, or --resume/--last (not both)")
        directory = session_dir(root, resumed)
        config = run_config(args, read_manifest(directory).workspace_path(directory))
        check_resumed_engine(args)  # an engine that is not installed: refused now
        _say(f"chatting in session {resumed}")
        run = functools.partial(_chat, args, root, config, resumed, None, overrides(args))
        return kept_on_full_disk(lambda: trio.run(run), resumed, args)
    workspace = None if args.session_workspace else (args.workspace or default_workspace())
    new = new_session(args, model=args.model, workspace=workspace)
    run = functools.partial(_chat, args, new.root, new.config, None, new, {})
    return kept_on_full_disk(lambda: trio.run(run), "", args)


async def _chat(
    args: argparse.Namespace,
    root: Path,
    config: Config,
    session_id: str | None,
    new: NewSession | None,
    changes: dict[str, object],
) -> int:
    from prompt_toolkit.patch_stdout import StdoutProxy

    await trio.Path(root).mkdir(parents=True, exist_ok=True)  # the input history's place
    line = InputLine(history=history_file(root))
    send, typed = trio.open_memory_channel[Typed](math.inf)
    # Everything printed goes above the input line (prompt_toolkit's `patch_stdout`, with
    # a shorter pause between writes: what a command prints comes before the next line
    # typed). A question asked there is whole lines: its last ("Allow? ...") is ended
    # when it is flushed, and answered on the input line.
    stdout, stderr = sys.stdout, sys.stderr
    with StdoutProxy(raw=True, sleep_between_writes=0.02) as proxy:
        sys.stdout = cast(TextIO, proxy)
        sys.stderr = cast(TextIO, _WholeLines(sys.stdout))
        line.start(send)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_interrupts, send)
                definitions: Definitions | None = None
                resumed = session_id is not None
                if session_id is None:
                    assert new is not None
                    goal = args.goal or await _first_line(line, typed)
                    if goal is None:
                        return EXIT_OK
                    session_id = new.create(goal, say=_say, source="chat")
                    definitions = new.definitions
                while True:  # (again in the fork a /rewind made)
                    code, fork = await _chatting(
                        args, root, config, session_id, definitions, changes, line, typed, resumed
                    )
                    if fork is None:
                        break
                    session_id, definitions, resumed = fork, None, True
                nursery.cancel_scope.cancel()
                return code
        finally:
            line.stop()
            sys.stdout, sys.stderr = stdout, stderr


async def _interrupts(send: trio.MemorySendChannel[Typed]) -> None:
    """Ctrl+C is a key while the input line reads (its terminal is raw then), and SIGINT
    between two lines: either is typed as Key.INTERRUPT, never a KeyboardInterrupt."""
    with trio.open_signal_receiver(signal.SIGINT) as interrupted:
        async for _ in interrupted:
            send.send_nowait(Key.INTERRUPT)


async def _first_line(line: InputLine, typed: trio.MemoryReceiveChannel[Typed]) -> str | None:
    """The goal, typed at the input line; None if the person leaves first."""
    line.ask(GOAL_PROMPT)
    print("What should the agents do? (Ctrl+D to leave)", flush=True)
    async for item in typed:
        if isinstance(item, Key):
            return None
        if item.strip():
            line.ask(PROMPT)
            return item.strip()
    return None


async def _chatting(
    args: argparse.Namespace,
    root: Path,
    config: Config,
    session_id: str,
    definitions: Definitions | None,
    changes: dict[str, object],
    line: InputLine,
    typed: trio.MemoryReceiveChannel[Typed],
    resumed: bool = False,
) -> tuple[int, str | None]:
    """Chat in `session_id` (a `resumed` one shows its conversation so far first): the
    exit code, and the fork to chat in next when the person rewound."""
    durability = Durability(args.durability)
    async with (
        open_session(root, session_id, durability=durability, warn=_say) as live,
        make_client() as http,
        opened_for_run(config, _say, live.state.mcp) as mcp,  # stopped with the session
    ):
        model = session_view(live.directory, prices=dict(config.prices))
        view = ToolbarView(model, line.redraw, fps=getattr(args, "fps", None) or config.view.fps)
        line.toolbar = lambda: view.frame
        # Whole lines only above the input line: a piece of a line flushed there is drawn
        # on the input line's row, and erased when the input line is drawn again (a
        # model that streams slowly sends one piece at a time).
        out = cast(TextIO, _LinesOnly(sys.stdout))
        transcript = Focus(TranscriptSink(out, color=True, todos_of=live.state.todo_list), live)
        questions = Questions(line.ask)
        settings = await run_settings(
            live,
            args,
            config,
            http,
            definitions,
            dict(changes),
            ui=FanOut([view, transcript]),
            say=_say,
            hold=functools.partial(_hold, view),
            read=questions.read,
            mcp=mcp,
        )
        model.configure(model_names(settings))
        chat = Chat(live, settings, say=_say, questions=questions)
        chat.focus = transcript
        if resumed:
            said = await trio.to_thread.run_sync(earlier, live.directory, live.manifest.goal)
            print("".join(f"{line}\n" for line in said), end="", flush=True)
        print("Type a message, /help for the commands; Ctrl+C stops a turn.", flush=True)
        async with trio.open_nursery() as nursery:
            await nursery.start(view.run)
            await nursery.start(_on_resize, view)
            await chat.run(typed, Commands(chat, model, args).run)
            nursery.cancel_scope.cancel()
        columns = shutil.get_terminal_size().columns - 1
        print(plain_frame(model, model.now(), width=columns, still=True))
        places = [("workspace", live.manifest.workspace_path(live.directory))]
        places.append(("session", live.directory))
        cost = spent(live.state.usage_by_model, config.prices)
    if chat.switch_to is not None:
        return EXIT_OK, chat.switch_to
    # Summed up as a run's end is (a turn stopped and not gone on with: interrupted).
    result = None if chat.running else chat.result
    status, detail = ("interrupted", "") if result is None else (result.status, result.detail)
    resume = f"orchestrator chat --resume {session_ref(session_id, args)}{carried(args)}"
    steps = [f"continue it with: {resume}"]
    for ending in summary(session_id, status, detail, places=places, spent=cost, steps=steps):
        _say(ending)
    if result is None:
        return 130, None
    return EXIT_CODES.get(result.status, EXIT_OK if result.status == "completed" else 1), None


def _say(text: str) -> None:
    print(visible(text), flush=True)


async def _on_resize(
    view: ToolbarView, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """The view laid out again at the terminal's new size (the input line's thread is
    not the main one, which alone is told of a resize). Once as the receiver is set up
    too: a resize before it (a busy machine starts this task late) was not heard."""
    with trio.open_signal_receiver(signal.SIGWINCH) as resized:
        view.changed()
        task_status.started()
        async for _ in resized:
            view.changed()


@contextmanager
def _hold(view: ToolbarView, agent: str = "", what: str = "") -> Iterator[None]:
    """A question asked: the view shows `agent` needing input about `what` meanwhile."""
    if agent:
        view.model.approval_asked(agent, what)
        view.changed()
    try:
        yield
    finally:
        if agent:
            view.model.approval_answered(agent)
            view.changed()


class _WholeLines:
    """A text stream whose every flush ends a line (see `_chat`)."""

    def __init__(self, inner: TextIO) -> None:
        self._inner = inner
        self._ended = True

    def write(self, text: str) -> int:
        if text:
            self._ended = text.endswith("\n")
        return self._inner.write(text)

    def flush(self) -> None:
        if not self._ended:
            self._inner.write("\n")
            self._ended = True
        self._inner.flush()

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)


class _LinesOnly:
    """A text stream that passes on whole lines only: the rest of a line waits for its
    end (the transcript ends every line it starts: a streamed reply ends with its reply)."""

    def __init__(self, inner: TextIO) -> None:
        self._inner = inner
        self._held = ""

    def write(self, text: str) -> int:
        lines, newline, rest = (self._held + text).rpartition("\n")
        if newline:
            self._inner.write(lines + newline)
        self._held = rest
        return len(text)

    def flush(self) -> None:
        self._inner.flush()

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)
