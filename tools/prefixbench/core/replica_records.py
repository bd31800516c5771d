"""The records of a run on several replicas (``run.replicas``): one row per replica, the load it took, and a
``g0g1`` routing comparison.

A replica row is written in one of two layouts, the orders the files always had: ``LIVE`` (``hitrate`` with
``--endpoint A --endpoint B`` or behind a router: each replica's label, metrics URL and cache reset) and
``GROUP`` (a ``g0g1 --replicas N`` group manifest: each replica's client aggregates).
``tests/prefixbench/run/golden/`` holds one file of each, compared as text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .group_records import Aggregates, NormalizedResult
from .live_records import CounterDelta, Evidence, Prediction
from .request_rows import RequestRow
from .sections import section

LIVE, GROUP = "live", "group"
"""A replica row's layout: a live command's, or a ``g0g1`` group manifest's."""


@dataclass(frozen=True)
class ReplicaRow:
    """One replica's share of a measured phase: the requests placed on it, its own counter delta and the evidence
    read from it, and the prediction for the requests it received (one pool per replica)."""

    layout: str
    replica: int
    base_url: str | None
    requests: int | None
    """``None``: the placement is not known for every request (then no usage joins the evidence either)."""
    evidence: Evidence
    """The five hit-rate keys (``Evidence.rate_json``); the usage goes in ``usage``, checked against the counters."""
    usage: Mapping[str, Any]
    """``evidence.usage_check``: the per-request cached tokens beside the counter delta."""
    cache_config: Mapping[str, Any] | None
    counters: CounterDelta | None
    prediction: Prediction | None
    """``None`` until a live run predicts the replica (every written row has one)."""
    label: str | None = None
    metrics_url: str | None = None
    reset: Mapping[str, Any] | None = None
    """A live row's cache reset (``{"status": "skipped"}`` when none was asked)."""
    aggregates: Aggregates | None = None
    """A group row's client view of the requests the replica served."""

    @property
    def name(self) -> str:
        """How a reason names the replica: its label, or ``replica N``."""
        return self.label if self.label is not None else f"replica {self.replica}"

    @property
    def hit_tokens(self) -> float | None:
        return self.evidence.hit_tokens

    @property
    def query_tokens(self) -> float | None:
        return self.evidence.query_tokens

    def to_json(self) -> dict:
        counters = None if self.counters is None else self.counters.to_json()
        prediction = None if self.prediction is None else self.prediction.to_json()
        if self.layout == GROUP:
            return {"replica": self.replica, "base_url": self.base_url, "requests": self.requests,
                    **self.evidence.rate_json(), "prediction": prediction, "backend_cache_config": self.cache_config,
                    "backend_counters": counters, "usage": self.usage,
                    "aggregates": None if self.aggregates is None else self.aggregates.to_json()}
        return {"replica": self.replica, "label": self.label, "base_url": self.base_url,
                "metrics_url": self.metrics_url, "requests": self.requests, **self.evidence.rate_json(),
                "usage": self.usage, "backend_cache_config": self.cache_config, "backend_counters": counters,
                "reset": self.reset, "prediction": prediction}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ReplicaRow:
        """A row as a file holds it (either layout: a live row has a ``label``); a missing key reads as ``None``."""
        counters, prediction = data.get("backend_counters"), data.get("prediction")
        return cls(layout=LIVE if "label" in data else GROUP, replica=data.get("replica", 0),
                   base_url=data.get("base_url"), requests=data.get("requests"),
                   evidence=Evidence.from_json({k: v for k, v in data.items() if k != "usage"}),
                   usage=section(data, "usage"), cache_config=data.get("backend_cache_config"),
                   counters=CounterDelta.from_json(counters) if isinstance(counters, Mapping) else None,
                   prediction=Prediction.from_json(prediction) if isinstance(prediction, Mapping) else None,
                   label=data.get("label"), metrics_url=data.get("metrics_url"), reset=data.get("reset"),
                   aggregates=Aggregates.from_json(data.get("aggregates")))


