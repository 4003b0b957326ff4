"""The command line's grammar: every command, option and help text, and nothing else.

Kept apart from what the commands do, and importing nothing heavy, so that `--help` and
usage errors answer at once.
"""

from __future__ import annotations

import argparse
import signal
from pathlib import Path
from typing import Any

from orchestrator.cli.options import Commands, config_option, sessions_option
from orchestrator.cli.parser_agents import (
    agent_options,
    approve_option,
    plain_option,
    workspace_options,
)
from orchestrator.cli.parser_mcp import add_mcp_parser
from orchestrator.cli.parser_sessions import add_sessions_parser
from orchestrator.cli.parser_worker import add_engine_parser, add_worker_parser

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_BLOCKED, EXIT_BUDGET = 0, 1, 2, 3, 4
EXIT_STORAGE = 5  # the disk refused a write: the session is kept, resume it once it has room
EXIT_TERMINATED = 128 + signal.SIGTERM
EXIT_INTERRUPTED = 128 + signal.SIGINT  # Ctrl+C

DESCRIPTION = """\
Run LLM agents that use tools in a workspace; every session is journaled and survives a
crash (resume it where it stood).

  orchestrator demo                        offline demo with a scripted model
  orchestrator run "GOAL" --model M -w .   run an agent on a goal (prints a session id)
  orchestrator plan "GOAL" -m M -w .       a planner writes a plan (printed), and stops
  orchestrator execute ID --approve        build a planned session's plan (or a plan file)
  orchestrator run "GOAL" --plan           plan, ask for approval, then build
  orchestrator resume --last --yes         continue the newest session
  orchestrator sessions list               sessions, newest first
  orchestrator sessions watch --last       follow the newest session (or replay it)
  orchestrator models                      configured models and whether keys are set
  orchestrator models test M               one small request: does the model work?
  orchestrator config show                 the effective settings and where each comes from

Models: scripted:PATH (offline, see docs/scripted-model.md), openai:MODEL,
anthropic:MODEL, ollama:MODEL, openai-compatible:MODEL@URL.
Sessions live in --sessions-dir, else $ORCHESTRATOR_SESSIONS_DIR, else the user data dir.
Exit codes: 0 completed, 1 failed, 2 usage error, 3 blocked (it needs an answer:
resume with --message), 4 budget exhausted (resume with a larger budget), 5 the disk
refused a write (full, read-only or failing: resume once it has room), 130/143 stopped
by Ctrl+C/SIGTERM (the session stays resumable).
"""


def _add_plan_parsers(commands: Any) -> None:
    plan = commands.add_parser(
        "plan",
        help="write a plan for a goal, and stop (approve and build it with execute)",
        description="A planner with read-only tools studies the workspace and writes a "
        "plan for GOAL: tasks with dependencies, write scopes and acceptance checks "
        "(docs/plans.md). The plan is printed (markdown) and kept in the session's plan.json "
        "and plan.md; the session stays resumable: `orchestrator execute ID --approve` "
        "builds it, `orchestrator resume ID` at a terminal asks you first.",
    )
    plan.add_argument("goal", help="what the plan should reach, in plain words")
    agent_options(
        plan,
        model_required_note="model spec for every role (default: the session's, "
        "$ORCHESTRATOR_MODEL or the config's model; the planner's own with [agents.planner] "
        "model)",
    )
    workspace_options(plan)
    execute = commands.add_parser(
        "execute",
        help="build a plan: a plan file (json or markdown) or a planned session",
        description="Build a plan. TARGET is a plan file (plan.json, or markdown in the "
        "grammar of docs/plans.md), which starts a new session with it as the first "
        "version; or the id of a session whose plan waits for approval. Either way the "
        "plan is approved first: at the terminal you are asked (approve, reject, edit, "
        "quit), --approve approves it, and without either the run stops blocked (exit 3).",
    )
    execute.add_argument("target", metavar="PLAN-FILE|ID", help="a plan file, or a session id")
    agent_options(execute, model_required_note="model spec (for a session: instead of its own)")
    approve_option(execute)
    workspace_options(execute)


COMMANDS = (
    "run", "resume", "plan", "execute", "chat", "demo", "sessions", "models", "config",
    "worker", "engine", "mcp",
)  # fmt: skip
"""The commands, as `build_parser` makes them (a test holds the two together): a command
line that starts with one is that command's, without the grammar of every command."""


