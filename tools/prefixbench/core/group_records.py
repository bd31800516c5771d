"""The G0 / G1 side's records as dataclasses: a phase's aggregates, a group manifest as a run fills it in and as
the decision reads it back, and the paired summary's side-by-side numbers.

Why dataclasses (stdlib, no new dependency): mypy checks their attributes natively, ``frozen`` keeps a record
that was read from a file from changing under its reader, and the field order is the JSON key order, so
``to_json`` writes the files byte for byte as the dicts did. The layers build these, ``to_json`` runs right
before a file is written (``core.files``), and ``from_json`` reads a file back (after ``records.validate`` /
``load_*`` checked its schema and section types). One name per quantity in code: ``hit_tokens`` (the JSON keeps
``reused_tokens`` where it always had it) and ``ttft_speedup_bound``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence, TypedDict

from .flat_records import FlatRecord
from .live_records import CounterDelta, Evidence, Prediction
from .records import SCHEMA_GROUP, load_group_manifest
from .request_rows import RequestRow, rows_of
from .sections import section

METRICS = ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms")


class GroupSpec(TypedDict):
    """One group of the experiment, as its manifests' ``group`` section holds it (``run.g0g1.GROUPS``)."""

    name: str
    cache_policy: str
    enabled: bool


@dataclass(frozen=True)
class Stats:
    """p50 / p90 / p99 / mean / count of one latency over the successful requests of a phase (the client always
    fills them; ``None`` only where a file read back lacks one)."""

    p50: float | None
    p90: float | None
    p99: float | None
    mean: float | None
    count: int | None

    def to_json(self) -> dict:
        return {"p50": self.p50, "p90": self.p90, "p99": self.p99, "mean": self.mean, "count": self.count}

    @classmethod
    def from_json(cls, data: Any) -> Stats | None:
        if not isinstance(data, Mapping):
            return None
        return cls(data.get("p50"), data.get("p90"), data.get("p99"), data.get("mean"), data.get("count"))


@dataclass(frozen=True)
class Aggregates:
    """The client's view of a measured phase (``measure.client.aggregates``): percentiles over the successful
    requests, throughput over the whole phase, the error count."""

    requests: int
    successful: int
    error_count: int
    duration_s: float | None
    """Seconds of the whole phase (``None`` only where a file read back lacks it)."""
    ttft_ms: Stats | None
    tpot_ms: Stats | None
    itl_ms: Stats | None
    e2e_ms: Stats | None
    prompt_tokens: int
    output_tokens: int
    throughput_tokens_per_s: float | None
    total_tokens_per_s: float | None
    request_throughput_per_s: float | None

    def stats(self, metric: str) -> Stats | None:
        """The percentiles of ``metric`` (one of ``METRICS``)."""
        return {"ttft_ms": self.ttft_ms, "tpot_ms": self.tpot_ms, "itl_ms": self.itl_ms,
                "e2e_ms": self.e2e_ms}[metric]

    def to_json(self) -> dict:
        data: dict[str, Any] = {"requests": self.requests, "successful": self.successful,
                                "error_count": self.error_count, "duration_s": self.duration_s}
        for metric in METRICS:
            stats = self.stats(metric)
            data[metric] = stats.to_json() if stats is not None else None
        return {**data, "prompt_tokens": self.prompt_tokens, "output_tokens": self.output_tokens,
                "throughput_tokens_per_s": self.throughput_tokens_per_s,
                "total_tokens_per_s": self.total_tokens_per_s,
                "request_throughput_per_s": self.request_throughput_per_s}

    @classmethod
    def from_json(cls, data: Any) -> Aggregates | None:
        """``None`` for an absent or null section (a run that failed before measuring has none)."""
        if not isinstance(data, Mapping):
            return None
        ttft, tpot, itl, e2e = (Stats.from_json(data.get(m)) for m in METRICS)
        return cls(requests=data.get("requests") or 0, successful=data.get("successful") or 0,
                   error_count=data.get("error_count") or 0, duration_s=data.get("duration_s"),
                   ttft_ms=ttft, tpot_ms=tpot, itl_ms=itl, e2e_ms=e2e,
                   prompt_tokens=data.get("prompt_tokens") or 0, output_tokens=data.get("output_tokens") or 0,
                   throughput_tokens_per_s=data.get("throughput_tokens_per_s"),
                   total_tokens_per_s=data.get("total_tokens_per_s"),
                   request_throughput_per_s=data.get("request_throughput_per_s"))