@dataclass(frozen=True)
class LoadBalance:
    """Requests and computed prefill tokens (queries - hits, from the counters) per replica, and the imbalance:
    the most one replica computed over the mean (1 = even; ``None`` unless every replica's is known)."""

    requests: Sequence[int | None]
    computed_tokens: Sequence[float | None]
    imbalance: float | None

    DEFINITION = "the most prefill tokens one replica computed / the mean over replicas (counters)"

    @classmethod
    def of(cls, rows: Sequence[ReplicaRow]) -> LoadBalance:
        computed = [0 if r.requests == 0 else r.query_tokens - r.hit_tokens
                    if r.query_tokens is not None and r.hit_tokens is not None else None for r in rows]
        known = [c for c in computed if c is not None]
        mean = sum(known) / len(known) if known and len(known) == len(rows) else None
        return cls([r.requests for r in rows], computed, max(known) / mean if mean else None)

    def to_json(self) -> dict:
        return {"requests": list(self.requests), "computed_tokens": list(self.computed_tokens),
                "imbalance": self.imbalance, "definition": self.DEFINITION}


@dataclass(frozen=True)
class PolicyRun:
    """One routing policy's comparison run of a ``g0g1`` caching group (``run.replicas.measure_routings``): what
    its manifest measured and predicted, and what it lost against the best measured policy."""

    status: str
    error: str | None
    hit_rate: float | None
    hit_rate_evidence: str | None
    predicted_hit_rate: float | None
    prediction_matches_measured: bool | None
    ttft_p50_ms: float | None
    per_replica_hit_tokens: Sequence[float | None]
    placement: Sequence[int] | None
    hit_rate_lost_to_best: float | None = None
    ttft_p50_lost_to_best_ms: float | None = None

    def to_json(self) -> dict:
        return {"status": self.status, "error": self.error, "hit_rate": self.hit_rate,
                "hit_rate_evidence": self.hit_rate_evidence, "predicted_hit_rate": self.predicted_hit_rate,
                "prediction_matches_measured": self.prediction_matches_measured, "ttft_p50_ms": self.ttft_p50_ms,
                "per_replica_hit_tokens": list(self.per_replica_hit_tokens), "placement": self.placement,
                "hit_rate_lost_to_best": self.hit_rate_lost_to_best,
                "ttft_p50_lost_to_best_ms": self.ttft_p50_lost_to_best_ms}


@dataclass(frozen=True)
class RoutingComparison:
    """The same requests on the same replicas once per policy (``g0g1 --routing A,B``), the best of each measure."""

    replicas: int
    policies: Mapping[str, PolicyRun]
    best_hit_rate: str | None
    best_ttft: str | None

    NOTE = ("one run per policy, sequentially on the same replicas; TTFT differences of one run are not bounded by "
            "an interval")

    def to_json(self) -> dict:
        return {"replicas": self.replicas, "policies": {k: v.to_json() for k, v in self.policies.items()},
                "best_hit_rate": self.best_hit_rate, "best_ttft": self.best_ttft, "note": self.NOTE}


def _mapping(data: Any, key: str) -> Mapping[str, Any] | None:
    """``data[key]`` when it is a JSON object, else ``None`` (where absent differs from empty; otherwise
    ``section``)."""
    value = data.get(key)
    return value if isinstance(value, Mapping) else None


@dataclass(frozen=True)
class PrefixSpread:
    """For each prefix group, on how many replicas its measured requests ran (1 everywhere: kept together)."""

    replicas_per_prefix: Mapping[str, int]
    mean: float | None
    """``None`` only in a file read back without it."""

    DEFINITION = "distinct replicas that served a prefix group's measured requests (1 = kept together)"

    def to_json(self) -> dict:
        return {"replicas_per_prefix": dict(self.replicas_per_prefix), "mean": self.mean,
                "definition": self.DEFINITION}

    @classmethod
    def from_json(cls, data: Any) -> PrefixSpread | None:
        if not isinstance(data, Mapping):
            return None
        return cls(section(data, "replicas_per_prefix"), data.get("mean"))


