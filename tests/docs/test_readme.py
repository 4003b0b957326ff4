"""The README's shell snippets and its Python example, run where they can run offline
(issue 38): every `orchestrator` command it shows (in a block or in the prose) parses
with the real grammar, so a command or flag that stops existing fails here; those that
need no model and no network run, and print what the README says they print (modulo
ids, paths, timings, sizes and token counts).

Not run, and why:
- `make demo`, `make test`: `make` builds a venv; what `make demo` runs (`orchestrator
  demo`, checked against the Makefile) runs here, its transcript checked line for line.
- the runs with a real model (`openai:`, `anthropic:`, `ollama:`, `openai-compatible:`),
  `export OPENAI_API_KEY=...`: they need a key and the network. Parsed only.
- `pip install -e '.[dbos]'`, `worker` and `run --engine dbos --workers` on Postgres:
  they need a package index and a database. Parsed only.
- the demo's last frame (the lines from `✓ planner` to `N done`): the live view, drawn at
  a terminal only (tests/cli/test_live_*.py); the transcript around it is checked.
- the README's kill-by-hand recipe runs with `--latency 0.01` for its `--latency 1`: the
  value only sets the pace, and a second a reply would make the resume take 20 s.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import orjson
import pytest

from orchestrator.cli.parser import build_parser

ROOT = Path(__file__).parents[2]
README = (ROOT / "README.md").read_text()
ORCHESTRATOR = str(Path(sys.executable).parent / "orchestrator")  # the installed command
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.MULTILINE | re.DOTALL)


def blocks(lang: str) -> list[str]:
    return [body for tag, body in FENCE.findall(README) if tag == lang]


def block_after(heading: str, lang: str = "sh") -> str:
    """The first `lang` block after `heading`."""
    rest = README[README.index(heading) :]
    [first, *_] = [body for tag, body in FENCE.findall(rest) if tag == lang]
    return first


def commands_and_outputs(block: str) -> list[tuple[str, list[str]]]:
    """A shell block's commands (`$ ` prompts, or every line of a block without them),
    each with the lines the README shows it printing."""
    lines = block.replace("\\\n", " ").splitlines()
    if not any(line.startswith("$ ") for line in lines):
        return [(line, []) for line in lines if line.strip()]
    found: list[tuple[str, list[str]]] = []
    for line in lines:
        if line.startswith("$ "):
            found.append((line[2:], []))
        else:
            found[-1][1].append(line)
    return found


def argv(command: str) -> list[str]:
    """The words of a command line, without its comment, its `&` or its redirection."""
    words = shlex.split(command, comments=True)
    for stop in (">", "&", "|"):
        if stop in words:
            words = words[: words.index(stop)]
    return words


def every_orchestrator_command() -> list[list[str]]:
    """Every `orchestrator ...` the README shows: in its shell blocks, and in its prose's
    code spans (`orchestrator chat -m M -w .`)."""
    found = [
        argv(command)
        for body in blocks("sh")
        for command, _ in commands_and_outputs(body)
        if re.match(r"(\.venv/bin/)?orchestrator ", command)
    ]
    prose = FENCE.sub("", README)
    found += [argv(span) for span in re.findall(r"`(orchestrator [^`]+)`", prose)]
    return found


@pytest.mark.parametrize("words", every_orchestrator_command(), ids=" ".join)
def test_every_command_the_readme_shows_parses(words: list[str]) -> None:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            build_parser().parse_args(words[1:])
        except SystemExit:
            pytest.fail(f"{' '.join(words)}: {err.getvalue()}")


def test_the_readme_shows_commands_of_every_kind() -> None:
    """The extraction above finds what it should (else the test before proves nothing)."""
    commands = {words[1] for words in every_orchestrator_command()}
    assert {"run", "demo", "resume", "sessions", "chat", "plan", "execute", "worker"} <= commands


def normal(line: str) -> str:
    """A line with what differs from run to run named instead, its spacing made one."""
    line = re.sub(r"\b\d{8}T\d{6}-[0-9a-f]{6}\b", "ID", line)
    line = re.sub(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\+00:00| UTC)", "TIME", line)
    line = re.sub(r"(~|/[\w.-]+)(/[\w.-]+)*/(orchestrator-demo-\w+|sessions)\b", "PATH", line)
    line = re.sub(r"\bpid \d+", "pid N", line)
    line = re.sub(r"\bm\d+\b", "mN", line)
    line = re.sub(r"\b\d+(\.\d+)?(s|k| KB| B)\b", "N", line)
    line = re.sub(r"\b\d{1,3}(,\d{3})+\b", "N", line)
    return " ".join(line.split())


def shown_in(expected: list[str], printed: str) -> list[str]:
    """The README's lines that `printed` does not have: each whole, but for where the
    README cuts it (` ...`); `  ...` lines stand for lines left out."""
    lines = {normal(line) for line in printed.splitlines()}
    missing = []
    for line in expected:
        if line.strip() in ("", "...") or line.startswith("$ "):
            continue
        cut = re.compile(" .* ?".join(map(re.escape, normal(line).split(" ..."))))
        if not any(cut.fullmatch(have) for have in lines):
            missing.append(line)
    return missing


def env(tmp_path: Path) -> dict[str, str]:
    """No terminal colours, no model of the developer's, sessions under `tmp_path`."""
    given = {**os.environ, "NO_COLOR": "1", "ORCHESTRATOR_SESSIONS_DIR": str(tmp_path / "sessions")}
    given.pop("ORCHESTRATOR_MODEL", None)
    return given


