"""The `orchestrator` command: parse, then hand the command to the module that runs it,
imported only then, so that `--help` and the session commands start fast (no provider or
HTTP machinery unless a model is run). Only the `cli*` modules read environment variables
and platformdirs."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO, cast

from orchestrator.cli import collector
from orchestrator.cli.parser import COMMANDS, EXIT_FAILED, EXIT_USAGE, build_parser
from orchestrator.errors import (
    ConfigError,
    InvalidSessionId,
    JournalCorrupt,
    OrchestratorError,
    SessionNotFound,
)


def _dispatch(args: argparse.Namespace) -> int:
    # Each command imports what it needs only when it runs: start-up stays cheap.
    match args.command:
        case "run" if args.goal is None:
            from orchestrator.cli.chat_terminal import chat

            return chat(args)
        case "chat":
            from orchestrator.cli.chat_terminal import chat

            return chat(args)
        case "run" | "plan":
            from orchestrator.cli import run as cli_run
            from orchestrator.cli.setup import default_workspace

            if args.command == "plan":
                args.plan = args.plan_only = True
            workspace = None if args.session_workspace else (args.workspace or default_workspace())
            return cli_run.start(args, goal=args.goal, model=args.model, workspace=workspace)
        case "execute":
            from orchestrator.cli import run as cli_run

            return cli_run.execute(args)
        case "resume":
            from orchestrator.cli import run as cli_run

            return cli_run.resume(args)
        case "demo":
            from orchestrator.cli.demo import demo

            return demo(args)
        case "sessions":
            from orchestrator.cli.env import sessions_root, user_prices
            from orchestrator.cli.sessions import run_sessions

            return run_sessions(args, sessions_root(args), lambda: user_prices(args))
        case "models":
            from orchestrator.cli.env import load_user_config
            from orchestrator.cli.models import run_models

            return run_models(args, os.environ, config=load_user_config(args))
        case "worker" | "engine":
            return _engine(args)
        case "config" | "mcp":
            return _looking(args)
    raise AssertionError(f"unhandled command {args.command}")


def _engine(args: argparse.Namespace) -> int:
    """The dbos engine's commands: `worker` serves it, `engine status` looks at it."""
    from orchestrator.cli.env import load_user_config

    if args.command == "worker":
        from orchestrator.cli.worker import serve

        return serve(args, load_user_config(args))
    from orchestrator.cli.engine_status import engine_status

    return engine_status(args, load_user_config(args))


def _looking(args: argparse.Namespace) -> int:
    """`config` and `mcp`, which look at the configuration (and `mcp serve`, which
    serves the team to MCP clients)."""
    if args.command == "mcp" and args.action == "serve":
        from orchestrator.cli.mcp_serve import serve

        return serve(args, os.environ)
    if args.command == "mcp":
        from orchestrator.cli.mcp import run_mcp

        return run_mcp(args, os.environ)
    from orchestrator.cli.config import run_config

    return run_config(args, os.environ)


def _plan_error(exc: OrchestratorError) -> bool:
    """A plan that cannot be read or built (a usage error, like a bad config). Imported
    here, on an error only: `loop.plan` pulls in msgspec, which `--help` has no use for."""
    from orchestrator.loop.plan import PlanError

    return isinstance(exc, PlanError)


class _QuietWhenClosed:
    """stdout that a reader may close (`orchestrator run ... | head -1`): the first write
    that finds the pipe closed points stdout at /dev/null, and the command carries on; a
    run is never failed by its viewer going away."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.reader_gone = False

    def write(self, text: str) -> int:
        if not self.reader_gone:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._gone()
        return len(text)

    def flush(self) -> None:
        if not self.reader_gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._gone()

    def _gone(self) -> None:
        self.reader_gone = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, self._stream.fileno())  # what is still buffered goes nowhere
        os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def main(argv: Sequence[str] | None = None) -> int:
    if sys.stdout is not None and not isinstance(sys.stdout, _QuietWhenClosed):
        sys.stdout = cast(TextIO, _QuietWhenClosed(sys.stdout))
    if argv is None:  # (the process's own command, not a program calling `main([...])`)
        collector.starting()
        _without_httpx_cli()
    args = _parse(argv)
    if argv is None:  # (after the parse: `--help` and `--version` exit without msgspec)
        _msgspec_without_typing_extensions()
    try:
        return _dispatch(args)
    except (ConfigError, InvalidSessionId, SessionNotFound) as exc:
        _note(f"error: {exc}")
        return EXIT_USAGE
    except JournalCorrupt as exc:
        _note(f"error: {exc}")
        if exc.path is not None and exc.path.name == "journal.jsonl":
            directory = exc.path.parent
            _note(
                f"check it with:  orchestrator sessions verify {directory.name} "
                f"--sessions-dir {directory.parent}\n"
                f"repair it with: orchestrator sessions repair {directory.name} "
                f"--sessions-dir {directory.parent}"
            )
        return EXIT_FAILED
    except OrchestratorError as exc:
        _note(f"error: {exc}")
        return EXIT_USAGE if _plan_error(exc) else EXIT_FAILED
    except OSError as exc:
        # The machine said no (a full disk, a read-only place, ...): one line, no traceback.
        _note(f"error: {exc}")
        return EXIT_FAILED
    except KeyboardInterrupt:
        _note("interrupted; the session is resumable (orchestrator resume --last)")
        return 130


def _without_httpx_cli() -> None:
    """httpx imports its own command-line client as it loads when click is installed
    (the `dbos` and `mcp` extras bring it), and with it pygments and rich's console: 40
    ms of every command that makes an HTTP client, for a module this process never runs.
    Marked absent, httpx's import falls back to its stub (`httpx.main` says it cannot
    run)."""
    sys.modules.setdefault("httpx._main", cast(Any, None))


def _msgspec_without_typing_extensions() -> None:
    """msgspec imports `typing_extensions` for its `get_type_hints` when it can, and
    `typing`'s when it cannot: 5 ms of the process's CPU, more than half of msgspec's
    import, and most of what `sessions show` of a finished session costs over reading its
    files. On Python 3.11 and later both give the same hints for msgspec's call (with
    `include_extras`, typing_extensions' adds only a fix for 3.10 and older, and is
    typing's own from 3.13), and `Required` and `NotRequired` are typing's in both. So
    msgspec is imported with typing_extensions marked absent, and the mark taken away at
    once: a command that loads pydantic later imports typing_extensions as it would
    have. Nothing when either is imported already."""
    if "msgspec" in sys.modules or "typing_extensions" in sys.modules:
        return
    sys.modules["typing_extensions"] = cast(Any, None)  # (an import of it raises)
    try:
        import msgspec  # noqa: F401
    finally:
        del sys.modules["typing_extensions"]


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """`argv` parsed by a grammar built for its command alone (and for a `sessions`
    command line, its action alone): which command it is, its first word, or else what a
    grammar that builds no command's options says (which answers `--help`, `--version`
    and a missing or unknown command just as the whole grammar would)."""
    words = sys.argv[1:] if argv is None else list(argv)
    if words and words[0] in COMMANDS:  # (as most command lines start)
        command, rest = words[0], words[1:]
    else:  # options first, `--help`, `--version`, a mistake: as the whole grammar says
        chosen, rest = build_parser(only="").parse_known_args(argv)
        command = chosen.command
    # `sessions` has no options of its own: the word after it, if any, is its action.
    action = rest[0] if command == "sessions" and rest and not rest[0].startswith("-") else ""
    return build_parser(only=command, action=action).parse_args(argv)


def _note(text: str) -> None:
    from orchestrator.text import visible

    print(visible(text), file=sys.stderr, flush=True)
