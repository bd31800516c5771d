"""How sure is a G1-vs-G0 difference? A bootstrap confidence interval over requests and repeats.

Each group is a list of repeats, each repeat a list of per-request values (TTFT, TPOT) or one number per
repeat (throughput). One bootstrap resample draws the repeats of each group with replacement and then, inside
each drawn repeat, its requests with replacement, and computes the statistic (p50 for per-request values,
the mean over repeats for per-run values) on the pooled draw. The interval is the percentile interval of
G0's statistic minus G1's over ``resamples`` draws (a positive TTFT gain means G1 is faster).

Resampling repeats first keeps run-to-run variation (a different server start, the machine's other load) in
the interval; resampling requests inside them keeps request-to-request variation. With one repeat only the
second part is left, which the result says (``repeats``). A difference whose interval includes 0 is one the
data cannot tell from noise: ``recommend_with_confidence`` never accepts it.

Missing is not zero: a group without enough values gives ``estimate: null`` with the reason.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import replace
from functools import partial
from typing import Mapping, Sequence

from ..core.interval_records import BootstrapDifferences, BootstrapInterval, Interval, PairedInterval, bounds
from ..measure.client import inclusive_cut
from .chapter import DECISIONS, recommend_prefix_cache_run

LEVEL = 0.95
RESAMPLES = 2000
SEED = 0
MIN_VALUES = 2
"""Fewer values than this in a group (pooled over repeats) is not enough to bound a difference."""

METHOD = ("hierarchical percentile bootstrap: repeats drawn with replacement, then requests drawn with "
          "replacement inside each drawn repeat; statistic p50 of the pooled draw (per-request metrics) or the "
          "mean over the drawn repeats (per-run metrics); interval of G0's statistic minus G1's")

UNSTABLE = "gain not stable"
NO_REUSE = "no prefix reuse measured"
"""A G1 hit rate no higher than G0's (a workload with no shared prefix) is ``reject`` whatever the thresholds."""


def p50(values: Sequence[float]) -> float:
    """The median with the client's interpolation (``statistics.quantiles`` inclusive, as the aggregates)."""
    return inclusive_cut(sorted(float(v) for v in values), 50)


def _clean(repeats: Sequence[Sequence[float]]) -> list[list[float]]:
    return [[float(v) for v in rep if v is not None] for rep in repeats if rep is not None]


def _draw(rng: random.Random, repeats: list[list[float]], per_request: bool) -> float:
    chosen = rng.choices(repeats, k=len(repeats))
    if not per_request:
        return statistics.fmean(rep[0] for rep in chosen)
    pooled: list[float] = []
    for rep in chosen:
        pooled.extend(rng.choices(rep, k=len(rep)))
    pooled.sort()  # floats already (``_clean``): p50's conversion pass would cost a third of each draw
    return inclusive_cut(pooled, 50)


