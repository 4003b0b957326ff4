"""Model adapters behind one protocol."""

from orchestrator.models.base import (
    Model,
    ModelEvent,
    ModelRequest,
    StreamEnded,
    TextDelta,
    ThinkingDelta,
    ThinkingDone,
    ToolCallReady,
    ToolSpec,
    UsageReported,
    collect,
)

__all__ = [
    "Model",
    "ModelEvent",
    "ModelRequest",
    "StreamEnded",
    "TextDelta",
    "ThinkingDelta",
    "ThinkingDone",
    "ToolCallReady",
    "ToolSpec",
    "UsageReported",
    "collect",
]
