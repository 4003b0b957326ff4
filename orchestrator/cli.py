"""The `orchestrator` command. Parsing and wiring only: the work happens in the modules
it calls. This is the one place that reads environment variables and platformdirs."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import trio

from orchestrator.agent import AgentState, TurnDeps, run_turn
from orchestrator.errors import ConfigError, ModelError, OrchestratorError
from orchestrator.events import AgentStarted, EventSink, FanOut
from orchestrator.messages import SystemMessage, ToolCall, UserMessage
from orchestrator.models.resolve import resolve_model
from orchestrator.prompts import single_agent_prompt
from orchestrator.render import JsonLinesSink, TranscriptSink, format_arguments
from orchestrator.tools import (
    Approver,
    PermissionPolicy,
    ToolContext,
    Workspace,
    approve_all,
    deny_all,
    workspace_tools,
)
from orchestrator.tools.permissions import parse_rules

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

DESCRIPTION = """\
Run LLM agents that use tools in a workspace, durably.

  orchestrator demo                       offline demo with a scripted model
  orchestrator run "GOAL" --model M -w .  run one agent on a goal
  orchestrator models                     what models are configured

Models: scripted:PATH (offline, see docs/scripted-model.md), openai:MODEL,
anthropic:MODEL, ollama:MODEL, openai-compatible:MODEL@URL.
Exit codes: 0 done, 1 failed, 2 usage error.
"""


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
        help="run one agent on a goal until it finishes",
        description="Run one agent on GOAL in a workspace until it answers without tool "
        "calls (or --max-rounds is hit), showing a live transcript.",
    )
    run.add_argument("goal", help="what the agent should achieve, in plain words")
    _add_agent_options(run)
    run.add_argument(
        "-w",
        "--workspace",
        type=Path,
        default=None,
        help="directory the tools are confined to (default: the current directory)",
    )

    demo = commands.add_parser(
        "demo",
        help="run the offline demo (scripted model, no network)",
        description="Run the offline demo: a scripted agent writes a small Python module and "
        "its test, runs the test, fixes the failure and finishes. Needs no network and no key.",
    )
    demo.add_argument(
        "-w",
        "--workspace",
        type=Path,
        default=None,
        help="directory to work in (default: a fresh temporary directory)",
    )
    demo.add_argument("--json", action="store_true", help="print events as JSON lines")
    return parser


def _add_agent_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-m",
        "--model",
        default=None,
        help="model spec, e.g. scripted:script.json, openai:gpt-4o, anthropic:claude-sonnet-4-5"
        " (default: $ORCHESTRATOR_MODEL)",
    )
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
        help="permission rule, e.g. shell=deny or write_file=allow (repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="print events as JSON lines")
    parser.add_argument(
        "--max-rounds",
        type=int,
        default=50,
        metavar="N",
        help="stop after N model calls in one turn (default: 50)",
    )


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


async def _run_agent(
    *,
    goal: str,
    model_spec: str | None,
    workspace: Path,
    yes: bool,
    rules: list[str],
    json_mode: bool,
    max_rounds: int,
) -> int:
    model = resolve_model(model_spec or os.environ.get("ORCHESTRATOR_MODEL"), env=os.environ)
    try:
        policy = PermissionPolicy(rules=parse_rules(rules))
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    if not workspace.is_dir():
        raise ConfigError(f"workspace {workspace} is not a directory")
    tools = workspace_tools()
    ws = Workspace(workspace)
    sink = FanOut([_make_sink(json_mode)])
    state = AgentState(id="main", role="main")
    state.messages = [
        SystemMessage(content=single_agent_prompt(ws.root, tools.names())),
        UserMessage(content=goal),
    ]
    await sink.emit(AgentStarted(agent=state.id, role=state.role, messages=tuple(state.messages)))
    deps = TurnDeps(
        model=model,
        tools=tools,
        context=ToolContext(workspace=ws, agent=state.id),
        events=sink,
        policy=policy,
        approve=_make_approver(yes),
        max_rounds=max_rounds,
    )
    try:
        outcome = await run_turn(state, deps)
    except ModelError as exc:
        _note(f"error: model call failed: {exc}")
        return EXIT_FAILED
    if outcome.reason != "completed":
        _note(f"stopped: {outcome.reason} after {outcome.rounds} rounds")
        return EXIT_FAILED
    return EXIT_OK


async def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "run":
        return await _run_agent(
            goal=args.goal,
            model_spec=args.model,
            workspace=args.workspace or Path.cwd(),
            yes=args.yes,
            rules=args.allow,
            json_mode=args.json,
            max_rounds=args.max_rounds,
        )
    if args.command == "demo":
        return await _demo(args)
    raise AssertionError(f"unhandled command {args.command}")


async def _demo(args: argparse.Namespace) -> int:
    from orchestrator.demo import script_path

    workspace = args.workspace or Path(tempfile.mkdtemp(prefix="orchestrator-demo-"))
    workspace.mkdir(parents=True, exist_ok=True)
    _note(f"demo workspace: {workspace}")
    code = await _run_agent(
        goal="Write a small Python statistics module with mean() and median(), "
        "and a test for it; make the test pass.",
        model_spec=f"scripted:{script_path()}",
        workspace=workspace,
        yes=True,
        rules=[],
        json_mode=args.json,
        max_rounds=20,
    )
    _note(f"demo workspace: {workspace}")
    return code


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return trio.run(_dispatch, args)
    except ConfigError as exc:
        _note(f"error: {exc}")
        return EXIT_USAGE
    except OrchestratorError as exc:
        _note(f"error: {exc}")
        return EXIT_FAILED
    except KeyboardInterrupt:
        _note("interrupted")
        return 130