@dataclass(frozen=True)
class PolicyPredictions:
    """The block model's cluster hit rate for every client policy on the requests that ran (prefill first), one
    shared pool beside them, and what the measured rate lost against the best policy and against one pool."""

    predicted_by_policy: Mapping[str, float | None]
    predicted_single_pool: float | None
    best_policy: str | None
    measured_lost_to_best_policy: float | None
    measured_lost_to_single_pool: float | None

    MODEL_NOTE = ("predicted_by_policy places the prefill and measured requests on pools of the smallest replica's "
                  "size with the teaching simulator (lru) and counts the measured ones: a comparison of policies, not "
                  "the engine-exact prediction")

    def to_json(self) -> dict:
        return {"predicted_by_policy": dict(self.predicted_by_policy),
                "predicted_single_pool": self.predicted_single_pool, "best_policy": self.best_policy,
                "measured_lost_to_best_policy": self.measured_lost_to_best_policy,
                "measured_lost_to_single_pool": self.measured_lost_to_single_pool, "model_note": self.MODEL_NOTE}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PolicyPredictions | None:
        """``None`` where the run had no block size (then the file has no ``predicted_by_policy``)."""
        predicted = _mapping(data, "predicted_by_policy")
        if predicted is None:
            return None
        return cls(predicted, data.get("predicted_single_pool"), data.get("best_policy"),
                   data.get("measured_lost_to_best_policy"), data.get("measured_lost_to_single_pool"))


@dataclass(frozen=True)
class RouterRecord:
    """Router mode: the router this run started, where the placement was read, the KV events' placement, the
    router's own view beside the replicas' counters, and the load each replica took."""

    router_process: Mapping[str, Any] | None
    placement_source: str | None
    """``counters`` or ``kv_events``; ``None`` when the placement is not known for every request."""
    kv_events_placement: Mapping[str, Any] | None
    """``None``: the replicas' KV events were subscribed to, but the run never read them (it predicted nothing)."""
    router_view: Mapping[str, Any]
    load: LoadBalance

    def to_json(self) -> dict:
        return {"router_process": self.router_process, "placement_source": self.placement_source,
                "kv_events_placement": self.kv_events_placement, "router_view": self.router_view,
                "load": self.load.to_json()}


NOTES = {"client": "placed by the client with the block model: a measuring harness, not a router",
         "router": "placed by the router; observed from each replica's finished-request counter (one request at a "
                   "time) or from the blocks each replica stored (KV events)"}
"""A placement's ``note``, by its ``mode``."""


@dataclass(frozen=True)
class Placement:
    """A live run's ``routing`` section: who placed the requests (the client by ``policy``, or a router), where
    each went (``None``: not known for every request, and why), how the prefix groups spread, what every client
    policy would reach on the same requests, the router's record, and the engine model's yardstick."""

    mode: str
    policy: str | None
    """The client's policy, or the ``vllm-router`` policy this run started (``None``: the user's router)."""
    replicas: int
    router: str | None
    placement: Sequence[int | None] | None
    prefill_placement: Sequence[int | None]
    placement_reason: str | None
    prefix_spread: PrefixSpread | None
    policies: PolicyPredictions | None
    """``None`` without a block size."""
    router_record: RouterRecord | None = None
    yardstick: Mapping[str, Any] | None = None
    """``simulate.placement.yardstick``'s result, with the measured rate beside it (``None``: not yet added)."""

    def to_json(self) -> dict:
        out: dict[str, Any] = {
            "mode": self.mode, "policy": self.policy, "replicas": self.replicas, "router": self.router,
            "placement": self.placement, "prefill_placement": self.prefill_placement,
            "placement_reason": self.placement_reason,
            "prefix_spread": None if self.prefix_spread is None else self.prefix_spread.to_json(),
            "note": NOTES.get(self.mode, NOTES["router"])}
        if self.policies is not None:
            out |= self.policies.to_json()
        if self.router_record is not None:
            out |= self.router_record.to_json()
        if self.yardstick is not None:
            out["yardstick"] = self.yardstick
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Placement:
        """What the reports read of a result's ``routing`` (``core.records`` validated those keys); the yardstick
        as the file holds it; the router's record is not read back (no report reads it)."""
        return cls(data.get("mode") or "", data.get("policy"), data.get("replicas") or 0, data.get("router"),
                   data.get("placement"), data.get("prefill_placement") or [], data.get("placement_reason"),
                   PrefixSpread.from_json(data.get("prefix_spread")), PolicyPredictions.from_json(data),
                   yardstick=_mapping(data, "yardstick"))


