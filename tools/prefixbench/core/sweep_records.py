"""A load sweep's records: each load point, each group's numbers there over its repeats, and the headline.

``decision.sweep`` computes them, ``run.sweep`` keeps them while the sweep runs and writes them with ``to_json``
(the key order the sweep file always had: ``tests/prefixbench/run/test_g0g1_golden.py`` compares a sweep's file
with the golden one), and ``report.sweep`` reads a sweep file back with ``from_json``. ``from_json`` takes what a
file may hold: a missing key reads as ``None``. The G1-vs-G0 ``comparison`` is the
``decision.confidence.differences`` record (``core.interval_records``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from .flat_records import FlatRecord
from .group_records import Stats
from .interval_records import BootstrapDifferences


@dataclass(frozen=True)
class LoadPoint:
    """One load of the sweep: ``concurrency`` requests in flight, or ``request_rate`` requests/s (then every
    request may be in flight: ``concurrency`` is the number of requests)."""

    label: str
    kind: str
    """``concurrency`` or ``request_rate``."""
    value: float
    concurrency: int
    request_rate: float | None

    def to_json(self) -> dict:
        return {"label": self.label, "kind": self.kind, "value": self.value, "concurrency": self.concurrency,
                "request_rate": self.request_rate}

    @classmethod
    def from_json(cls, data: Any) -> LoadPoint:
        data = data if isinstance(data, Mapping) else {}
        return cls(data.get("label"), data.get("kind"), data.get("value"), data.get("concurrency"),
                   data.get("request_rate"))


@dataclass(frozen=True)
class Spread:
    """Mean, min and max of one number over a point's repeats (``None`` where no repeat has it)."""

    mean: float | None
    min: float | None
    max: float | None

    def to_json(self) -> dict:
        return {"mean": self.mean, "min": self.min, "max": self.max}

    @classmethod
    def from_json(cls, data: Any) -> Spread:
        data = data if isinstance(data, Mapping) else {}
        return cls(data.get("mean"), data.get("min"), data.get("max"))


@dataclass(frozen=True)
class MeanPercentiles:
    """ITL p50 / p90 / p99 / mean, each the mean over the repeats that measured it."""

    p50: float | None
    p90: float | None
    p99: float | None
    mean: float | None

    def to_json(self) -> dict:
        return {"p50": self.p50, "p90": self.p90, "p99": self.p99, "mean": self.mean}

    @classmethod
    def from_json(cls, data: Any) -> MeanPercentiles | None:
        if not isinstance(data, Mapping):
            return None
        return cls(data.get("p50"), data.get("p90"), data.get("p99"), data.get("mean"))


@dataclass(frozen=True)
class Goodput:
    """Requests per second within every SLO given, over a run's duration (``None`` with ``reason`` without an SLO
    or a duration), the requests that met them, and the share of requests that did."""

    per_s: float | None
    good_requests: int | None
    slo_attainment: float | None
    reason: str | None

    def to_json(self) -> dict:
        return {"goodput_per_s": self.per_s, "good_requests": self.good_requests,
                "slo_attainment": self.slo_attainment, "goodput_reason": self.reason}

    @classmethod
    def from_json(cls, data: Mapping) -> Goodput:
        return cls(data.get("goodput_per_s"), data.get("good_requests"), data.get("slo_attainment"),
                   data.get("goodput_reason"))


@dataclass(frozen=True)
class RepeatSummary:
    """One repeat of one group at one load point, as the sweep keeps it."""

    repeat: int | None
    status: str | None
    error: str | None
    ttft_p90_ms: float | None
    request_throughput_per_s: float | None
    throughput_tokens_per_s: float | None
    goodput: Goodput
    hit_rate: float | None
    hit_rate_evidence: str | None
    hit_tokens: float | None
    query_tokens: float | None
    predicted_hit_tokens: int | None
    prediction_exact: bool | None
    prediction_matches: bool | None

    def to_json(self) -> dict:
        return {"repeat": self.repeat, "status": self.status, "error": self.error, "ttft_p90_ms": self.ttft_p90_ms,
                "request_throughput_per_s": self.request_throughput_per_s,
                "throughput_tokens_per_s": self.throughput_tokens_per_s, **self.goodput.to_json(),
                "hit_rate": self.hit_rate, "hit_rate_evidence": self.hit_rate_evidence,
                "hit_tokens": self.hit_tokens, "query_tokens": self.query_tokens,
                "predicted_hit_tokens": self.predicted_hit_tokens, "prediction_exact": self.prediction_exact,
                "prediction_matches": self.prediction_matches}

    @classmethod
    def from_json(cls, data: Any) -> RepeatSummary:
        data = data if isinstance(data, Mapping) else {}
        return cls(data.get("repeat"), data.get("status"), data.get("error"), data.get("ttft_p90_ms"),
                   data.get("request_throughput_per_s"), data.get("throughput_tokens_per_s"), Goodput.from_json(data),
                   data.get("hit_rate"), data.get("hit_rate_evidence"), data.get("hit_tokens"),
                   data.get("query_tokens"), data.get("predicted_hit_tokens"), data.get("prediction_exact"),
                   data.get("prediction_matches"))