def percentile(aggregates: Aggregates | None, metric: str, key: str = "p50") -> float | None:
    """One percentile of one metric (``p50``, ``p90``, ...), ``None`` when the phase or the metric is missing."""
    stats = aggregates.stats(metric) if aggregates is not None else None
    return getattr(stats, key) if stats is not None else None


@dataclass(frozen=True)
class PredictionFacts:
    """What the G0 / G1 side reads of a group's judged prediction (``simulate.predict.judged``'s ``Prediction``,
    as the manifest holds it)."""

    predicted_hit_rate: float | None = None
    predicted_hit_tokens: int | None = None
    exact_expected: bool | None = None
    matches_measured: bool | None = None

    @classmethod
    def from_json(cls, data: Any) -> PredictionFacts:
        p = data if isinstance(data, Mapping) else {}
        return cls(p.get("predicted_hit_rate"), p.get("predicted_hit_tokens"), p.get("exact_expected"),
                   p.get("matches_measured"))


@dataclass(frozen=True)
class GroupRecord:
    """One run of a group (``prefixbench.backend_group/1``, or one of its ``repeats``) as its readers see it.

    ``rows`` are the per-request rows (``core.request_rows.RequestRow``), ``repeats`` the runs of a manifest
    with ``g0g1 --repeats`` (empty: the manifest is one run). ``replicas`` / ``routing`` /
    ``routing_comparison`` are G1's replica sections (``run.replicas``), kept as written."""

    status: str | None
    error: str | None
    name: str
    aggregates: Aggregates | None
    hit_rate: float | None
    hit_rate_evidence: str | None
    hit_rate_reason: str | None
    hit_tokens: int | None
    query_tokens: int | None
    prediction: PredictionFacts
    server_ttft_mean_ms: float | None
    server_tpot_mean_ms: float | None
    peak_memory_mib: float | None
    memory_source: str | None
    rows: Sequence[RequestRow]
    repeat: int
    repeats: tuple[GroupRecord, ...] = ()
    replicas: Sequence[Mapping] = ()
    routing: Mapping = field(default_factory=dict)
    routing_comparison: Mapping | None = None
    server_log_tail: str | None = None

    @property
    def runs(self) -> tuple[GroupRecord, ...]:
        """Every run of the group: its repeats, or the manifest itself."""
        return self.repeats or (self,)

    @classmethod
    def from_json(cls, data: Mapping) -> GroupRecord:
        timing = section(section(data, "backend_counters"), "server_timing_ms")
        memory = section(data, "memory")
        rows = data.get("requests")
        return cls(
            status=data.get("status"), error=data.get("error"), name=section(data, "group").get("name", "group"),
            aggregates=Aggregates.from_json(data.get("aggregates")), hit_rate=data.get("hit_rate"),
            hit_rate_evidence=data.get("hit_rate_evidence"), hit_rate_reason=data.get("hit_rate_reason"),
            hit_tokens=data.get("hit_tokens"), query_tokens=data.get("query_tokens"),
            prediction=PredictionFacts.from_json(data.get("prediction")),
            server_ttft_mean_ms=section(timing, "ttft").get("mean_ms"),
            server_tpot_mean_ms=section(timing, "tpot").get("mean_ms"),
            peak_memory_mib=memory.get("peak_memory_mib"), memory_source=memory.get("source"),
            rows=rows_of([r for r in rows if isinstance(r, Mapping)]) if isinstance(rows, list) else [],
            repeat=data.get("repeat", 0),
            repeats=tuple(cls.from_json(r) for r in data.get("repeats") or () if isinstance(r, Mapping)),
            replicas=data.get("replicas") or (), routing=section(data, "routing"),
            routing_comparison=data.get("routing_comparison"), server_log_tail=data.get("server_log_tail"))

    @classmethod
    def load(cls, path: str | os.PathLike) -> GroupRecord:
        """A group manifest file, validated (``records.load_group_manifest``), then read."""
        return cls.from_json(load_group_manifest(path))


