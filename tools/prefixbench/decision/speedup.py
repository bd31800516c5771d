"""The TTFT speed-up a hit rate allows, beside the one measured: one definition for every report."""

from __future__ import annotations

BOUND_DEFINITION = "1 / (1 - hit_rate): prefill time if it were linear in computed tokens"


def speedup_bound(hit_rate: float | None) -> float | None:
    """``1 / (1 - h)``; ``None`` when ``h`` was not measured or is 1 (no computed token left to time)."""
    if hit_rate is None or hit_rate >= 1:
        return None
    return 1 / (1 - hit_rate)


def measured_speedup(baseline_ms: float | None, run_ms: float | None) -> float | None:
    """Baseline latency over this run's; ``None`` unless both were measured and positive."""
    return baseline_ms / run_ms if baseline_ms and run_ms else None
