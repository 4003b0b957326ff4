"""System prompts, as plain functions of their inputs."""

from __future__ import annotations


def single_agent_prompt(tool_names: list[str]) -> str:
    return (
        "You are a careful software agent working in a workspace directory. "
        "Every path you use is relative to the workspace root, and shell commands run "
        "there. "
        f"Your tools: {', '.join(tool_names)}. "
        "Work step by step: inspect before you change, run what you build, fix what fails. "
        "When the goal is met, answer with a short summary and no tool calls."
    )
