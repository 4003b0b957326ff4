"""The figures a person reads in the live view: a duration, a token count, a cost.

TODO(merge): use session's formatter. `sessions show` is getting its own duration and
cost notation in `orchestrator/session/`; these are kept small and private so the two
can become one on merge.
"""

from __future__ import annotations


def duration(seconds: float) -> str:
    """`0s`, `45s`, `1m12s`, `2h03m`: whole seconds, the two largest units."""
    whole = max(int(seconds), 0)
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def tokens(count: int) -> str:
    """`950`, `12.4k`, `3.1M`."""
    if count < 1000:
        return str(count)
    if count < 1_000_000:
        return f"{count / 1000:.1f}k"
    return f"{count / 1_000_000:.1f}M"


def cost(dollars: float | None, *, partial: bool = False) -> str:
    """`$0.03`, `$0.0042` under a cent, `-` when nothing had a price; `+` after it when
    some calls had none (the cost is then a lower bound)."""
    if dollars is None:
        return "-"
    shown = f"${dollars:.2f}" if dollars >= 0.01 or dollars == 0 else f"${dollars:.4f}"
    return shown + ("+" if partial else "")
