"""orchestrator: a main agent that delegates to subagents and never loses work."""
