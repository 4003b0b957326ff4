"""Fallback chains' moves (models/fallback.py): the `model_switched` record, journaled when
a chain moves to another of its models (the one it was on failed, or its cool-down
brought it back to its first), and their fold, the model each chain is on, which a
resume restores.

A chain is named by its spec (`anthropic:a,openai:b`), not by the role: one chain may
serve several roles (a library run gives every role one model), and a resume makes the
same chain of the same spec.
"""

from collections.abc import Callable
from typing import Any

import msgspec

from orchestrator.eventbase import EventBase


class ModelSwitched(EventBase, frozen=True, tag="model_switched"):
    """Record: the fallback chain `chain` moved to `model` from `instead_of`, at wall time
    `at`, as `agent`'s call found: `why` is the failed model's error, or the end of the
    chain's cool-down."""

    chain: str
    model: str
    instead_of: str
    why: str = ""
    at: float = 0.0


FallbackRecords = ModelSwitched


class ChainAt(msgspec.Struct, frozen=True):
    """Where a chain is: the model it is on, and the wall time it moved there."""

    model: str
    at: float


class Fallbacks(msgspec.Struct):
    """The model each fallback chain is on, by the chain's spec: only chains that moved."""

    chains: dict[str, ChainAt] = msgspec.field(default_factory=dict)


def _switched(fallbacks: Fallbacks, seq: int, record: ModelSwitched) -> None:
    fallbacks.chains[record.chain] = ChainAt(record.model, record.at)


FALLBACK_FOLDS: dict[type, Callable[[Fallbacks, int, Any], None]] = {
    ModelSwitched: _switched,
}