def _quantile(sorted_values: list[float], q: float) -> float:
    position = q * (len(sorted_values) - 1)
    low = int(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def bootstrap_difference(g0: Sequence[Sequence[float]], g1: Sequence[Sequence[float]], *, per_request: bool = True,
                         level: float = LEVEL, resamples: int = RESAMPLES, seed: int = SEED) -> BootstrapInterval:
    """``estimate`` (G0 statistic - G1 statistic on all the data), ``ci_low`` / ``ci_high``, ``includes_zero``.

    ``g0`` / ``g1``: one list per repeat; for per-run metrics (``per_request=False``) each list holds one value.
    """
    r0, r1 = _clean(g0), _clean(g1)
    r0, r1 = [r for r in r0 if r], [r for r in r1 if r]
    counted = partial(BootstrapInterval, g0_values=sum(map(len, r0)), g1_values=sum(map(len, r1)),
                      g0_repeats=len(r0), g1_repeats=len(r1))
    need = (lambda reps: sum(map(len, reps))) if per_request else len
    short = [name for name, reps in (("G0", r0), ("G1", r1)) if need(reps) < MIN_VALUES]
    if short:
        what = "values" if per_request else "repeats (one number per run)"
        return counted(estimate=None, ci_low=None, ci_high=None, includes_zero=None,
                       reason=f"{' and '.join(short)} has fewer than {MIN_VALUES} {what}; nothing bounds the "
                              "difference")
    stat = (lambda reps: p50([v for rep in reps for v in rep])) if per_request else (
        lambda reps: statistics.fmean(rep[0] for rep in reps))
    rng = random.Random(seed)
    diffs = sorted(_draw(rng, r0, per_request) - _draw(rng, r1, per_request) for _ in range(resamples))
    low, high = _quantile(diffs, (1 - level) / 2), _quantile(diffs, 1 - (1 - level) / 2)
    return counted(estimate=stat(r0) - stat(r1), ci_low=low, ci_high=high, includes_zero=low <= 0 <= high,
                   reason=None)


def group_values(manifest: Mapping | None, field: str) -> list[list[float]]:
    """Per-repeat lists of ``field`` (e.g. ``ttft_ms``) over a group's successful requests.

    A manifest with ``repeats`` gives one list per repeat; one without gives its own ``requests`` as one repeat.
    """
    if not manifest:
        return []
    repeats = manifest.get("repeats") or [manifest]
    out = []
    for rep in repeats:
        rows = rep.get("requests") if isinstance(rep, Mapping) else None
        out.append([row[field] for row in rows or [] if isinstance(row, Mapping) and row.get("status") == "ok"
                    and isinstance(row.get(field), (int, float))])
    return out


def run_values(manifest: Mapping | None, field: str) -> list[list[float]]:
    """One ``[value]`` per repeat for a per-run aggregate (e.g. ``throughput_tokens_per_s``)."""
    if not manifest:
        return []
    repeats = manifest.get("repeats") or [manifest]
    values = [((rep.get("aggregates") or {}) if isinstance(rep, Mapping) else {}).get(field) for rep in repeats]
    return [[v] for v in values if isinstance(v, (int, float))]


def differences(g0: Mapping | None, g1: Mapping | None, *, level: float = LEVEL, resamples: int = RESAMPLES,
                seed: int = SEED) -> BootstrapDifferences:
    """Every G1-vs-G0 difference with its interval. Signs: positive is better for G1 in each ``*_gain``."""
    ttft = bootstrap_difference(group_values(g0, "ttft_ms"), group_values(g1, "ttft_ms"), level=level,
                                resamples=resamples, seed=seed)
    tpot = bootstrap_difference(group_values(g0, "tpot_ms"), group_values(g1, "tpot_ms"), level=level,
                                resamples=resamples, seed=seed)
    tput = bootstrap_difference(run_values(g0, "throughput_tokens_per_s"), run_values(g1, "throughput_tokens_per_s"),
                                per_request=False, level=level, resamples=resamples, seed=seed)
    return BootstrapDifferences(
        method=METHOD, level=level, resamples=resamples, seed=seed,
        ttft_p50_gain_ms=replace(ttft, meaning="G0 TTFT p50 - G1 TTFT p50; positive: caching is faster"),
        tpot_p50_gain_ms=replace(tpot, meaning="G0 TPOT p50 - G1 TPOT p50; negative: caching slows decode"),
        throughput_gain_tokens_per_s=replace(tput.negated(), meaning="G1 - G0 output tokens/s over repeats"))


def recommend_with_confidence(baseline: Mapping, candidate: Mapping, min_hit_rate: float, max_overhead: float,
                              ttft_gain: Interval | Mapping | None, *, label: str | None = None) -> dict:
    """The chapter's accept / tune / reject, then the noise rule: a TTFT gain whose interval includes 0 (or that
    has no interval) is ``tune`` with the reason "gain not stable", never ``accept``. A hit rate below the
    threshold stays ``reject`` (a TTFT gain never rescues it, stable or not); a stable gain with a hit-rate gain
    of 0 is ``reject`` too, even under ``min_hit_rate`` 0: with no reuse, a faster G1 can only be the machine.
    ``label`` (or a JSON ``ttft_gain``'s ``label``) names the statistic in the reason (default: the TTFT p50
    gain)."""
    if isinstance(ttft_gain, Mapping):  # as a file holds it
        label, ttft_gain = label or ttft_gain.get("label"), PairedInterval.from_json(ttft_gain)
    verdict = recommend_prefix_cache_run(baseline, candidate, min_hit_rate, max_overhead)
    stable = _stable(ttft_gain)
    checks = {**verdict["checks"], "ttft_gain_stable": stable,
              "reuse_measured": verdict["comparison"]["hit_rate_gain"] > 0}
    if stable and not checks["reuse_measured"] and verdict["decision"] == "accept":
        return {**verdict, "decision": "reject", "next_action": DECISIONS["reject"], "checks": checks,
                "reason": f"{NO_REUSE}: a TTFT change without reuse is the machine, not the cache "
                          f"(without this rule: {verdict['decision']}, {verdict['reason']})"}
    if not verdict["checks"]["hit_rate_ok"] or stable:
        return {**verdict, "checks": checks}
    return {**verdict, "decision": "tune", "next_action": DECISIONS["tune"], "checks": checks,
            "reason": f"{UNSTABLE}: {_unstable(ttft_gain, label or 'TTFT p50 gain')}; rerun with more requests or "
                      f"--repeats before deciding (without the noise rule: {verdict['decision']}, "
                      f"{verdict['reason']})"}


def _unstable(ttft_gain: Interval | None, label: str) -> str:
    """Why the TTFT gain is not stable: no interval (and why), or one that includes 0."""
    found = bounds(ttft_gain)
    if found is None:
        return f"no interval for the {label} ({(ttft_gain and ttft_gain.reason) or 'no per-request TTFT'})"
    _, low, high = found
    return f"the {LEVEL:.0%} interval of the {label}, [{low:+.2f}, {high:+.2f}] ms, includes 0"


def _stable(ttft_gain: Interval | None) -> bool:
    return ttft_gain is not None and ttft_gain.estimate is not None and ttft_gain.includes_zero is False