@dataclass(frozen=True)
class NormalizedResult:
    """A group manifest's ``normalized_result`` (the seed's shape): metric percentiles, the hit rate with its
    evidence, and the prediction beside it; the summary repeats it per group."""

    aggregates: Aggregates
    peak_memory_mib: float | None
    hit_rate: float | None
    hit_rate_evidence: str | None
    hit_rate_reason: str | None
    hit_tokens: float | None
    """Prometheus counts are floats (holding integers, written as such); per-request usage sums are ints."""
    predicted_hit_rate: float | None

    @classmethod
    def of(cls, aggregates: Aggregates, memory: Mapping[str, Any], found: Evidence,
           prediction: Prediction) -> NormalizedResult:
        """From a measured phase's aggregates, memory, evidence and prediction."""
        return cls(aggregates=aggregates, peak_memory_mib=memory.get("peak_memory_mib"), hit_rate=found.hit_rate,
                   hit_rate_evidence=found.hit_rate_evidence, hit_rate_reason=found.hit_rate_reason,
                   hit_tokens=found.hit_tokens, predicted_hit_rate=prediction.predicted_hit_rate)

    def to_json(self) -> dict:
        a = self.aggregates.to_json()
        return {
            "metrics": {**{m: a[m] for m in METRICS},
                        "throughput_tokens_per_s": a["throughput_tokens_per_s"],
                        "request_throughput_per_s": a["request_throughput_per_s"],
                        "peak_memory_mib": self.peak_memory_mib, "error_count": a["error_count"]},
            "hit_rate": self.hit_rate, "hit_rate_evidence": self.hit_rate_evidence,
            "hit_rate_reason": self.hit_rate_reason, "reused_tokens": self.hit_tokens,
            "predicted_hit_rate": self.predicted_hit_rate,
        }


@dataclass(frozen=True)
class GroupMeasurement:
    """What one server's measured phase adds to its group manifest (``run.group.record``), after the header the
    run began with: the cache config and counter delta, the evidence read from them with the per-request usage
    checked against them, the judged prediction, the memory, the client's aggregates and rows, and the seed's
    ``normalized_result`` derived from them. ``to_json`` gives those keys in the files' order."""

    cache_config: Mapping[str, Any] | None
    counters: CounterDelta
    evidence: Evidence
    usage: Mapping[str, Any]
    prediction: Prediction
    memory: Mapping[str, Any]
    aggregates: Aggregates
    rows: Sequence[RequestRow]

    def to_json(self) -> dict:
        return {"backend_cache_config": self.cache_config, "backend_counters": self.counters.to_json(),
                **self.evidence.rate_json(), "hit_rate_unit": "token", "usage": self.usage,
                "prediction": self.prediction.to_json(), "memory": self.memory, "aggregates": self.aggregates.to_json(),
                "requests": [row.to_json() for row in self.rows],
                "normalized_result": NormalizedResult.of(self.aggregates, self.memory, self.evidence,
                                                         self.prediction).to_json()}


PROJECT = "69"
"""The course chapter every file of the project names (``project``; the files' names begin with it)."""
QUALITY = {"status": "not_evaluated",
           "reason": "output text is not scored; every request must finish with its fixed length"}
"""A group manifest's ``quality``: the benchmark checks lengths, not text."""


SHARED_SECTIONS = ("config", "environment", "server", "schema", "project")
"""What every repeat of a group shares: written once, at the top of the combined manifest."""


class JsonSections(Protocol):
    """Sections a record adds to a group's manifest, written in order by its ``to_json``: a measured phase's
    (``GroupMeasurement``, ``replica_records.ClusterMeasurement``) or a routing comparison's."""

    def to_json(self) -> dict: ...


