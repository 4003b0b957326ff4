"""The scripted-scene helpers every test shares: `c` and `reply` to script a model,
`call` for the same call in a JSON script, `Scene` (a session in memory with a main
agent and a scripted brain per agent), `steps` to answer a brain's nth call with its nth
reply (`delegates_and_waits`, `asks_then_completes`: two brains often met), what reads
a request (`last_text`, `all_text`, `question_id`), `orchestrator`, the command in a
subprocess (`pasted`, a printed command line; `orchestrator_on_trio` from a test on
trio), `first_line_then_kill` for a child killed at a point it reports,
`matches_golden`, `assert_in` for many pieces of one text, and `alive` / `gone_soon`
for a process."""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import trio

import orchestrator as orc
from orchestrator import (
    AgentStarted,
    ScriptedCall,
    ScriptedModel,
    ScriptedReply,
    SystemMessage,
    Usage,
    UserMessage,
)
from orchestrator.models import Model, ModelRequest
from orchestrator.models.scripted import parse_script
from orchestrator.session import MemorySession, create_session
from orchestrator.state import FanOut, ListSink, Mail, SessionSettings
from orchestrator.state.mailbox import MailHistory
from orchestrator.team import MainOutcome, Policy, RunSettings, Seat, Team, open_team, run_main
from orchestrator.team.queries import MAIN
from orchestrator.tools import PermissionPolicy, Sandbox, Workspace, approve_all, workspace_tools
from tests.team.engines import LOCAL, Engine

CHECKOUT = Path(__file__).parents[1]

Reply = ScriptedReply | Awaitable[ScriptedReply]


def c(name: str, **arguments: Any) -> ScriptedCall:
    """A tool call in a scripted reply: `reply("", c("read_file", path="a.txt"))`."""
    return ScriptedCall(name=name, arguments=arguments)


def reply(text: str = "", *calls: ScriptedCall, usage: Usage | None = None) -> ScriptedReply:
    """A scripted model's reply: its text, then its tool calls."""
    return ScriptedReply(text=text, tool_calls=calls, usage=usage)


def call(name: str, **arguments: Any) -> dict[str, Any]:
    """The same call as a JSON script writes it (`parse_script`, `scripted:FILE`): for
    scripts written to a file for a session in a subprocess."""
    return {"name": name, "arguments": arguments}


def scripted(*replies: dict[str, Any], agent: str = "main") -> ScriptedModel:
    """A scripted model playing `agent` with these JSON-script replies."""
    return ScriptedModel(parse_script({"agents": {agent: list(replies)}}))


def one_task_script(
    description: str, prompt: str, timeout: float, task: list[Any], *said: str
) -> dict[str, Any]:
    """A JSON script's agents: the main agent delegates one task ("One task."), waits for
    it up to `timeout` seconds, then says each of `said` in turn; t1 plays `task`."""
    delegate = call("delegate", description=description, prompt=prompt)
    first = {"text": "One task.", "tool_calls": [delegate, call("wait_tasks", timeout=timeout)]}
    return {"main": [first, *({"text": text} for text in said)], "t1": task}


Brain = Callable[[ModelRequest], Reply]


def run_settings(model: Model, **more: Any) -> RunSettings:
    """What most tests give `drive`: `model`, the workspace tools, events into a list, the
    default permission policy with every asked call approved, and `more` (which may
    replace any of them)."""
    wiring: dict[str, Any] = {
        "tools": workspace_tools(),
        "ui": ListSink(),
        "policy": PermissionPolicy(),
        "approve": approve_all,
    }
    return RunSettings(model=model, **(wiring | more))


def scripted_session(
    tmp_path: Path, script: dict[str, Any], goal: str = "g"
) -> tuple[Path, str, Path]:
    """A session made, not run, under `tmp_path`/sessions, its model `script` (written to
    `tmp_path`/script.json): (the sessions root, its id, its directory)."""
    path = tmp_path / "script.json"
    path.write_bytes(orjson.dumps(script))
    root = tmp_path / "sessions"
    session_id, directory = create_session(
        root, goal=goal, model=f"scripted:{path}", workspace=None
    )
    return root, session_id, directory


def journaled_session(root: Path, script: Path, goal: str = "g", **settings: Any) -> str:
    """A session made under `root`, never run, whose model plays the script file `script`,
    with `settings` journaled as `run` journals them: its id."""
    session_id, _ = create_session(
        root,
        goal=goal,
        model=f"scripted:{script}",
        workspace=None,
        settings=SessionSettings(**settings),
        source="run",
    )
    return session_id


class HistorySession(MemorySession):
    """A session in memory that also folds every message into a history (the live state
    keeps only the mail still in flight), as `sessions show` reads it from a journal."""

    def __init__(self) -> None:
        super().__init__()
        self.history = MailHistory()

    async def emit(self, event: Any, *, durable: bool = False) -> None:
        record = event.record()
        if record is not None:
            self.state.apply(self.state.seq + 1, record)
            self.history.apply(self.state.seq, record)