@dataclass(frozen=True)
class ClientRouting:
    """How ``g0g1 --replicas N`` placed a group's requests: each one on the replica the block model's ``policy``
    picks, and the cluster hit rate the block model gives every client policy on the same requests."""

    policy: str
    replicas: int
    placement: Sequence[int]
    predicted_by_policy: Mapping[str, float | None]

    NOTE = "client-side placement by the block model: a measuring harness, not a router"

    @property
    def predicted_lost_to_best(self) -> dict[str, float | None]:
        best = max((v for v in self.predicted_by_policy.values() if v is not None), default=None)
        return {k: (best - v if best is not None and v is not None else None)
                for k, v in self.predicted_by_policy.items()}

    def to_json(self) -> dict:
        return {"policy": self.policy, "replicas": self.replicas, "placement": list(self.placement),
                "predicted_by_policy": dict(self.predicted_by_policy),
                "predicted_lost_to_best": self.predicted_lost_to_best, "note": self.NOTE}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ClientRouting:
        """A group manifest's ``routing`` (a missing key reads as empty; a policy's rate that is not a number, as
        unknown: group manifests are read without field checks)."""
        placement = data.get("placement")
        predicted = {str(k): v if isinstance(v, (int, float)) and not isinstance(v, bool) else None
                     for k, v in section(data, "predicted_by_policy").items()}
        return cls(data.get("policy") or "", data.get("replicas") or 0,
                   placement if isinstance(placement, list) else [], predicted)


@dataclass(frozen=True)
class ClusterMeasurement:
    """What one measured phase on replicas adds to a ``g0g1 --replicas`` group manifest (``run.replicas``): each
    replica's row, the placement, the cluster's evidence (the replicas' counter sums, or the first replica's
    reason), replica 0's cache config, the server latency histograms pooled over the replicas, the cluster's
    prediction, the memory, the client's aggregates and rows, and the seed's ``normalized_result``."""

    rows: Sequence[ReplicaRow]
    routing: ClientRouting
    evidence: Evidence
    cache_config: Mapping[str, Any] | None
    server_timing_ms: Mapping[str, Any]
    prediction: Prediction
    memory: Mapping[str, Any]
    aggregates: Aggregates
    requests: Sequence[RequestRow]

    UNCOUNTED_ORDER = ("hit_rate", "hit_rate_evidence", "hit_tokens", "query_tokens", "hit_rate_reason")
    """The order a cluster without every replica's counters was always written in (a counted one: ``rate_json``'s)."""

    def to_json(self) -> dict:
        found = self.evidence
        rates = found.rate_json()
        if found.hit_rate_evidence != "backend_metrics":
            rates = {key: rates[key] for key in self.UNCOUNTED_ORDER}
        normalized = NormalizedResult.of(self.aggregates, self.memory, found, self.prediction)
        return {"replicas": [row.to_json() for row in self.rows], "routing": self.routing.to_json(), **rates,
                "hit_rate_unit": "token", "backend_cache_config": self.cache_config,
                "backend_counters": {"server_timing_ms": self.server_timing_ms, "per_replica": True},
                "prediction": self.prediction.to_json(), "memory": self.memory, "aggregates": self.aggregates.to_json(),
                "requests": [row.to_json() for row in self.requests], "normalized_result": normalized.to_json()}
