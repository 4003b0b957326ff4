"""The `orchestrator` command. Parsing and wiring only: the work happens in the modules
it calls. This is the one place that reads environment variables and platformdirs."""

from __future__ import annotations

import argparse
import functools
import os
import signal
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import platformdirs
import trio

from orchestrator import cli_demo
from orchestrator.cli_models import add_models_parser, default_config_path, run_models
from orchestrator.cli_sessions import add_sessions_parser, latest_session_id, run_sessions
from orchestrator.config import Config, load_config
from orchestrator.errors import ConfigError, InvalidSessionId, OrchestratorError, SessionNotFound
from orchestrator.events import EventSink
from orchestrator.messages import ToolCall
from orchestrator.models.http import make_client
from orchestrator.models.resolve import resolve_model
from orchestrator.render import JsonLinesSink, TranscriptSink, format_arguments
from orchestrator.runner import RunResult, RunSettings, drive
from orchestrator.session import LiveSession, create_session, open_session, read_manifest
from orchestrator.store import Durability, session_dir
from orchestrator.tools import Approver, PermissionPolicy, approve_all, deny_all, workspace_tools
from orchestrator.tools.permissions import parse_rules

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_TERMINATED = 128 + signal.SIGTERM

DESCRIPTION = """\
Run LLM agents that use tools in a workspace; every session is journaled and survives a
crash (resume it where it stood).

  orchestrator demo                        offline demo with a scripted model
  orchestrator run "GOAL" --model M -w .   run an agent on a goal (prints a session id)
  orchestrator resume --last --yes         continue the newest session
  orchestrator sessions list               sessions, newest first
  orchestrator models                      configured models and whether keys are set

Models: scripted:PATH (offline, see docs/scripted-model.md), openai:MODEL,
anthropic:MODEL, ollama:MODEL, openai-compatible:MODEL@URL.
Sessions live in --sessions-dir, else $ORCHESTRATOR_SESSIONS_DIR, else the user data dir.
Exit codes: 0 done, 1 failed, 2 usage error, 130/143 stopped by Ctrl+C/SIGTERM
(the session stays resumable).
"""


def _sessions_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sessions-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="where sessions live (default: $ORCHESTRATOR_SESSIONS_DIR, else the user data dir)",
    )


def _agent_options(parser: argparse.ArgumentParser, *, model_required_note: str) -> None:
    parser.add_argument("-m", "--model", default=None, help=model_required_note)
    parser.add_argument(
        "-y",
        "--yes",
        action="store_true",
        help="approve every tool call the policy would ask about",
    )
    parser.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="TOOL=DECISION",
        help="permission rule, e.g. shell=deny or write_file=allow (repeatable); read-only "
        "tools are allowed and the others ask by default",
    )
    parser.add_argument("--json", action="store_true", help="print events as JSON lines")
    parser.add_argument(
        "--max-rounds",
        type=int,
        default=50,
        metavar="N",
        help="stop after N model calls in one turn (default: 50)",
    )
    parser.add_argument(
        "--durability",
        choices=[d.value for d in Durability],
        default=Durability.BATCH.value,
        help="journal fsync policy: always (each record), batch (group commit, default), off",
    )
    _config_option(parser)
    _sessions_option(parser)


