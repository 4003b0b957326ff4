"""Real MCP servers for the tests (server_app.py, written with the SDK): a stdio one the
session starts itself, and a streamable HTTP one on 127.0.0.1 that a fixture starts."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.mcp import McpServer

# The servers are written with the SDK, the `mcp` extra (`make` installs it).
pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install -e '.[mcp]'")

APP = Path(__file__).with_name("server_app.py")


def stdio_server(name: str = "docs", **keywords: object) -> McpServer:
    return McpServer.stdio(name, sys.executable, [str(APP), "stdio", "--name", name], **keywords)  # type: ignore[arg-type]


@pytest.fixture
def http_url() -> Iterator[str]:
    """The address of a streamable HTTP server on a free port of 127.0.0.1."""
    process = subprocess.Popen(
        [sys.executable, str(APP), "http", "--name", "web"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # printed once the socket listens
        assert line.startswith("PORT "), line
        yield f"http://127.0.0.1:{line.split()[1]}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
