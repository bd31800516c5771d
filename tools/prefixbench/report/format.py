"""Number formatting for every human-readable output (tables, Markdown, plots): one rule each.

A value that was not measured prints as ``n/a``, never as 0. Plain floats get 3 decimals, counts get
thousands separators, rates print as percentages with 2 decimals, latencies in ms with 1 decimal.
"""

from __future__ import annotations

from typing import Mapping

NA = "n/a"


def value(v: object) -> str:
    """Any value of a key/value table."""
    if v is None:
        return NA
    if isinstance(v, float):
        return f"{v:.3f}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)


def pct(v: float | None) -> str:
    return NA if v is None else f"{v * 100:.2f}%"


def ms(stats: Mapping | None, key: str = "p50") -> str:
    """One statistic (``p50``, ``p90``, ``mean``, ...) of a latency summary, in ms."""
    v = stats.get(key) if stats else None
    return NA if v is None else f"{v:.1f}"


def num(v: object, fmt: str = "{:,}") -> str:
    return NA if v is None else fmt.format(v)


def pair(a: object, b: object) -> str:
    """``G0 -> G1``."""
    return f"{value(a)} -> {value(b)}"