@dataclass
class GroupRunManifest:
    """One group's manifest while a run fills it in: ``run.group`` (one server), ``run.replicas``,
    ``run.interleave`` (both groups at once) and g0g1's server that never started. The header comes first; the
    phases record themselves as they happen (``phases`` is the dict they write into); ``measured`` holds the
    measured sections (a ``GroupMeasurement`` or ``ClusterMeasurement``, turned into JSON by ``to_json``) or, for
    a run that failed before its measurement ended, the hit rate that is null with its reason; then the outcome.
    Not frozen: the run sets the outcome last. ``to_json`` writes one key order whichever path the run took (a
    measured run's, as the files always had it; the dicts filled in stages that this replaced put
    ``server_log_tail`` and ``finished_at`` in a different place on each failure path). What
    ``load_group_manifest`` reads back is ``records.GroupManifest`` and, for the decision and the reports,
    ``GroupRecord``."""

    label: str
    group: Mapping[str, Any]
    config: Mapping[str, Any]
    server: Mapping[str, Any] | None
    environment: Mapping[str, Any]
    started_at: str | None
    """When the run began (for a server that never started: when its start began); ``None`` leaves it out."""
    phases: dict[str, Any] = field(default_factory=dict)
    replica_servers: Sequence[Mapping[str, Any]] | None = None
    status: str = "running"
    error: str | None = None
    measured: JsonSections | Mapping[str, Any] = field(default_factory=dict)
    server_log_tail: str | None = None
    """The last lines of the log of a server that exited or never started; ``None`` (left out of the file): none
    kept, or the server keeps no log."""
    finished_at: str | None = None
    repeats: Sequence[GroupRunManifest] | None = None
    """With ``--repeats``: every run (``run.group.combine_repeats``), written without the sections they share."""
    routing_comparison: JsonSections | None = None
    """Replicas with ``compare_routings``: each policy measured on the same requests (``RoutingComparison``)."""

    def fail(self, error: str, unmeasured: Mapping[str, Any], finished_at: str) -> None:
        """The run stopped before its measurement ended: ``unmeasured`` (``evidence.unmeasured_hit_rate``) says
        why the hit rate is null."""
        self.status, self.error, self.measured, self.finished_at = "failed", error, unmeasured, finished_at

    def finish(self, failure: str | None, finished_at: str) -> None:
        """The measured phase ended: ``failure`` (``client.failure_summary``) names failed requests, else ok."""
        self.status, self.error, self.finished_at = ("failed" if failure else "ok"), failure, finished_at

    def to_json(self) -> dict:
        head = {"schema": SCHEMA_GROUP, "project": PROJECT, "label": self.label, "status": self.status,
                "error": self.error}
        if self.started_at is not None:
            head["started_at"] = self.started_at
        out: dict[str, Any] = {**head, "group": dict(self.group), "config": dict(self.config),
                               "server": dict(self.server) if self.server is not None else None,
                               "environment": dict(self.environment), "quality": dict(QUALITY),
                               "phases": dict(self.phases)}
        if self.replica_servers is not None:
            out["replica_servers"] = [dict(s) for s in self.replica_servers]
        out.update(self.measured if isinstance(self.measured, Mapping) else self.measured.to_json())
        if self.server_log_tail is not None:
            out["server_log_tail"] = self.server_log_tail
        out["finished_at"] = self.finished_at
        if self.repeats is not None:
            out["repeats"] = [{k: v for k, v in run.to_json().items() if k not in SHARED_SECTIONS} | {"repeat": i}
                              for i, run in enumerate(self.repeats)]
        if self.routing_comparison is not None:
            out["routing_comparison"] = self.routing_comparison.to_json()
        return out


@dataclass(frozen=True)
class SideBySide(FlatRecord):
    """The paired summary's measured numbers of both groups (``decision.paired.side_by_side``): G1's hit rate
    with its evidence, the prediction beside it, the TTFT speed-up and its bound 1 / (1 - h)."""

    g0_ttft_p50_ms: float | None
    g1_ttft_p50_ms: float | None
    g0_tpot_p50_ms: float | None
    g1_tpot_p50_ms: float | None
    g0_e2e_p50_ms: float | None
    g1_e2e_p50_ms: float | None
    g0_server_ttft_mean_ms: float | None
    g1_server_ttft_mean_ms: float | None
    g0_server_tpot_mean_ms: float | None
    g1_server_tpot_mean_ms: float | None
    g0_throughput_tokens_per_s: float | None
    g1_throughput_tokens_per_s: float | None
    g0_error_count: int | None
    g1_error_count: int | None
    hit_rate: float | None
    hit_rate_evidence: str | None
    hit_rate_reason: str | None
    hit_rate_unit: str
    hit_tokens: int | None
    """G1's hit tokens from the counters; the file calls them ``reused_tokens``."""
    query_tokens: int | None
    g0_hit_rate: float | None
    g0_hit_rate_evidence: str | None
    predicted_hit_rate: float | None
    predicted_hit_tokens: int | None
    prediction_matches_measured: bool | None
    g0_peak_memory_mib: float | None
    g1_peak_memory_mib: float | None
    peak_memory_source: str | None
    ttft_speedup: float | None
    server_ttft_speedup: float | None
    ttft_speedup_bound: float | None
    ttft_speedup_bound_definition: str

    _JSON_NAMES = {"hit_tokens": "reused_tokens"}
