"""The `orchestrator` command: the parser, one module per command group, rendering, and
the one place where configuration and flags become settings. `main` is the entry point."""

from orchestrator.cli.main import main

__all__ = ["main"]
