"""Bad config (issue 37, item 10): every value's range is checked before a session
exists, one line naming the file, the key and the range; a file too deep to read, or
not TOML, is one line too, never a traceback or a half-made session."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from orchestrator.config import Config, PlanConfig, parse_config
from orchestrator.errors import ConfigError
from orchestrator.loop.plan import LIMITS


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (
            "[team]\nmax_live = 99999999999999999999999999",
            "f.toml: team.max_live: Input should be less than or equal to 10000 (accepted: "
            "at least 1, at most 10000; got 99999999999999999999999999)",
        ),
        (
            "[team]\nwait_timeout = inf",
            "f.toml: team.wait_timeout: Input should be a finite number",
        ),
        (
            "[session]\nbudget_wall = nan",
            "f.toml: session.budget_wall: Input should be a finite number",
        ),
        (
            "[session]\nbudget_tokens = 9223372036854775808",
            "f.toml: session.budget_tokens: Input should be less than or equal to",
        ),
        (
            "[providers.x]\nkind = 'openai'\nmax_retries = 1000",
            "f.toml: providers.x.max_retries: Input should be less than or equal to 100 "
            "(accepted: at least 0, at most 100; got 1000)",
        ),
        (
            "[plan]\nmax_tasks = 0",
            "f.toml: plan.max_tasks: Input should be greater than or equal to 1 (accepted: "
            "at least 1, at most 10000; got 0)",
        ),
        (
            "[windows.m]\ncontext = 10000000000",
            "f.toml: windows.m.context: Input should be less than or equal to 1000000000",
        ),
    ],
)
def test_a_value_out_of_range_is_one_line_naming_file_key_and_range(text: str, line: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, source="f.toml")
    assert str(caught.value).startswith(line)
    assert "\n" not in str(caught.value)


def test_each_problem_is_a_line_of_its_own() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config("[team]\nmax_live = 0\nmax_depth = 1000", source="f.toml")
    assert str(caught.value).splitlines() == [
        "f.toml: team.max_depth: Input should be less than or equal to 100 (accepted: at "
        "least 1, at most 100; got 1000)",
        "f.toml: team.max_live: Input should be greater than or equal to 1 (accepted: at "
        "least 1, at most 10000; got 0)",
    ]


def test_a_config_nested_too_deep_is_one_line() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config("a = " + "[" * 5000 + "]" * 5000, source="f.toml")
    assert str(caught.value) == "f.toml: not readable: its arrays or tables are nested too deep"


def test_every_numeric_key_has_an_upper_bound() -> None:
    """A value past 64 bits, or `inf`, cannot reach the journal through any key."""
    unbounded = []

    def walk(model: type, prefix: str) -> None:
        for name, info in model.model_fields.items():  # type: ignore[attr-defined]
            for arg in (info.annotation, *getattr(info.annotation, "__args__", ())):
                if isinstance(arg, type) and hasattr(arg, "model_fields"):
                    walk(arg, f"{prefix}{name}.")
            numeric = {int, float} & {info.annotation, *getattr(info.annotation, "__args__", ())}
            bounded = any(
                getattr(m, "le", None) is not None or getattr(m, "lt", None) is not None
                for m in info.metadata
            )
            if numeric and not bounded and info.annotation is not bool:
                unbounded.append(prefix + name)

    walk(Config, "")
    assert unbounded == []


def test_the_plan_table_defaults_are_the_plan_rules() -> None:
    assert PlanConfig().model_dump() == msgspec.structs.asdict(LIMITS)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[team]\nmax_live = 99999999999999999999999999\n", "team.max_live: Input should be"),
        ("a = " + "[" * 5000 + "]" * 5000 + "\n", "nested too deep"),
        ("[session\n", "not valid TOML"),
    ],
)
def test_run_refuses_a_bad_config_before_any_session_exists(
    tmp_path: Path, text: str, said: str
) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(text)
    sessions = tmp_path / "sessions"
    (tmp_path / "ws").mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "run", "x", "--config", str(config),
         "--sessions-dir", str(sessions), "--model", "scripted:none.json", "--plain", "--yes",
         "-w", str(tmp_path / "ws")],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"error: --config {config}: ")
    assert said in line
    assert not sessions.exists() or not any(sessions.iterdir())