@dataclass(frozen=True)
class PooledHitRate(FlatRecord):
    """Hit tokens over queried tokens summed over a point's repeats, from the server's counters only; ``None``
    with ``reason`` when a repeat has no counter evidence (``evidence``: the repeats', or ``mixed``)."""

    hit_rate: float | None
    evidence: str | None
    reason: str | None
    hit_tokens: float | None
    query_tokens: float | None

    _JSON_NAMES = {"evidence": "hit_rate_evidence", "reason": "hit_rate_reason"}


@dataclass(frozen=True)
class PointMetrics:
    """A group at one load point over its repeats: TTFT / TPOT / E2E percentiles pooled over every request of
    every repeat, ITL percentiles averaged over repeats, throughputs and goodput the mean over repeats, SLO
    attainment pooled, and the spread of three numbers over the repeats."""

    ttft_ms: Stats | None
    tpot_ms: Stats | None
    e2e_ms: Stats | None
    itl_ms: MeanPercentiles | None
    request_throughput_per_s: float | None
    throughput_tokens_per_s: float | None
    goodput_per_s: float | None
    goodput_reason: str | None
    slo_attainment: float | None
    error_count: int | None
    ttft_p90_ms_over_repeats: Spread
    request_throughput_over_repeats: Spread
    goodput_over_repeats: Spread

    def to_json(self) -> dict:
        def stats(value: Stats | MeanPercentiles | None) -> dict | None:
            return None if value is None else value.to_json()

        return {"ttft_ms": stats(self.ttft_ms), "tpot_ms": stats(self.tpot_ms), "e2e_ms": stats(self.e2e_ms),
                "itl_ms": stats(self.itl_ms), "request_throughput_per_s": self.request_throughput_per_s,
                "throughput_tokens_per_s": self.throughput_tokens_per_s, "goodput_per_s": self.goodput_per_s,
                "goodput_reason": self.goodput_reason, "slo_attainment": self.slo_attainment,
                "error_count": self.error_count,
                "ttft_p90_ms_over_repeats": self.ttft_p90_ms_over_repeats.to_json(),
                "request_throughput_over_repeats": self.request_throughput_over_repeats.to_json(),
                "goodput_over_repeats": self.goodput_over_repeats.to_json()}

    @classmethod
    def from_json(cls, data: Any) -> PointMetrics:
        data = data if isinstance(data, Mapping) else {}
        return cls(Stats.from_json(data.get("ttft_ms")), Stats.from_json(data.get("tpot_ms")),
                   Stats.from_json(data.get("e2e_ms")), MeanPercentiles.from_json(data.get("itl_ms")),
                   data.get("request_throughput_per_s"), data.get("throughput_tokens_per_s"),
                   data.get("goodput_per_s"), data.get("goodput_reason"), data.get("slo_attainment"),
                   data.get("error_count"), Spread.from_json(data.get("ttft_p90_ms_over_repeats")),
                   Spread.from_json(data.get("request_throughput_over_repeats")),
                   Spread.from_json(data.get("goodput_over_repeats")))


@dataclass(frozen=True)
class GroupAtPoint:
    """One group at one load point: its status (the group manifest's), its numbers over the repeats, the pooled
    hit rate and each repeat's summary."""

    status: str | None
    error: str | None
    metrics: PointMetrics
    hit: PooledHitRate
    repeats: tuple[RepeatSummary, ...]

    def to_json(self) -> dict:
        return {"status": self.status, "error": self.error, "metrics": self.metrics.to_json(), **self.hit.to_json(),
                "repeats": [repeat.to_json() for repeat in self.repeats]}

    @classmethod
    def from_json(cls, data: Any) -> GroupAtPoint | None:
        if not isinstance(data, Mapping):
            return None
        repeats = data.get("repeats")
        return cls(data.get("status"), data.get("error"), PointMetrics.from_json(data.get("metrics")),
                   PooledHitRate.from_json(data),
                   tuple(RepeatSummary.from_json(r) for r in (repeats if isinstance(repeats, list) else [])))


