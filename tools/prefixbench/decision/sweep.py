"""A load sweep's numbers: goodput under SLOs, each point's metrics over its repeats, and the headline (the
highest load each group sustains within the SLOs and the capacity caching adds there).

Goodput is what ``vllm bench serve --goodput`` counts: requests per second that meet every SLO given (TTFT,
TPOT), over the run's duration; a request with one output token has TPOT 0 there and so meets a TPOT SLO.
A group *sustains* a load point when the point ran without errors and at least ``ATTAINMENT`` of its requests
(pooled over repeats) met every SLO; the highest sustained load is the last point of the leading run of
sustained points (loads ascending), so a lucky point after a failing one does not count.

Missing is not zero: without an SLO, goodput and the headline are ``null`` with the reason.
"""

from __future__ import annotations

import statistics
from typing import Mapping, Sequence

from ..core.group_records import GroupRecord, Stats, percentile
from ..core.request_rows import RequestRow, row_of, rows_of
from ..core.sweep_records import (GroupAtPoint, Goodput, MeanPercentiles, PointMetrics, PooledHitRate,
                                  RepeatSummary, Spread, SustainedLoad, SweepHeadline, SweepPoint)
from ..measure.client import stats_of

ATTAINMENT = 0.9
NO_SLO = "no SLO given (--ttft-slo-ms / --tpot-slo-ms)"


def meets_slo(row: RequestRow | Mapping, ttft_slo_ms: float | None, tpot_slo_ms: float | None) -> bool:
    """A successful request within every SLO given."""
    row = row_of(row)
    if not row.ok:
        return False
    if ttft_slo_ms is not None and (row.ttft_ms is None or row.ttft_ms > ttft_slo_ms):
        return False
    return tpot_slo_ms is None or (row.tpot_ms or 0.0) <= tpot_slo_ms


def goodput(rows: Sequence[RequestRow | Mapping], duration_s: float | None, ttft_slo_ms: float | None,
            tpot_slo_ms: float | None) -> Goodput:
    """Goodput per second, the good requests and the SLO attainment of one run."""
    if ttft_slo_ms is None and tpot_slo_ms is None:
        return Goodput(per_s=None, good_requests=None, slo_attainment=None, reason=NO_SLO)
    good = sum(meets_slo(r, ttft_slo_ms, tpot_slo_ms) for r in rows_of(rows))
    return Goodput(per_s=good / duration_s if duration_s else None, good_requests=good,
                   slo_attainment=good / len(rows) if rows else None,
                   reason=None if duration_s else "the run has no duration")


def _mean(values: Sequence) -> float | None:
    present = [v for v in values if isinstance(v, (int, float))]
    return statistics.fmean(present) if present else None


def _spread(values: Sequence) -> Spread:
    present = [v for v in values if isinstance(v, (int, float))]
    return Spread(mean=_mean(present), min=min(present, default=None), max=max(present, default=None))


def run_summary(run: Mapping | GroupRecord, slo: Mapping) -> RepeatSummary:
    """One repeat of one group at one load point, as the sweep keeps it."""
    record = run if isinstance(run, GroupRecord) else GroupRecord.from_json(run)
    aggregates, prediction = record.aggregates, record.prediction
    return RepeatSummary(
        repeat=record.repeat, status=record.status, error=record.error,
        ttft_p90_ms=percentile(aggregates, "ttft_ms", "p90"),
        request_throughput_per_s=aggregates.request_throughput_per_s if aggregates else None,
        throughput_tokens_per_s=aggregates.throughput_tokens_per_s if aggregates else None,
        goodput=goodput(record.rows, aggregates.duration_s if aggregates else None, slo.get("ttft_slo_ms"),
                        slo.get("tpot_slo_ms")),
        hit_rate=record.hit_rate, hit_rate_evidence=record.hit_rate_evidence,
        hit_tokens=record.hit_tokens, query_tokens=record.query_tokens,
        predicted_hit_tokens=prediction.predicted_hit_tokens,
        prediction_exact=prediction.exact_expected, prediction_matches=prediction.matches_measured)


def pooled_hit_rate(runs: Sequence[GroupRecord]) -> PooledHitRate:
    """Hit tokens over queried tokens summed over the repeats, from the counters only; else ``null`` and why."""
    reasons = [r.hit_rate_reason for r in runs if r.hit_rate_evidence != "backend_metrics"]
    if not runs or reasons:
        evidence = {r.hit_rate_evidence for r in runs}
        return PooledHitRate(hit_rate=None, evidence=evidence.pop() if len(evidence) == 1 else "mixed",
                             reason=(reasons or ["no run"])[0], hit_tokens=None, query_tokens=None)
    hits, queries = sum(r.hit_tokens or 0 for r in runs), sum(r.query_tokens or 0 for r in runs)
    return PooledHitRate(hit_rate=hits / queries if queries else None, evidence="backend_metrics",
                         reason=None if queries else "0 queries", hit_tokens=hits, query_tokens=queries)


