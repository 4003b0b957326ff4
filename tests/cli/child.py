"""`orchestrator ARGV` in a process of its own, run as the console script runs it (`main()`
with its argv in `sys.argv`), and what that process holds as the command ends: what a
command imports, how its garbage collector is set."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any


def after_command(argv: list[str], report: str) -> Any:
    """`report`, a Python expression over the names `sys`, `gc` and `code` (the
    command's exit code; None when it exited through `SystemExit`, as `--help` does),
    evaluated in the command's process once it has run, and read back as JSON. The
    command's output is dropped."""
    code = (
        "import contextlib, gc, io, json, sys\n"
        f"sys.argv = ['orchestrator', *{argv!r}]\n"
        "from orchestrator.cli.main import main\n"
        "code = None\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    code = main()\n"
        f"print(json.dumps({report}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])