@dataclass
class SweepPoint:
    """One load point of the sweep: the load, each group's numbers once it ran there (``None`` before), and the
    G1-vs-G0 differences with their intervals once both ran (``decision.confidence.differences``)."""

    load: LoadPoint
    g0: GroupAtPoint | None = None
    g1: GroupAtPoint | None = None
    comparison: BootstrapDifferences | None = None

    def group(self, name: str) -> GroupAtPoint | None:
        """``g0`` or ``g1``."""
        return {"g0": self.g0, "g1": self.g1}[name]

    def to_json(self) -> dict:
        return {"load": self.load.to_json(), "g0": None if self.g0 is None else self.g0.to_json(),
                "g1": None if self.g1 is None else self.g1.to_json(),
                "comparison": None if self.comparison is None else self.comparison.to_json()}

    @classmethod
    def from_json(cls, data: Any) -> SweepPoint:
        data = data if isinstance(data, Mapping) else {}
        return cls(LoadPoint.from_json(data.get("load")), GroupAtPoint.from_json(data.get("g0")),
                   GroupAtPoint.from_json(data.get("g1")), BootstrapDifferences.from_json(data.get("comparison")))


@dataclass(frozen=True)
class SustainedLoad:
    """The highest load point a group sustains within the SLOs, with its goodput and throughput there."""

    load: LoadPoint
    goodput_per_s: float | None
    request_throughput_per_s: float | None
    at_highest_load_swept: bool
    """The group may sustain more than the sweep asked of it."""

    def to_json(self) -> dict:
        return {"load": self.load.to_json(), "goodput_per_s": self.goodput_per_s,
                "request_throughput_per_s": self.request_throughput_per_s,
                "at_highest_load_swept": self.at_highest_load_swept}

    @classmethod
    def from_json(cls, data: Any) -> SustainedLoad | None:
        if not isinstance(data, Mapping):
            return None
        return cls(LoadPoint.from_json(data.get("load")), data.get("goodput_per_s"),
                   data.get("request_throughput_per_s"), bool(data.get("at_highest_load_swept")))


CAPACITY_GAIN_DEFINITION = ("G1 goodput at its highest sustained load / G0 goodput at its highest sustained load "
                            "(at_highest_load_swept: the group may sustain more than the sweep asked of it); "
                            "goodput_ratio_at_g1_limit = G1 goodput / G0 goodput at G1's highest sustained load "
                            "(null when G0's is 0)")


@dataclass(frozen=True)
class SweepHeadline:
    """What caching adds under the SLOs: each group's highest sustained load and the goodput ratios. Without an
    SLO (``status`` ``no_slo``) only the status, the reason and the empty sides are written."""

    status: str | None
    reason: str | None
    g0: SustainedLoad | None = None
    g1: SustainedLoad | None = None
    capacity_gain: float | None = None
    attainment_required: float | None = None
    ttft_slo_ms: float | None = None
    tpot_slo_ms: float | None = None
    g0_goodput_at_g1_limit_per_s: float | None = None
    goodput_ratio_at_g1_limit: float | None = None

    def side(self, name: str) -> SustainedLoad | None:
        """``g0`` or ``g1``."""
        return {"g0": self.g0, "g1": self.g1}[name]

    def to_json(self) -> dict:
        sides = {"g0": None if self.g0 is None else self.g0.to_json(),
                 "g1": None if self.g1 is None else self.g1.to_json(), "capacity_gain": self.capacity_gain}
        if self.status != "ok":
            return {"status": self.status, "reason": self.reason, **sides}
        return {"status": self.status, "reason": self.reason, "attainment_required": self.attainment_required,
                "ttft_slo_ms": self.ttft_slo_ms, "tpot_slo_ms": self.tpot_slo_ms, **sides,
                "g0_goodput_at_g1_limit_per_s": self.g0_goodput_at_g1_limit_per_s,
                "goodput_ratio_at_g1_limit": self.goodput_ratio_at_g1_limit,
                "capacity_gain_definition": CAPACITY_GAIN_DEFINITION}

    @classmethod
    def from_json(cls, data: Any) -> SweepHeadline | None:
        if not isinstance(data, Mapping):
            return None
        return cls(data.get("status"), data.get("reason"), SustainedLoad.from_json(data.get("g0")),
                   SustainedLoad.from_json(data.get("g1")), data.get("capacity_gain"),
                   data.get("attainment_required"), data.get("ttft_slo_ms"), data.get("tpot_slo_ms"),
                   data.get("g0_goodput_at_g1_limit_per_s"), data.get("goodput_ratio_at_g1_limit"))


def points_of(data: Any) -> list[SweepPoint]:
    """A sweep file's points (``[]`` where it holds none)."""
    points = data.get("points") if isinstance(data, Mapping) else None
    return [SweepPoint.from_json(p) for p in points] if isinstance(points, list) else []
