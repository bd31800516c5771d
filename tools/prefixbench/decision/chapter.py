"""Measure -> compare -> decide: the chapter's summary, baseline comparison and accept / tune / reject.

Strict on purpose: a metric that is missing or ``None`` was not measured and raises, it is never read as 0;
thresholds are validated before use; runs from different workloads (``workload_id``) or with different
hit-rate units (``hit_rate_unit``: token or block) cannot be compared.
"""

from __future__ import annotations

from typing import Mapping, Sequence, TypedDict

from ..core.errors import InputError, require_number

DECISIONS = {
    "accept": "promote_to_serving_eval",
    "tune": "refine_chunk_or_eviction_policy",
    "reject": "fallback_to_no_cache",
}
"""Each decision label with the ``next_action`` that goes with it."""


class Comparison(TypedDict):
    """``compare_prefix_cache_to_baseline``: candidate minus baseline (``ttft_speedup``: ``None`` at 0 ms)."""

    hit_rate_gain: float
    ttft_delta_ms: float
    overhead_delta: float
    ttft_speedup: float | None


class Verdict(TypedDict):
    """``recommend_prefix_cache_run``: the decision, why, what to do next, each check, and the comparison."""

    decision: str
    reason: str
    next_action: str
    checks: dict[str, bool]
    comparison: Comparison


def _metric(run: Mapping, key: str, field: str, **bounds: float) -> float:
    if key not in run:
        raise InputError(f"{field}.{key}", "is missing; a metric that was not measured cannot be used as 0")
    return require_number(f"{field}.{key}", run[key], **bounds)


def _check_run(run: object, field: str) -> Mapping:
    if not isinstance(run, Mapping):
        raise InputError(field, f"must be a dict of metrics, got {type(run).__name__}")
    return run


def _same(runs: Sequence[tuple[str, Mapping]], key: str, what: str) -> None:
    """Refuse to mix runs whose ``key`` differs (a run that lacks it differs from one that has it)."""
    values = {field: run.get(key) for field, run in runs}
    if len(set(map(repr, values.values()))) > 1:
        shown = ", ".join(f"{field}={value!r}" for field, value in values.items())
        raise InputError(key, f"runs must come from the same {what}, got {shown}")


def summarize_prefix_cache(runs: Sequence[Mapping]) -> dict[str, object]:
    """Run count, mean hit rate, mean TTFT and the name of the run with the highest hit rate.

    An empty list gives an empty summary (``None`` means: no runs, no conclusion).
    """
    if isinstance(runs, (str, bytes, Mapping)) or not isinstance(runs, Sequence):
        raise InputError("runs", f"must be a list of run dicts, got {type(runs).__name__}")
    if not runs:
        return {"run_count": 0, "avg_hit_rate": None, "avg_ttft_ms": None, "best_hit_rate_run": None}
    checked = []
    for i, run in enumerate(runs):
        field = f"runs[{i}]"
        run = _check_run(run, field)
        name = run.get("name")
        if not isinstance(name, str) or not name:
            raise InputError(f"{field}.name", f"must be a non-empty string, got {name!r}")
        hit = _metric(run, "hit_rate", field, low=0.0, high=1.0)
        ttft = _metric(run, "ttft_ms", field, low=0.0)
        checked.append((field, run, name, hit, ttft))
    pairs = [(field, run) for field, run, *_ in checked]
    _same(pairs, "workload_id", "workload")
    _same(pairs, "hit_rate_unit", "hit-rate unit (token or block)")
    best = max(checked, key=lambda item: item[3])  # first of equals wins
    return {
        "run_count": len(checked),
        "avg_hit_rate": sum(item[3] for item in checked) / len(checked),
        "avg_ttft_ms": sum(item[4] for item in checked) / len(checked),
        "best_hit_rate_run": best[2],
    }


def compare_prefix_cache_to_baseline(baseline: Mapping, candidate: Mapping) -> Comparison:
    """Candidate minus baseline: a positive ``hit_rate_gain`` is good, negative TTFT and overhead deltas are good."""
    values = {}
    for field, run in (("baseline", baseline), ("candidate", candidate)):
        run = _check_run(run, field)
        values[field] = {
            "hit_rate": _metric(run, "hit_rate", field, low=0.0, high=1.0),
            "ttft_ms": _metric(run, "ttft_ms", field, low=0.0),
            "overhead": _metric(run, "overhead", field),
        }
    pairs = [("baseline", baseline), ("candidate", candidate)]
    _same(pairs, "workload_id", "workload")
    _same(pairs, "hit_rate_unit", "hit-rate unit (token or block)")
    base, cand = values["baseline"], values["candidate"]
    return {
        "hit_rate_gain": cand["hit_rate"] - base["hit_rate"],
        "ttft_delta_ms": cand["ttft_ms"] - base["ttft_ms"],
        "overhead_delta": cand["overhead"] - base["overhead"],
        "ttft_speedup": base["ttft_ms"] / cand["ttft_ms"] if cand["ttft_ms"] > 0 else None,
    }


def recommend_prefix_cache_run(
    baseline: Mapping, candidate: Mapping, min_hit_rate: float, max_overhead: float
) -> Verdict:
    """accept / tune / reject with a reason and the next action.

    accept: hit-rate gain reaches ``min_hit_rate``, TTFT improves, overhead delta within ``max_overhead``.
    tune:   hit rate and TTFT are fine but the overhead is too high.
    reject: anything else; in particular a better TTFT never rescues a hit rate below the threshold.
    """
    min_hit_rate = require_number("min_hit_rate", min_hit_rate, low=0.0, high=1.0)
    max_overhead = require_number("max_overhead", max_overhead, low=0.0)
    comparison = compare_prefix_cache_to_baseline(baseline, candidate)
    gain, ttft_delta, overhead_delta = (
        comparison["hit_rate_gain"], comparison["ttft_delta_ms"], comparison["overhead_delta"])
    checks = {
        "hit_rate_ok": gain >= min_hit_rate,
        "ttft_improved": ttft_delta < 0,
        "overhead_ok": overhead_delta <= max_overhead,
    }
    facts = (f"hit-rate gain {gain:.3f} (threshold {min_hit_rate:.3f}), TTFT delta {ttft_delta:+.1f} ms, "
             f"overhead delta {overhead_delta:+.3f} (limit {max_overhead:.3f})")
    if checks["hit_rate_ok"] and checks["ttft_improved"] and checks["overhead_ok"]:
        decision, why = "accept", "hit rate, TTFT gain and overhead all pass"
    elif checks["hit_rate_ok"] and checks["ttft_improved"]:
        decision, why = "tune", "hit rate and TTFT gain pass but the overhead is above its limit"
    elif not checks["hit_rate_ok"]:
        decision, why = "reject", "hit rate below the threshold (a TTFT gain alone is not evidence of reuse)"
    else:
        decision, why = "reject", "no TTFT gain over the baseline"
    return {
        "decision": decision,
        "reason": f"{why}: {facts}",
        "next_action": DECISIONS[decision],
        "checks": checks,
        "comparison": comparison,
    }
