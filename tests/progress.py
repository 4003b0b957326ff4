"""`pytest --by-file`: one line per test file as it finishes, instead of a dot per test.

    tests/cli/test_cli.py                      42 passed              17.2 s   412/1724  2:31

Each line names the file, its outcomes, the seconds its tests took (summed, so under
`-n` they can exceed the wall clock), how many of the run's tests are done and the time
since the run began; failures and errors are told in full at the end, as always. It
works alone and under pytest-xdist (`-n`), whose controller hears every worker's
reports. `make test` uses it (docs/testing.md).
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import pytest

WIDTH = 42


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("terminal reporting").addoption(
        "--by-file",
        action="store_true",
        help="one line per test file as it finishes (outcomes, seconds, done/total, elapsed) "
        "instead of a dot per test; best with -q",
    )


@pytest.hookimpl(trylast=True)  # after the terminal reporter exists
def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("by_file") and config.pluginmanager.has_plugin("terminalreporter"):
        config.pluginmanager.register(ByFile(config), "by-file")


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


class ByFile:
    """Counts each file's tests as they finish; prints the file's line at its last."""

    def __init__(self, config: pytest.Config) -> None:
        self.reporter: Any = config.pluginmanager.get_plugin("terminalreporter")
        self.expected: Counter[str] = Counter()
        self.finished: Counter[str] = Counter()
        self.outcomes: dict[str, Counter[str]] = {}
        self.seconds: Counter[str] = Counter()
        self.worst: dict[str, str] = {}  # a test's outcome so far, by its phases
        self.began = time.monotonic()
        self.done = 0

    @pytest.hookimpl(wrapper=True)
    def pytest_report_teststatus(self) -> Any:
        """pytest's status of a report, without its letter: the file's line says it."""
        status = yield
        if isinstance(status, tuple):
            category, _, word = status
            return category, "", word
        return status

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.expected.update(file_of(item.nodeid) for item in session.items)

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if not self.expected:  # every worker collects the same tests
            self.expected.update(file_of(nodeid) for nodeid in ids)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        name = file_of(report.nodeid)
        self.seconds[name] += report.duration
        outcome = _outcome(report)
        if outcome is not None and self.worst.get(report.nodeid) in (None, "passed"):
            self.worst[report.nodeid] = outcome
        if report.when != "teardown":
            return
        self.outcomes.setdefault(name, Counter())[self.worst.pop(report.nodeid, "passed")] += 1
        self.finished[name] += 1
        self.done += 1
        if self.finished[name] == self.expected.get(name, 0):
            self.reporter.write_line(self.line(name))

    def line(self, name: str) -> str:
        counts = ", ".join(f"{n} {what}" for what, n in sorted(self.outcomes[name].items()))
        minutes, seconds = divmod(int(time.monotonic() - self.began), 60)
        total = sum(self.expected.values())
        shown = name if len(name) <= WIDTH else "…" + name[-WIDTH + 1 :]
        return (
            f"{shown:<{WIDTH}} {counts:<24} {self.seconds[name]:6.1f} s "
            f"{self.done:>5}/{total}  {minutes}:{seconds:02d}"
        )


def _outcome(report: pytest.TestReport) -> str | None:
    """What a phase says of its test: `failed` or `error` (a setup's or teardown's
    failure), `skipped`, `passed` (a call that passed), or None (a passing setup or
    teardown, which says nothing)."""
    if report.failed:
        return "failed" if report.when == "call" else "error"
    if report.skipped:
        return "skipped"
    return "passed" if report.when == "call" else None