def _config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        metavar="FILE",
        help="config file (default: $ORCHESTRATOR_CONFIG, else config.toml in the user "
        "config dir; see docs/configuration.md)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="orchestrator",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    run = commands.add_parser(
        "run",
        help="run an agent on a goal in a new session",
        description="Run an agent on GOAL in a workspace until it answers without tool calls "
        "(or --max-rounds is hit), showing a live transcript. The session id is printed "
        "first; if the run is stopped or killed, `orchestrator resume ID` continues it.",
    )
    run.add_argument("goal", help="what the agent should achieve, in plain words")
    _agent_options(
        run,
        model_required_note="model spec, e.g. scripted:script.json, openai:gpt-4o, "
        "anthropic:claude-sonnet-4-5 (default: $ORCHESTRATOR_MODEL)",
    )
    place = run.add_mutually_exclusive_group()
    place.add_argument(
        "-w",
        "--workspace",
        type=Path,
        default=None,
        help="directory the tools are confined to (default: the current directory)",
    )
    place.add_argument(
        "--session-workspace",
        action="store_true",
        help="work in a fresh workspace inside the session directory, so the session can "
        "be copied elsewhere and resumed",
    )

    resume = commands.add_parser(
        "resume",
        help="continue a stopped or crashed session where it stood",
        description="Continue session ID (or the newest with --last) from its journal. Tool "
        "calls cut off by a crash are reported to the model as interrupted (idempotent ones "
        "are simply run again). A finished session is reported and left alone.",
    )
    resume.add_argument("session_id", nargs="?", metavar="ID", help="session id")
    resume.add_argument("--last", action="store_true", help="resume the newest session")
    _agent_options(resume, model_required_note="use this model instead of the session's own")

    demo = commands.add_parser(
        "demo",
        help="run the offline demo (scripted model, no network)",
        description="Run the offline demo: a scripted agent writes a small Python module and "
        "its test and runs the test; the demo kills the agent process (SIGKILL) while the "
        "test runs, then resumes the session from its journal: the agent is told its call "
        "was interrupted, reads the code, fixes the failure, passes the test and finishes. "
        "Needs no network and no key.",
    )
    demo.add_argument(
        "-w",
        "--workspace",
        type=Path,
        default=None,
        help="directory to work in (default: a fresh temporary directory)",
    )
    demo.add_argument("--json", action="store_true", help="print events as JSON lines")
    demo.add_argument(
        "--no-crash",
        action="store_true",
        help="skip the simulated crash (by default the agent process is SIGKILLed at its "
        "first shell call and the session is resumed)",
    )
    _sessions_option(demo)

    add_sessions_parser(commands, _sessions_option, _config_option)
    add_models_parser(commands)
    return parser


def sessions_root(args: argparse.Namespace) -> Path:
    if getattr(args, "sessions_dir", None):
        return Path(args.sessions_dir)
    if os.environ.get("ORCHESTRATOR_SESSIONS_DIR"):
        return Path(os.environ["ORCHESTRATOR_SESSIONS_DIR"])
    return Path(platformdirs.user_data_dir("orchestrator")) / "sessions"


def load_user_config(args: argparse.Namespace) -> Config:
    given: Path | None = getattr(args, "config", None)
    return load_config(given or default_config_path(os.environ), missing_ok=given is None)


def _color_enabled(stream: object) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _make_sink(json_mode: bool) -> EventSink:
    if json_mode:
        return JsonLinesSink(sys.stdout)
    return TranscriptSink(sys.stdout, color=_color_enabled(sys.stdout))


def _make_approver(yes: bool) -> Approver:
    if yes:
        return approve_all
    if not sys.stdin.isatty():
        return deny_all

    async def ask(call: ToolCall) -> bool:
        question = f"Allow {call.name} {format_arguments(call.arguments)}? [y/N] "
        answer = await trio.to_thread.run_sync(input, question)
        return answer.strip().lower() in ("y", "yes")

    return ask


def _note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _policy(rules: list[str]) -> PermissionPolicy:
    try:
        return PermissionPolicy(rules=parse_rules(rules))
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc


async def _run_session(
    root: Path, session_id: str, args: argparse.Namespace, config: Config
) -> int:
    directory = session_dir(root, session_id)
    async with (
        open_session(root, session_id, durability=Durability(args.durability), warn=_note) as live,
        make_client() as http,
    ):
        spec = args.model or live.manifest.model_spec(directory)
        role = config.agent("main")
        settings = RunSettings(
            model=resolve_model(spec, env=os.environ, http=http, config=config),
            tools=workspace_tools(),
            ui=_make_sink(args.json),
            policy=_policy(args.allow),
            approve=_make_approver(args.yes),
            max_rounds=args.max_rounds,
            max_tokens=role.max_tokens,
            temperature=role.temperature,
        )
        result = await _drive_until_terminated(live, settings)
    if result is None:
        _note(f"terminated; session {session_id} is resumable (orchestrator resume {session_id})")
        return EXIT_TERMINATED
    detail = f" ({result.detail})" if result.detail else ""
    _note(f"session {session_id} {result.status}{detail}")
    if result.status != "completed":
        _note(f"continue it with: orchestrator resume {session_id}")
        return EXIT_FAILED
    return EXIT_OK