class Scene:
    """One session in memory with a main agent and scripted brains per agent id, its
    delegated tasks run on `engine` (`local` unless a test asks for `engine`: conftest.py).
    Its session has an id, as on disk: the dbos engine names each task's workflow by it."""

    def __init__(
        self,
        workspace: Workspace,
        brains: dict[str, Brain],
        *,
        policy: Policy | None = None,
        sandbox: Sandbox | None = None,
        # Tests on `autojump_clock` leave it `local` (tests/team/conftest.py says why).
        engine: Engine = LOCAL,
        **limits: Any,
    ) -> None:
        self.brains = brains
        self.engine = engine
        self.session = HistorySession()
        self.events = ListSink()
        self.model = ScriptedModel(self._answer)
        policy = policy or Policy()
        budgets = policy.budgets
        # The run's wiring: every call the rules ask about is approved.
        self.wiring = RunSettings(
            model=self.model,
            tools=workspace_tools(sandbox=sandbox),
            approve_for=lambda agent, who: approve_all,
            prices=dict(policy.prices),
            interactive=policy.interactive,
        )
        self.seat = Seat(
            workspace=workspace,
            session_id="scene",
            # The test's assessment policy and limits, as the session's settings.
            settings=SessionSettings(
                max_auto_continues=policy.max_auto_continues,
                stall_rounds=policy.stall_rounds,
                verify=policy.verify,
                continuation_note=policy.note,
                serial=policy.serial,
                budget_rounds=budgets.rounds,
                budget_tokens=budgets.tokens,
                budget_cost=budgets.cost,
                budget_wall=budgets.wall,
                **limits,
            ),
        )
        self.team: Team | None = None

    def wire(self, **changes: Any) -> None:
        """The run's wiring with `changes` (`definitions=...`, `ask_resume=...`)."""
        self.wiring = dataclasses.replace(self.wiring, **changes)

    def _answer(self, request: ModelRequest) -> Reply:
        key = request.agent if request.agent in self.brains else request.role
        return self.brains[key](request)

    @property
    def state(self) -> Any:
        return self.session.state

    @property
    def mail(self) -> dict[str, Mail]:
        """Every message posted, delivered or not."""
        return self.session.history.messages

    async def run(self, goal: str = "the goal") -> MainOutcome:
        messages = (SystemMessage(content="main"), UserMessage(content=goal))
        sink = FanOut([self.session, self.events])
        if MAIN not in self.state.agents:
            await sink.emit(AgentStarted(agent=MAIN, role="main", messages=messages))
        runner = self.engine.runner
        async with open_team(self.session, sink, self.wiring, self.seat, runner=runner) as team:
            self.team = team
            return await run_main(team)

    async def completes(self, goal: str = "the goal") -> MainOutcome:
        """`run`, which must end completed: its outcome."""
        outcome = await self.run(goal)
        assert outcome.reason == "completed", outcome
        return outcome

    def kinds(self) -> list[tuple[str, str, str]]:
        return [(m.kind, m.sender, m.recipient) for m in self.mail.values()]


# The built-in agent types, with the workspace's tools they work with.
TEAM = {"tools": orc.workspace_tools(), "agents": orc.builtin_agents()}


async def yes(request: orc.ApprovalRequest) -> bool:
    return True


async def run_team(
    goal: str, main: Brain, workspace: Path, tmp_path: Path, **more: Any
) -> orc.RunResult:
    """`orc.run(goal)`: `main` plays the model, the built-in team works in `workspace`, the
    session is under `tmp_path`/s and every call asked about is approved; `more` added
    (`settings`, `on_event`)."""
    return await orc.run(
        goal, model=ScriptedModel(main), workspace=workspace, sessions_dir=tmp_path / "s",
        approve=yes, **TEAM, **more,
    )  # fmt: skip


def steps(*replies: ScriptedReply | Callable[[ModelRequest], Reply]) -> Brain:
    """A brain answering its nth model call with the nth reply (a function gets the
    request)."""

    def brain(request: ModelRequest) -> Reply:
        if request.step >= len(replies):
            raise AssertionError(
                f"{request.agent} asked for reply {request.step}; last: {last_text(request)!r}"
            )
        chosen = replies[request.step]
        return chosen(request) if callable(chosen) else chosen

    return brain


def delegates_and_waits(then: str = "done", **delegate: Any) -> Brain:
    """The main agent's brain that delegates one task, waits for it, and ends saying
    `then`."""
    return steps(
        reply("", c("delegate", **delegate)),
        reply("", c("wait_tasks")),
        reply(then),
    )


def asks_then_completes(summary: str = "chose", question: str = "x or y?") -> Brain:
    """A task's brain that asks `question` (`ask_decision`), then completes saying
    `summary`."""
    return steps(
        reply("", c("ask_decision", question=question)),
        reply("", c("complete", summary=summary)),
    )