def build_parser(only: str | None = None, action: str | None = None) -> argparse.ArgumentParser:
    """The grammar; with `only`, of that command's options alone (see `Commands`), and
    with `action`, of that `sessions` action's alone."""
    parser = argparse.ArgumentParser(
        prog="orchestrator",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sessions_option(parser)
    config_option(parser)
    commands = Commands.add_to(parser, only, dest="command", metavar="COMMAND")
    commands.required = True

    run = commands.add_parser(
        "run",
        help="run an agent on a goal in a new session",
        description="Run the main agent on GOAL in a workspace, with the subagents it "
        "delegates to, showing a live transcript. When its turn ends, the session is "
        "assessed: work left (open todos) sends it back on its own (auto-continue, "
        "--max-auto-continues), the --verify commands run before it may complete, and it "
        "waits for its live tasks; it ends completed (exit 0), blocked (3) or "
        "budget_exhausted (4). Calls that need approval are asked at the terminal; with no "
        "terminal and no --yes they are refused, and the run ends blocked unless "
        "verified. The session id is printed first; if the run is stopped or killed, "
        "`orchestrator resume ID` continues it.",
    )
    run.add_argument(
        "goal",
        nargs="?",
        default=None,
        help="what the agent should achieve, in plain words (none: an interactive session, "
        "as `chat`; it needs a terminal)",
    )
    agent_options(
        run,
        model_required_note="model spec, e.g. scripted:script.json, openai:gpt-4o, "
        "anthropic:claude-sonnet-4-5 (default: $ORCHESTRATOR_MODEL)",
    )
    workspace_options(run)
    run.add_argument(
        "--plan",
        action="store_true",
        help="plan first: a planner (read-only tools) writes a plan, you approve it (or "
        "--approve), then a builder delegates its tasks (docs/plans.md)",
    )
    approve_option(run)

    resume = commands.add_parser(
        "resume",
        help="continue a stopped or crashed session where it stood",
        description="Continue session ID (or the newest with --last) from its journal, with "
        "the settings it was started with (journaled; the config files as they are now do "
        "not change them); a setting given here (a session flag, --max-rounds, --allow) "
        "replaces that one from now on. Tool calls cut off by a crash are reported to the "
        "model as interrupted (idempotent ones are simply run again). A blocked session "
        "goes on once --message answers it; a session whose budget ran out goes on with a "
        "larger one (--max-auto-continues, --budget-*); a finished session is left alone "
        "unless --message follows it up.",
    )
    resume.add_argument("session_id", nargs="?", metavar="ID", help="session id")
    resume.add_argument("--last", action="store_true", help="resume the newest session")
    resume.add_argument(
        "--message",
        metavar="TEXT",
        default=None,
        help="say TEXT to the main agent as it resumes: the answer a blocked session waits "
        "for, or a follow-up to a finished one (which then goes on)",
    )
    resume.add_argument(
        "--approve-call",
        action="append",
        default=[],
        metavar="ID",
        help="approve the call ID that waits for approval (sessions show lists them): it "
        "runs once as the session resumes; may be repeated",
    )
    resume.add_argument(
        "--deny-call",
        action="append",
        default=[],
        metavar="ID",
        help="refuse the call ID that waits for approval; the model reads --reason; may be "
        "repeated",
    )
    resume.add_argument(
        "--reason",
        metavar="TEXT",
        default="",
        help="with --deny-call: why, which the model reads",
    )
    agent_options(resume, model_required_note="use this model instead of the session's own")
    approve_option(resume)
    _add_plan_parsers(commands)
    _add_chat_parser(commands)

    demo = commands.add_parser(
        "demo",
        help="run the offline demo (scripted model, no network)",
        description="Run the offline demo, the whole product: a scripted planner writes a "
        "plan of four tasks with dependencies, approved automatically (--approve); the "
        "builder delegates all four at once and the runtime starts two when the first two "
        "are done; the demo kills the process (SIGKILL) while they work and resumes the "
        "session from its journal; one worker asks a question the builder answers, one "
        "reports blocked and its task is re-planned (plan v2), one fails its acceptance "
        "check once; one worker runs its test in the background while it documents its "
        "module; the builder's context is compacted once; the plan's checks verify the "
        "end. Needs no network and no key.",
    )
    demo.add_argument(
        "-w",
        "--workspace",
        type=Path,
        default=None,
        help="directory to work in (default: a fresh temporary directory)",
    )
    demo.add_argument("--json", action="store_true", help="print events as JSON lines")
    plain_option(demo)
    demo.add_argument(
        "--no-crash",
        action="store_true",
        help="skip the simulated crash (by default the agent process is SIGKILLed at its "
        "first shell call and the session is resumed)",
    )
    demo.add_argument(
        "--latency",
        type=_latency,
        default=0.0,
        metavar="SECONDS",
        help="each model reply waits SECONDS before it comes, as a real model's would (0 "
        "to 60; default: 0): the run then takes long enough to watch, or to kill by hand "
        "and resume (with --no-crash)",
    )
    sessions_option(demo)

    add_sessions_parser(commands, action)
    add_models_parser(commands)
    _add_config_parser(commands)
    add_worker_parser(commands)
    add_engine_parser(commands)
    add_mcp_parser(commands)
    return parser


CHAT_EPILOG = """\
At the input line: a message goes to the main agent (while it works, or as a follow-up
when it is done); /help lists the commands (/tasks, /send, /answer, /cancel, /focus,
/todos, /compact, /budget, /quit). Ctrl+C stops the running turn; twice leaves. A call
that needs approval is asked above the input line and answered on it.

examples:
  orchestrator chat -m openai:gpt-4o -w .       ask for the goal, then work on it
  orchestrator chat "add a --json flag" -w .    start with a goal, keep talking
  orchestrator chat --resume ID                 go on talking in session ID
  orchestrator chat --last                      ... in the newest session
"""


def _add_chat_parser(commands: Any) -> None:
    chat = commands.add_parser(
        "chat",
        help="an interactive session: talk to the main agent while its team works",
        description="Start a session at the terminal and talk to it: the live view of "
        "the agents and tasks under an input line, the transcript above. The session is "
        "journaled like any other: leave when you like and resume it (here, with "
        "--resume, or with `orchestrator resume`). Needs a terminal.",
        epilog=CHAT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    chat.add_argument(
        "goal", nargs="?", default=None, help="the first message (default: asked for)"
    )
    which = chat.add_mutually_exclusive_group()
    which.add_argument("--resume", metavar="ID", default=None, help="talk in session ID")
    which.add_argument("--last", action="store_true", help="talk in the newest session")
    agent_options(
        chat,
        model_required_note="model spec (default: $ORCHESTRATOR_MODEL or the config's; "
        "with --resume, the session's own)",
    )
    workspace_options(chat)
    chat.add_argument(
        "--plan", action="store_true", help="plan first, the plan approved at the input line"
    )
    approve_option(chat)


def _add_config_parser(commands: Any) -> None:
    config = commands.add_parser(
        "config",
        help="show the effective configuration",
        description="Look at the configuration that `run` and `resume` would use.",
    )
    actions = config.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    show = actions.add_parser(
        "show",
        help="every setting of [session], [team], [compaction] and [view], the model, and "
        "where each comes from",
        description="Print the effective value of every [session], [team], [compaction], [view] "
        "key, the model "
        "and each role's model, and the layer that set it: the user's config file, the "
        "project's .orchestrator/config.toml in the workspace, --config FILE or "
        "$ORCHESTRATOR_CONFIG, or the default. Settings of a project config that need "
        "your trust and do not have it are shown as ignored (`run` would ask about them).",
    )
    show.add_argument(
        "-w",
        "--workspace",
        type=Path,
        default=None,
        metavar="DIR",
        help="the workspace whose .orchestrator/config.toml applies (default: the current "
        "directory)",
    )
    show.add_argument(
        "--json",
        action="store_true",
        help='print one JSON object: {"KEY": {"value": ..., "source": ...}}',
    )
    config_option(show)


def add_models_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register `models` on an argparse subparsers object."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "models",
        help="list configured providers and models, and whether their API keys are set",
        description="List the built-in and configured providers (base URL, the variable "
        "holding each API key and whether it is set) and the model each agent role uses. "
        "Keys are never printed. Exit code 1 if a configured model cannot be used.",
    )
    config_option(parser)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    tests = parser.add_subparsers(dest="models_command", metavar="{test}")
    test = tests.add_parser(
        "test",
        help="send one small request to a model and say whether it works",
        description="Send SPEC one small streamed request with one tool offered, asking "
        "it to call the tool; report the latency (first event, total), whether the tool "
        "call came back, whether usage arrived in the stream and the cache figures. A "
        "failure is one line naming its cause (wrong key, wrong URL, unknown model, no "
        "tool support, timeout). Exit code 1 if the model does not work.",
    )
    test.add_argument("spec", metavar="SPEC", help="the model, e.g. openai:gpt-4.1")
    test.add_argument(
        "--timeout",
        type=_seconds,
        default=60.0,
        metavar="SECONDS",
        help="give up after this long (default 60)",
    )
    config_option(test)
    test.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print the report as JSON"
    )
    return parser


def _seconds(text: str) -> float:
    """`models test --timeout`: seconds, more than 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"must be more than 0 and at most 3600, not {text}")
    return value


def _latency(text: str) -> float:
    """The demo's `--latency`: seconds, as the scripted model's `latency` takes them."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 <= value <= 60:
        raise argparse.ArgumentTypeError(f"must be from 0 to 60 seconds, not {text}")
    return value


def _version() -> str:
    from orchestrator._version import __version__

    return __version__