def sh(command: str, tmp_path: Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    command = command.replace(".venv/bin/orchestrator", ORCHESTRATOR)
    return subprocess.run(
        command, shell=True, capture_output=True, text=True, env=env(tmp_path), cwd=ROOT,
        stdin=subprocess.DEVNULL, timeout=120, check=False, **kwargs,  # type: ignore[arg-type]
    )  # fmt: skip


def test_the_tour_shows_what_the_demo_prints(tmp_path: Path) -> None:
    """`make demo`'s output block, against `orchestrator demo` (what `make demo` runs)."""
    [demo_output] = [b for b in blocks("") if b.startswith("$ make demo\n")]
    lines = demo_output.splitlines()
    assert lines[1] == ".venv/bin/orchestrator demo"  # what make echoes: its recipe
    assert "\t$(BIN)/orchestrator demo\n" in (ROOT / "Makefile").read_text()
    frame = [n for n, line in enumerate(lines) if line.startswith(("✓ planner ", "7 done"))]
    transcript = lines[2 : frame[0]] + lines[frame[-1] + 1 :]
    workspace = tmp_path / "orchestrator-demo-ws"
    ran = sh(f".venv/bin/orchestrator demo --plain -w {workspace}", tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    if "⊘ t5 cancelled" not in ran.stdout:
        # The README shows a run whose kill cut the background test short, as about half
        # are; in this one it ran to its end.
        assert "✔ t5 completed: exit code 0" in ran.stdout
        transcript = [line for line in transcript if "t5" not in line]
    assert shown_in(transcript, ran.stdout) == []
    assert ran.stdout.startswith("session ")


def test_the_kill_by_hand_recipe(tmp_path: Path) -> None:
    block = block_after("### A crash and a resume, by hand")
    [(start, []), (kill, []), (listing, listed), (resume, resumed)] = commands_and_outputs(block)
    assert argv(start)[1:] == ["demo", "--no-crash", "--latency", "1", "--plain"]
    assert argv(kill) == ["kill", "-9", "%1"]
    quick = start.replace("--latency 1", "--latency 0.01").replace(" &", "")
    demo = subprocess.Popen(
        quick.replace(".venv/bin/orchestrator", ORCHESTRATOR), shell=True, env=env(tmp_path),
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        start_new_session=True,
    )  # fmt: skip
    assert demo.stdout is not None
    first = demo.stdout.readline()  # its session exists: any instant from here on
    os.killpg(demo.pid, signal.SIGKILL)
    demo.wait()
    demo.stdout.close()
    assert first.startswith("session ")

    shown = sh(listing, tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert shown_in(listed, shown.stdout) == []
    went_on = sh(resume, tmp_path)
    assert went_on.returncode == 0, went_on.stdout + went_on.stderr
    assert shown_in(resumed, went_on.stdout) == []
    # The session --last took is named first, and it is the one killed.
    assert went_on.stdout.startswith(f"--last: session {first.split()[1]}, created ")


def test_the_recorded_session_recipe(tmp_path: Path) -> None:
    block = block_after("`sessions/` holds real")
    commands = [c for c, _ in commands_and_outputs(block)]
    assert [argv(c)[:2] for c in commands] == [
        ["cp", "-r"], [".venv/bin/orchestrator", "sessions"], [".venv/bin/orchestrator", "resume"]
    ]  # fmt: skip
    ran = [sh(c.replace("/tmp/s", str(tmp_path / "copy")), tmp_path) for c in commands]
    for result in ran:
        assert result.returncode == 0, result.stdout + result.stderr
    assert "stopped (resumable)" in ran[1].stdout
    assert re.search(r"^session \S+ completed", ran[2].stdout, re.MULTILINE), ran[2].stdout


def test_models_runs_offline(tmp_path: Path) -> None:
    [models] = [c for b in blocks("sh") for c, _ in commands_and_outputs(b) if " models" in c]
    shown = sh(models, tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "providers:" in shown.stdout


def test_the_python_example_runs_on_the_scripted_model(tmp_path: Path) -> None:
    """The README's Python block, its model a script that calls its tool (the one change),
    inside an async function (the README's `await` is at the top level)."""
    [example] = blocks("python")
    script = tmp_path / "script.json"
    replies = [
        {"tool_calls": [{"name": "lookup", "arguments": {"city": "Oslo"}}]},
        {"text": "Yes: it is sunny in Oslo."},
    ]
    script.write_bytes(orjson.dumps({"agents": {"main": replies}}))
    assert 'model="openai:gpt-4.1"' in example
    body = example.replace('model="openai:gpt-4.1"', f'model="scripted:{script}"')
    program = "import trio\n\nasync def main():\n" + textwrap.indent(body, "    ")
    program += "\ntrio.run(main)\n"
    (tmp_path / "example.py").write_text(program)
    ran = subprocess.run(
        [sys.executable, str(tmp_path / "example.py")], capture_output=True, text=True,
        env=env(tmp_path), cwd=tmp_path, timeout=60, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    output, tokens, directory = ran.stdout.rsplit(" ", 2)
    assert output == "Yes: it is sunny in Oslo."
    assert int(tokens) > 0
    assert Path(directory.strip()).is_dir()