def in_background(request: ModelRequest, command: str) -> ScriptedReply | None:
    """A brain's first replies: `command` in the background (task t1), then waiting for
    t1 until the brain has heard of its end; None once it has."""
    if request.step == 0:
        return reply("", c("shell", command=command, background=True))
    if "background call t1" not in all_text(request):
        return reply("", c("wait_tasks", tasks=["t1"]))
    return None


def last_text(request: ModelRequest) -> str:
    message = request.messages[-1]
    return getattr(message, "content", "") or getattr(message, "text", "")


def all_text(request: ModelRequest) -> str:
    return "\n".join(getattr(m, "content", "") or getattr(m, "text", "") for m in request.messages)


def question_id(request: ModelRequest) -> str:
    found = re.findall(r"<decision_required id=(m\d+)", all_text(request))
    assert found, all_text(request)
    return found[-1]


def assert_in(text: str, *pieces: str) -> None:
    """Each of `pieces` is in `text`; a failure names every piece missing, then the text."""
    missing = [piece for piece in pieces if piece not in text]
    assert not missing, f"missing {missing} from:\n{text}"


def orchestrator(
    *args: str,
    module: str = "orchestrator",
    cwd: Path | None = None,
    timeout: float = 120,
    **env: str,
) -> subprocess.CompletedProcess[str]:
    """`python -m orchestrator ARGS` in a subprocess with no terminal (stdin /dev/null),
    `env` added to ours, NO_COLOR, and no ORCHESTRATOR_MODEL (a developer's own must not
    choose the model). `timeout` bounds a broken test; it is never what is asserted."""
    full_env = {**os.environ, "NO_COLOR": "1", **env}
    full_env.pop("ORCHESTRATOR_MODEL", None)
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=full_env,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
        check=False,
    )


def run_flags(workspace: Path, sessions: Path) -> list[str]:
    """The flags of a run that works in `workspace`, keeps its session under `sessions`
    and asks nobody (`--yes`)."""
    return ["--workspace", str(workspace), "--sessions-dir", str(sessions), "--yes"]


async def orchestrator_on_trio(
    *args: str, seconds: float = 60, **env: str
) -> subprocess.CompletedProcess[bytes]:
    """`orchestrator(*args, **env)` for a test on trio whose loopback servers must go on
    answering while the command runs: its output in bytes, failing after `seconds`."""
    full_env = {**os.environ, "NO_COLOR": "1", **env}
    full_env.pop("ORCHESTRATOR_MODEL", None)
    with trio.fail_after(seconds):
        return await trio.run_process(
            [sys.executable, "-m", "orchestrator", *args],
            capture_stdout=True,
            capture_stderr=True,
            stdin=subprocess.DEVNULL,
            env=full_env,
            check=False,
        )


def pasted(command: str, *more: str) -> subprocess.CompletedProcess[str]:
    """A printed `orchestrator ...` command run as pasted (with `more` flags), with nobody
    at a terminal."""
    argv = shlex.split(command)
    assert argv[0] == "orchestrator"
    return orchestrator(*argv[1:], *more)


def matches_golden(path: Path, text: str) -> None:
    """`text` is the golden file at `path`; `ORCHESTRATOR_GOLDEN=1` writes it instead
    (then read it before committing it)."""
    if os.environ.get("ORCHESTRATOR_GOLDEN") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"no {path}: write it with ORCHESTRATOR_GOLDEN=1, then read it"
    assert text == path.read_text()


def first_line_then_kill(code: str, *args: str) -> str:
    """Runs the Python `code` in a child process (`args` its `sys.argv[1:]`, this checkout
    importable), waits for the first line it prints, SIGKILLs it, and returns the line."""
    env = {**os.environ, "PYTHONPATH": str(CHECKOUT)}
    with subprocess.Popen(
        [sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True, env=env
    ) as child:
        assert child.stdout is not None
        line = child.stdout.readline()
        child.send_signal(signal.SIGKILL)
    return line


def killed_when(args: list[str], when: Callable[[dict[str, Any]], bool]) -> str:
    """Runs `orchestrator ARGS` (`--json` among them) in a process group of its own,
    SIGKILLs the group at the first event `when` holds for, and returns the first line
    the run said to people (its session line, with the command to resume it)."""
    argv = [sys.executable, "-m", "orchestrator", *args]
    with subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        env={**os.environ, "NO_COLOR": "1"},
    ) as proc:
        assert proc.stdout is not None
        assert proc.stderr is not None
        first = proc.stderr.readline().decode()
        for line in proc.stdout:
            if when(orjson.loads(line)):
                os.killpg(proc.pid, signal.SIGKILL)
                break
        proc.wait(timeout=120)
    assert proc.returncode == -signal.SIGKILL, first
    return first


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for its reaper does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")


def wait_until(done: Callable[[], bool], seconds: float = 10) -> bool:
    """Whether `done()` holds within `seconds`: another process's progress (a killed
    process's end, a file it writes), which no event of ours can tell, polled."""
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            return False
        os.sched_yield()
    return True


def gone_soon(pid: int) -> bool:
    """Whether `pid` dies within 10 s: a SIGKILL is delivered, not awaited."""
    return wait_until(lambda: not alive(pid))