def point_metrics(manifest: Mapping, slo: Mapping) -> GroupAtPoint:
    """A group at one load point over its repeats: pooled TTFT / TPOT / E2E percentiles (every request of every
    repeat), ITL percentiles averaged over repeats, throughputs and goodput as the mean over repeats, SLO
    attainment pooled, hit rate from the counters summed over repeats."""
    record = GroupRecord.from_json(manifest)
    runs = record.runs
    per_run = [run_summary(run, slo) for run in runs]
    rows = [row for run in runs for row in run.rows]
    ok = [row for row in rows if row.ok]

    def pooled(field: str) -> Stats | None:
        return stats_of([getattr(row, field) for row in ok if isinstance(getattr(row, field), (int, float))])

    itl = [run.aggregates.itl_ms for run in runs if run.aggregates and run.aggregates.itl_ms]
    good = [r.goodput.good_requests for r in per_run]
    metrics = PointMetrics(
        ttft_ms=pooled("ttft_ms"), tpot_ms=pooled("tpot_ms"), e2e_ms=pooled("e2e_ms"),
        itl_ms=MeanPercentiles(*(_mean([getattr(i, k) for i in itl]) for k in ("p50", "p90", "p99", "mean")))
        if itl else None,
        request_throughput_per_s=_mean([r.request_throughput_per_s for r in per_run]),
        throughput_tokens_per_s=_mean([r.throughput_tokens_per_s for r in per_run]),
        goodput_per_s=_mean([r.goodput.per_s for r in per_run]),
        goodput_reason=per_run[0].goodput.reason if per_run else NO_SLO,
        slo_attainment=(sum(g or 0 for g in good) / len(rows) if rows and None not in good else None),
        error_count=len(rows) - len(ok),
        ttft_p90_ms_over_repeats=_spread([r.ttft_p90_ms for r in per_run]),
        request_throughput_over_repeats=_spread([r.request_throughput_per_s for r in per_run]),
        goodput_over_repeats=_spread([r.goodput.per_s for r in per_run]))
    return GroupAtPoint(status=record.status, error=record.error, metrics=metrics, hit=pooled_hit_rate(runs),
                        repeats=tuple(per_run))


def sustained(points: Sequence[SweepPoint], group: str) -> SweepPoint | None:
    """The highest load point of the leading run that ``group`` sustains, or ``None``."""
    best = None
    for point in points:
        side = point.group(group)
        attained = side.metrics.slo_attainment if side else None
        if side is None or side.status != "ok" or attained is None or attained < ATTAINMENT:
            break
        best = point
    return best


def _sustained_load(points: Sequence[SweepPoint], group: str) -> SustainedLoad | None:
    point = sustained(points, group)
    side = point.group(group) if point else None
    if point is None or side is None:
        return None
    return SustainedLoad(load=point.load, goodput_per_s=side.metrics.goodput_per_s,
                         request_throughput_per_s=side.metrics.request_throughput_per_s,
                         at_highest_load_swept=point is points[-1])


def headline(points: Sequence[SweepPoint], slo: Mapping) -> SweepHeadline:
    """Highest sustained load per group, its goodput, and what caching adds (G1 over G0)."""
    if slo.get("ttft_slo_ms") is None and slo.get("tpot_slo_ms") is None:
        return SweepHeadline(status="no_slo", reason=NO_SLO)
    g0, g1 = _sustained_load(points, "g0"), _sustained_load(points, "g1")
    reason = None
    if g0 and g1 and g0.goodput_per_s:
        gain = g1.goodput_per_s / g0.goodput_per_s if g1.goodput_per_s is not None else None
    else:
        gain = None
        reason = ("G0 sustains no load point of the sweep within the SLOs" if not g0 else
                  "G1 sustains no load point of the sweep within the SLOs" if not g1 else "G0 goodput is 0")
    at = next((p for p in points if g1 and p.load == g1.load), None)
    at_g0 = at.g0 if at else None
    g0_there = at_g0.metrics.goodput_per_s if at_g0 else None
    return SweepHeadline(
        status="ok", reason=reason, g0=g0, g1=g1, capacity_gain=gain, attainment_required=ATTAINMENT,
        ttft_slo_ms=slo.get("ttft_slo_ms"), tpot_slo_ms=slo.get("tpot_slo_ms"),
        g0_goodput_at_g1_limit_per_s=g0_there,
        goodput_ratio_at_g1_limit=g1.goodput_per_s / g0_there if g1 and g0_there and g1.goodput_per_s is not None
        else None)
