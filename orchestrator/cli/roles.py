"""What the CLI makes a session's team of, for `run`, `resume` and `sessions compact`
alike: each role's model (`RoleModels`), each model's context window
(`model_windows`), the agent types (`agent_definitions`), and the two questions and
notes they put to the person at the terminal."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import httpx

from orchestrator.cli.env import user_config_dir
from orchestrator.config import Config
from orchestrator.loop.compaction import Window
from orchestrator.models.base import Model
from orchestrator.models.limits import Backoff
from orchestrator.models.resolve import resolve_model
from orchestrator.models.windows import window_for
from orchestrator.team.definitions import Definitions
from orchestrator.team.settings import claimed_window
from orchestrator.text import visible


class RoleModels:
    """The model of each agent role, resolved once: `--model` for every role, else the
    role's agent definition or `[agents.ROLE] model`, else the session's model."""

    def __init__(
        self,
        *,
        main: str,
        cli: str | None,
        config: Config,
        definitions: Definitions,
        http: httpx.AsyncClient,
    ) -> None:
        self._main, self._cli, self._config = main, cli, config
        self._definitions, self._http = definitions, http
        self._models: dict[str, Model] = {}
        self._backoff = Backoff()  # one rate limit holds every role on that provider

    def spec(self, role: str) -> str:
        if self._cli or role == "main":
            return self._cli or self._main
        own = self._definitions.get(role).model if role in self._definitions else None
        return own or self._config.agent(role).model or self._main

    def __call__(self, role: str) -> Model:
        model = self._models.get(role)
        if model is None:
            model = resolve_model(
                self.spec(role),
                env=os.environ,
                http=self._http,
                config=self._config,
                role=role,
                backoff=self._backoff,
            )
            self._models[role] = model
        return model

    def output(self, model: Model) -> int | None:
        """The output limit the role of `model` sets (`[agents.ROLE] max_tokens`), for a
        model made here (each role's is its own object)."""
        role = next((r for r, made in self._models.items() if made is model), None)
        return None if role is None else self._config.agent(role).max_tokens


def model_windows(
    config: Config, roles: RoleModels | None = None
) -> Callable[[Model], Window | None]:
    """A model's context window: what it claims itself (a script's), else the config's
    `[windows]` entry or the table of known models (docs/compaction.md). Where the entry
    does not say how much a model may write, the output limit of the role the model is
    `roles`' for (`[agents.ROLE] max_tokens`) is kept free for it, at most a quarter."""

    known: dict[str, Window | None] = {}  # by model name: asked before every model call

    def window(model: Model) -> Window | None:
        claimed = claimed_window(model)
        if claimed is not None:
            return claimed
        if model.name not in known:
            found = window_for(config, model.name)
            known[model.name] = None if found is None else Window(found.context, found.output)
        window = known[model.name]
        limit = roles.output(model) if roles is not None else None
        if window is not None and not window.output and limit:
            return Window(window.context, min(limit, window.context // 4))
        return window

    return window


def agent_definitions(workspace: Path | None, *, interactive: bool) -> Definitions:
    """The agent types: built-in, the user's, the project's (asked about once if they
    would widen anything, when there is a terminal to ask at)."""
    from orchestrator.team.agent_files import load_definitions
    from orchestrator.team.trust import TrustStore
    from orchestrator.tools.base import WORKSPACE_TOOLS

    user_dir = user_config_dir(os.environ)
    ask = ask_trust if interactive and sys.stdin.isatty() else None
    return load_definitions(
        project_dir=workspace,
        user_dir=user_dir,
        trust=TrustStore(user_dir),
        ask=ask,
        known_tools=WORKSPACE_TOOLS,
    )


def ask_trust(question: str) -> bool:
    print(visible(question), file=sys.stderr)
    print("Trust this project's settings? [y/N]: ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def note(text: str) -> None:
    """A line for the person at the terminal (stderr), made safe to show: `sessions
    compact`'s; a run's lines for people go to its own stream (`cli/out.People`)."""
    print(visible(text), file=sys.stderr, flush=True)
