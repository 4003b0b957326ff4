"""`--by-file` (tests/progress.py): a line per test file, alone and under xdist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

FILES = {
    "test_one": """
        import pytest

        def test_a(): pass
        def test_b(): assert 1 == 2
        @pytest.mark.skip(reason="not here")
        def test_c(): pass
    """,
    "test_two": """
        import pytest

        @pytest.fixture
        def broken(): raise RuntimeError("setup")

        def test_d(): pass
        def test_e(broken): pass
    """,
}


@pytest.fixture(autouse=True)
def importable(monkeypatch: pytest.MonkeyPatch) -> None:
    """The inner pytest imports `tests.progress` from this checkout."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["alone", "xdist"])
def test_each_file_gets_one_line_with_its_outcomes_and_the_count(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    pytester.makepyfile(**FILES)
    result = pytester.runpytest_subprocess("-p", "tests.progress", "--by-file", "-q", *workers)
    lines = result.outlines
    one = [line for line in lines if line.startswith("test_one.py ")]
    two = [line for line in lines if line.startswith("test_two.py ")]
    assert len(one) == len(two) == 1, lines
    assert re.search(r"1 failed, 1 passed, 1 skipped +\d+\.\d s +\d/5  0:\d\d$", one[0]), one
    assert re.search(r"1 error, 1 passed +\d+\.\d s +\d/5  0:\d\d$", two[0]), two
    assert any(" 5/5  " in line for line in one + two), lines  # the last file ends the run
    assert not any(re.fullmatch(r"[.s]+.*", line) for line in lines), lines  # no dots
    result.assert_outcomes(passed=2, failed=1, skipped=1, errors=1)


def test_without_the_option_pytest_shows_its_dots(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(**FILES)
    result = pytester.runpytest_subprocess("-p", "tests.progress", "-q")
    assert not any(line.startswith("test_one.py ") for line in result.outlines)
    assert any(line.startswith(".Fs") for line in result.outlines), result.outlines
