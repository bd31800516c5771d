"""The hit-rate mode's verdict: is the server's cache doing what the block model says it must?

GOOD / MARGINAL / POOR / UNKNOWN from the measured hit rate against the prediction (or the target when there
is none), failed requests and latency checks; the thresholds travel with every verdict (``VERDICT_RULES``).
"""

from __future__ import annotations

from typing import Mapping

from ..core.group_records import Aggregates, percentile
from ..core.live_records import HitRates, Speedup
from ..core.live_results import LatencyCheck, Verdict
from ..core.sections import section
from .speedup import measured_speedup, speedup_bound

GOOD_GAP_POINTS = 1.0
MARGINAL_GAP_POINTS = 5.0
MARGINAL_ERROR_SHARE = 0.05
VERDICT_RULES = (
    f"GOOD: |measured - predicted| <= {GOOD_GAP_POINTS:g} point, no failed request, no latency check failed. "
    f"MARGINAL: |measured - predicted| <= {MARGINAL_GAP_POINTS:g} points and at most "
    f"{MARGINAL_ERROR_SHARE:.0%} of requests failed, or a GOOD hit rate whose latency slipped (TTFT / TPOT p50 "
    "above --ttft-slo-ms / --tpot-slo-ms, or with --baseline no TTFT gain although the prediction reuses >= 10% "
    f"of prompt tokens). POOR: a larger gap or more failures. UNKNOWN: the server gave no hit-rate evidence "
    "(no usable counters), so nothing can be judged. The reference is the prediction; without a known block "
    "size, the target."
)


def speedup(measured_hit_rate: float | None, summary: Aggregates | None, baseline: Mapping | None,
            workload_id: str) -> Speedup:
    """Measured TTFT change against a cache-off reference run (``baseline``, a hit-rate result file of the same
    workload) beside the bound 1 / (1 - h)."""
    bound = speedup_bound(measured_hit_rate)
    definition = "1 / (1 - h): prefill time if it were linear in computed tokens (h: measured hit rate)"
    ttft = percentile(summary, "ttft_ms")
    if baseline is None:
        return Speedup(bound, definition, measured_ttft_speedup=None,
                       reason="no --baseline (a cache-off run of the same workload) given")
    base_ttft = percentile(Aggregates.from_json(baseline.get("summary")), "ttft_ms")
    baseline_id = section(baseline, "config").get("workload_id")
    return Speedup(bound, definition, measured_ttft_speedup=measured_speedup(base_ttft, ttft),
                   baseline_ttft_p50_ms=base_ttft, ttft_p50_ms=ttft,
                   baseline_ttft_ms=[r["ttft_ms"] for r in baseline.get("requests") or []
                                     if r.get("ttft_ms") is not None],
                   baseline_workload_id=baseline_id,
                   warning=None if baseline_id == workload_id else
                   "the baseline ran a different workload: the TTFT comparison is not like for like")


def verdict(rates: HitRates, summary: Aggregates | None, gain: Speedup | None = None, *,
            ttft_slo_ms: float | None = None, tpot_slo_ms: float | None = None) -> Verdict:
    """GOOD / MARGINAL / POOR / UNKNOWN from measured vs predicted (``rates``), failures and latency (``summary``,
    and ``gain`` against a cache-off baseline when there is one): ``VERDICT_RULES``."""
    measured, reference, basis = rates.measured, rates.predicted, "predicted"
    if reference is None:
        reference = rates.block_aligned_target if rates.block_aligned_target is not None else rates.target
        basis = "target"
    if measured is None:
        return Verdict("UNKNOWN", [f"no measured hit rate: {rates.measured_reason}"], basis, None, [], VERDICT_RULES)
    gap = abs(measured - reference) * 100 if reference is not None else None
    requests = summary.requests if summary else 0
    errors = summary.error_count if summary else 0
    share = errors / requests if requests else 1.0
    latency = _latency_checks(summary, rates, gain, ttft_slo_ms, tpot_slo_ms)
    reasons: list[str] = []
    if gap is None:
        level = "MARGINAL"
        reasons.append("no reference hit rate to compare with")
    elif gap <= GOOD_GAP_POINTS:
        level = "GOOD"
        reasons.append(f"measured is within {gap:.2f} points of {basis}")
    elif gap <= MARGINAL_GAP_POINTS:
        level = "MARGINAL"
        reasons.append(f"measured differs from {basis} by {gap:.2f} points (> {GOOD_GAP_POINTS:g})")
    else:
        level = "POOR"
        reasons.append(f"measured differs from {basis} by {gap:.2f} points (> {MARGINAL_GAP_POINTS:g})")
    if errors:
        reasons.append(f"{errors} of {requests} requests failed")
        level = "POOR" if share > MARGINAL_ERROR_SHARE else max(level, "MARGINAL", key=_rank)
    slipped = [c.check for c in latency if not c.ok]
    if slipped:
        reasons.append("latency slipped: " + "; ".join(slipped))
        level = max(level, "MARGINAL", key=_rank)
    return Verdict(level, reasons, basis, gap, latency, VERDICT_RULES)


def _latency_checks(summary: Aggregates | None, rates: HitRates, gain: Speedup | None, ttft_slo_ms: float | None,
                    tpot_slo_ms: float | None) -> list[LatencyCheck]:
    """TTFT / TPOT p50 against the SLOs asked for, and the TTFT gain against a baseline when caching should give
    one (the prediction reuses >= 10% of prompt tokens)."""
    ttft, tpot = percentile(summary, "ttft_ms"), percentile(summary, "tpot_ms")
    latency = []
    if ttft_slo_ms is not None:
        latency.append(LatencyCheck(f"TTFT p50 <= {ttft_slo_ms:g} ms", ttft, ttft is not None and ttft <= ttft_slo_ms))
    if tpot_slo_ms is not None:
        latency.append(LatencyCheck(f"TPOT p50 <= {tpot_slo_ms:g} ms", tpot, tpot is not None and tpot <= tpot_slo_ms))
    measured_gain = gain.measured_ttft_speedup if gain is not None else None
    if measured_gain is not None and (rates.predicted or 0) >= 0.10:
        latency.append(LatencyCheck("TTFT p50 faster than the cache-off baseline", measured_gain, measured_gain > 1.0))
    return latency


def _rank(level: str) -> int:
    return {"GOOD": 0, "MARGINAL": 1, "POOR": 2}[level]