async def _drive_until_terminated(live: LiveSession, settings: RunSettings) -> RunResult | None:
    """`drive`, stopped cleanly by SIGTERM as by Ctrl+C: running tools are cancelled (their
    process groups killed) and the session is marked interrupted. None if terminated."""
    result: RunResult | None = None
    try:
        async with trio.open_nursery() as nursery:

            async def run() -> None:
                nonlocal result
                result = await drive(live, settings)
                nursery.cancel_scope.cancel()

            async def watch() -> None:
                with trio.open_signal_receiver(signal.SIGTERM) as signals:
                    async for _ in signals:
                        nursery.cancel_scope.cancel()
                        return

            nursery.start_soon(watch)
            nursery.start_soon(run)
    except BaseExceptionGroup as group:
        # Ctrl+C or an error in `run` arrives grouped by the nursery; callers expect it bare.
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
    return result


def _start(
    args: argparse.Namespace, *, goal: str, model: str | None, workspace: Path | None
) -> int:
    config = load_user_config(args)
    spec = config.model_for("main", cli_model=model or os.environ.get("ORCHESTRATOR_MODEL"))
    resolve_model(spec, env=os.environ, config=config)  # fail fast, before a session exists
    assert spec is not None
    if workspace is not None and not workspace.is_dir():
        raise ConfigError(f"workspace {workspace} is not a directory")
    _policy(args.allow)
    root = sessions_root(args)
    session_id, _ = create_session(root, goal=goal, model=spec, workspace=workspace)
    _note(f"session {session_id} (in {root})")
    return trio.run(_run_session, root, session_id, args, config)


def _resume(args: argparse.Namespace) -> int:
    root = sessions_root(args)
    if args.last == bool(args.session_id):
        raise ConfigError("give a session ID or --last (not both)")
    session_id = latest_session_id(root) if args.last else args.session_id
    manifest = read_manifest(session_dir(root, session_id))
    if manifest.status == "completed":
        _note(f"session {session_id} already finished (completed); nothing to do")
        return EXIT_OK
    _note(f"resuming session {session_id}")
    return trio.run(_run_session, root, session_id, args, load_user_config(args))


def _demo(args: argparse.Namespace) -> int:
    from orchestrator.demo import script_path

    workspace = args.workspace or Path(tempfile.mkdtemp(prefix="orchestrator-demo-"))
    workspace.mkdir(parents=True, exist_ok=True)
    root = sessions_root(args)
    session_id, _ = create_session(
        root, goal=cli_demo.GOAL, model=f"scripted:{script_path()}", workspace=workspace
    )
    _note(f"demo workspace: {workspace}")
    _note(f"session {session_id} (in {root})")
    run_args = argparse.Namespace(
        yes=True,
        allow=[],
        json=args.json,
        max_rounds=20,
        model=None,
        durability=Durability.BATCH.value,
        config=getattr(args, "config", None),
    )
    if not args.no_crash:
        ui = _make_sink(args.json)
        trio.run(
            functools.partial(cli_demo.run_until_crash, json_mode=args.json),
            root,
            session_id,
            ui,
        )
        _note(f"resuming session {session_id} from its journal")
    code = trio.run(_run_session, root, session_id, run_args, load_user_config(run_args))
    _note(f"demo workspace: {workspace}")
    return code


def _dispatch(args: argparse.Namespace) -> int:
    match args.command:
        case "run":
            workspace = None if args.session_workspace else (args.workspace or Path.cwd())
            return _start(args, goal=args.goal, model=args.model, workspace=workspace)
        case "resume":
            return _resume(args)
        case "demo":
            return _demo(args)
        case "sessions":
            return run_sessions(args, sessions_root(args), load_user_config(args))
        case "models":
            return run_models(args, os.environ, config=load_user_config(args))
    raise AssertionError(f"unhandled command {args.command}")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _dispatch(args)
    except (ConfigError, InvalidSessionId, SessionNotFound) as exc:
        _note(f"error: {exc}")
        return EXIT_USAGE
    except OrchestratorError as exc:
        _note(f"error: {exc}")
        return EXIT_FAILED
    except KeyboardInterrupt:
        _note("interrupted; the session is resumable (orchestrator resume --last)")
        return 130
