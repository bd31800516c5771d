"""The records of a measured phase, as dataclasses: the counter delta's totals, the evidence, the prediction, the
hit rates side by side, the TTFT against a baseline, and ``hitrate``'s note on the chat template (the attribution's
records are in ``core.attribution_records``).

The layers build these (``evidence``, ``simulate.predict``, ``simulate.attribution``, ``run.live``) and turn them
into JSON only at the edge, with ``to_json``; a report loads them back with ``from_json`` after
``core.records.validate`` has checked the file. ``to_json`` writes the keys in the order the files always had, so
a result is byte-compatible with one written before these types existed (``tests/.../test_live_golden.py``).
Stdlib ``dataclasses``: no dependency, and mypy reads them natively.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from .flat_records import FlatRecord
from .sections import section


@dataclass(frozen=True)
class Counter:
    """One tracked counter over a phase: the name the server exposed it under, the total over its engines
    (``None`` when an engine sent NaN or Inf) and each engine's delta (``"0"``, or ``"index:engine"`` over
    several endpoints)."""

    name: str | None
    """``None`` only in a file that lacks it."""
    total: float | None
    per_engine: Mapping[str, float | None]

    def to_json(self) -> dict:
        return {"name": self.name, "total": self.total, "per_engine": dict(self.per_engine)}


@dataclass(frozen=True)
class CounterDelta:
    """What the server's counters did between two scrapes (``measure.metrics.diff``): every tracked counter found
    in both (``counters``, by key: ``hits``, ``queries``, ...), prompt tokens by source, the mean of each server
    latency histogram, and ``problems``: what makes the delta unusable (a failed scrape, a counter reset, a count
    no cache can produce). A counter the server does not expose is absent, never 0."""

    problems: tuple[str, ...] = ()
    counters: Mapping[str, Counter] = field(default_factory=dict)
    endpoints: tuple[str, ...] = ()
    interval_s: float | None = None
    prompt_tokens_by_source: Mapping[str, float | None] = field(default_factory=dict)
    server_timing_ms: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Per histogram key: ``name``, ``count`` and ``mean_ms`` (``None`` when nothing was observed)."""

    def to_json(self) -> dict:
        return {"endpoints": list(self.endpoints), "interval_s": self.interval_s,
                "counters": {key: counter.to_json() for key, counter in self.counters.items()},
                "prompt_tokens_by_source": dict(self.prompt_tokens_by_source),
                "server_timing_ms": {key: dict(timing) for key, timing in self.server_timing_ms.items()},
                "problems": list(self.problems)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CounterDelta:
        """A delta as a file (or a replica row) holds it; a section it lacks, or holds as another type, reads as
        empty."""
        def listed(key: str) -> tuple:
            value = data.get(key)
            return tuple(value) if isinstance(value, list) else ()

        return cls(problems=listed("problems"),
                   counters={key: Counter(entry.get("name"), entry.get("total"), entry.get("per_engine") or {})
                             for key, entry in section(data, "counters").items() if isinstance(entry, Mapping)},
                   endpoints=listed("endpoints"), interval_s=data.get("interval_s"),
                   prompt_tokens_by_source=section(data, "prompt_tokens_by_source"),
                   server_timing_ms=section(data, "server_timing_ms"))

    @classmethod
    def of(cls, delta: CounterDelta | Mapping[str, Any] | None) -> CounterDelta:
        """A delta, or one read back from JSON; ``None`` (nothing scraped) reads as a delta without counters,
        with that as its problem."""
        if delta is None:
            return cls(problems=("no metrics were scraped",))
        return delta if isinstance(delta, CounterDelta) else cls.from_json(delta)

    def total(self, key: str) -> float | None:
        """The counter's total, ``None`` when the server does not expose it (or sent NaN / Inf)."""
        counter = self.counters.get(key)
        return counter.total if counter is not None else None

    @property
    def hits(self) -> float | None:
        return self.total("hits")

    @property
    def queries(self) -> float | None:
        return self.total("queries")

    @property
    def preemptions(self) -> float | None:
        return self.total("preemptions")

    @property
    def request_success(self) -> float | None:
        """Finished requests (``vllm:request_success``)."""
        return self.total("request_success")

    @property
    def counted(self) -> frozenset[str]:
        """The counters the delta holds (by key), exposed or not in a total."""
        return frozenset(self.counters)

    @property
    def usable(self) -> bool:
        """No problem and both prefix-cache counters present."""
        return not self.problems and {"hits", "queries"} <= self.counted


@dataclass(frozen=True)
class Usage:
    """The per-request ``usage.cached_tokens`` summed over a phase (``evidence``)."""

    requests: int
    reported: int
    complete: bool
    cached_tokens: int | None
    prompt_tokens: int | None

    def to_json(self) -> dict:
        return {"requests": self.requests, "reported": self.reported, "complete": self.complete,
                "cached_tokens": self.cached_tokens, "prompt_tokens": self.prompt_tokens}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Usage:
        return cls(data["requests"], data["reported"], data["complete"], data["cached_tokens"], data["prompt_tokens"])


@dataclass(frozen=True)
class Evidence:
    """A measured hit rate and where it comes from, or ``None`` and why (``evidence.hit_rate_evidence``)."""

    hit_rate: float | None
    hit_rate_evidence: str
    hit_rate_reason: str | None
    hit_tokens: float | None
    """Prometheus counts are floats (holding integers); per-request usage sums are ints."""
    query_tokens: float | None
    usage: Usage | None = None

    def rate_json(self) -> dict:
        """The five hit-rate keys, without the usage: what a group manifest or a replica row holds at its top
        level (the usage goes beside them, checked against the counters: ``evidence.usage_check``)."""
        return {"hit_rate": self.hit_rate, "hit_rate_evidence": self.hit_rate_evidence,
                "hit_rate_reason": self.hit_rate_reason, "hit_tokens": self.hit_tokens,
                "query_tokens": self.query_tokens}

    def to_json(self) -> dict:
        out = self.rate_json()
        return out if self.usage is None else {**out, "usage": self.usage.to_json()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Evidence:
        usage = data.get("usage")
        return cls(data.get("hit_rate"), data.get("hit_rate_evidence") or "", data.get("hit_rate_reason"),
                   data.get("hit_tokens"), data.get("query_tokens"),
                   Usage.from_json(usage) if isinstance(usage, Mapping) else None)


@dataclass(frozen=True)
class EngineModel:
    """Whether the vLLM block-pool engine model replayed the phase, and the vLLM release whose rules it used."""

    used: bool
    vllm_version: str | None
    sequential: bool | None = None
    reason: str | None = None
    rules: Mapping[str, Any] | None = None
    """``cache.engine_pool.rules_for``: ``server_version``, ``rules_version``, ``note`` (vLLM servers only)."""

    def to_json(self) -> dict:
        return {"used": self.used, "vllm_version": self.vllm_version, "sequential": self.sequential,
                "reason": self.reason, **(self.rules or {})}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EngineModel:
        rules = {k: data[k] for k in ("server_version", "rules_version", "note") if k in data}
        return cls(bool(data.get("used")), data.get("vllm_version"), data.get("sequential"), data.get("reason"),
                   rules or None)

    @property
    def note(self) -> str | None:
        return self.rules.get("note") if self.rules else None

    @property
    def server_version(self) -> str | None:
        return self.rules.get("server_version") if self.rules else None


POOL, NONE, CLUSTER, CLUSTER_NONE = "pool", "none", "cluster", "cluster_none"
"""A prediction's shape: one pool's, none (and why), the replicas' sum, none for the replicas."""
_SHAPES = {
    POOL: ("predicted_hit_tokens", "predicted_query_tokens", "predicted_hit_rate", "per_request_hit_tokens",
           "block_size", "capacity_blocks", "policy", "last_token_rule", "simulated_warmup_prompts",
           "predicted_evictions", "in_phase_reuse_tokens", "engine_model"),
    NONE: ("predicted_hit_rate", "predicted_hit_tokens", "exact_expected", "reason"),
    CLUSTER: ("predicted_hit_tokens", "predicted_query_tokens", "predicted_hit_rate", "per_replica", "block_size",
              "capacity_blocks", "policy", "engine_model", "predicted_evictions", "in_phase_reuse_tokens",
              "simulated_warmup_prompts"),
    CLUSTER_NONE: ("predicted_hit_tokens", "predicted_hit_rate", "exact_expected", "matches_measured",
                   "per_replica", "reason"),
}
_JUDGED = ("exact_expected", "caveats", "measured_hit_tokens", "difference_tokens", "matches_measured")
_EXTRAS = ("query_tokens_note", "order_dependent_tokens", "requests_matching_cached_tokens", "requests_matching",
           "overlap_note", "replicas_matching")
"""What a judge or a command adds after the shape's keys, written only when set."""


@dataclass
class Prediction:
    """What the server's counters should show (``simulate.predict``), once judged with ``exact_expected`` and the
    difference to what was measured, plus what a command adds (``requests_matching_cached_tokens`` ...)."""

    shape: str = POOL
    predicted_hit_tokens: int | None = None
    predicted_query_tokens: int | None = None
    predicted_hit_rate: float | None = None
    per_request_hit_tokens: list[int] | None = None
    """In server order; a live run moves them to its rows (``None`` then, and not written)."""
    block_size: int | None = None
    capacity_blocks: int | list[int | None] | None = None
    policy: str | None = None
    last_token_rule: bool = True
    simulated_warmup_prompts: int | None = None
    predicted_evictions: int | None = None
    in_phase_reuse_tokens: int | None = None
    """These three are ``None`` only in a loaded prediction that lacks them (no prediction, or a failed run)."""
    engine_model: EngineModel | None = None
    per_replica: bool = False
    reason: str | None = None
    judged: bool = False
    exact_expected: bool = False
    caveats: list[str] = field(default_factory=list)
    measured_hit_tokens: float | None = None
    difference_tokens: float | None = None
    matches_measured: bool | None = None
    query_tokens_note: str | None = None
    order_dependent_tokens: int | None = None
    requests_matching_cached_tokens: int | None = None
    requests_matching: int | None = None
    overlap_note: str | None = None
    replicas_matching: int | None = None

    @classmethod
    def unpredicted(cls, reason: str) -> Prediction:
        """No prediction (the block size is unknown): null with the reason."""
        return cls(shape=NONE, reason=reason)

    @property
    def available(self) -> bool:
        return self.predicted_hit_tokens is not None

    def judge(self, caveats: list[str], measured_hit_tokens: float | None,
              measured_query_tokens: float | None = None) -> Prediction:
        """This prediction with ``exact_expected`` (no caveat), the caveats and the difference to the server."""
        predicted = self.predicted_hit_tokens
        assert predicted is not None, "only an available prediction is judged"
        note = None
        if measured_query_tokens is not None and measured_query_tokens != self.predicted_query_tokens:
            note = (f"the server counted {measured_query_tokens} queried tokens, the prediction "
                    f"{self.predicted_query_tokens}: other traffic or retried requests reached the server")
        return replace(self, judged=True, exact_expected=not caveats, caveats=list(caveats),
                       measured_hit_tokens=measured_hit_tokens,
                       difference_tokens=None if measured_hit_tokens is None else measured_hit_tokens - predicted,
                       matches_measured=None if measured_hit_tokens is None else measured_hit_tokens == predicted,
                       query_tokens_note=note)

    def to_json(self) -> dict:
        keys = [k for k in _SHAPES[self.shape] if k != "per_request_hit_tokens" or self.per_request_hit_tokens
                is not None]
        if self.shape == CLUSTER or self.judged:
            keys += _JUDGED
        out = {k: getattr(self, k) for k in keys}
        if "engine_model" in out and self.engine_model is not None:
            out["engine_model"] = self.engine_model.to_json()
        if "caveats" in out:
            out["caveats"] = list(self.caveats)
        return out | {k: getattr(self, k) for k in _EXTRAS if getattr(self, k) is not None}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Prediction:
        """Any of the four shapes (validated first: ``core.records``); a key that is absent or null takes its
        default."""
        if data.get("per_replica"):
            shape = CLUSTER if "predicted_query_tokens" in data else CLUSTER_NONE
        else:
            shape = POOL if "predicted_query_tokens" in data else NONE
        engine = data.get("engine_model")
        known = {k: data[k] for k in cls.__dataclass_fields__
                 if data.get(k) is not None and k not in ("shape", "engine_model", "judged")}  # null: the default
        return cls(shape=shape, **known, judged=shape in (POOL, CLUSTER) and "caveats" in data,
                   engine_model=EngineModel.from_json(engine) if isinstance(engine, Mapping) else None)


@dataclass(frozen=True)
class HitRates:
    """Predicted and measured side by side (``run.live.hit_rates``); ``hitrate`` adds its target and breakdown."""

    unit: str
    predicted: float | None
    measured: float | None
    measured_evidence: str | None
    measured_reason: str | None
    target: float | None = None
    target_basis: str = "none (live traffic)"
    block_aligned_target: float | None = None
    target_breakdown: Mapping[str, Any] | None = None
    """``hitrate`` only: the target's breakdown (written with ``target_minus_predicted_points``)."""

    @classmethod
    def of(cls, prediction: Prediction | None, found: Evidence | None,
           unit: str = "token (hit tokens / prompt tokens)") -> HitRates:
        return cls(unit, prediction.predicted_hit_rate if prediction else None, found.hit_rate if found else None,
                   found.hit_rate_evidence if found else None,
                   found.hit_rate_reason if found else "nothing was measured")

    @staticmethod
    def _points(a: float | None, b: float | None) -> float | None:
        return (a - b) * 100 if a is not None and b is not None else None

    @property
    def measured_minus_predicted_points(self) -> float | None:
        return self._points(self.measured, self.predicted)

    @property
    def target_minus_predicted_points(self) -> float | None:
        return self._points(self.target, self.predicted)

    def to_json(self) -> dict:
        out: dict[str, Any] = {"unit": self.unit, "target": self.target, "target_basis": self.target_basis,
               "block_aligned_target": self.block_aligned_target, "predicted": self.predicted,
               "measured": self.measured, "measured_evidence": self.measured_evidence,
               "measured_reason": self.measured_reason,
               "measured_minus_predicted_points": self.measured_minus_predicted_points}
        if self.target_breakdown is not None:
            out.update(target_minus_predicted_points=self.target_minus_predicted_points,
                       target_breakdown=dict(self.target_breakdown))
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> HitRates:
        return cls(data.get("unit") or "", data.get("predicted"), data.get("measured"), data.get("measured_evidence"),
                   data.get("measured_reason"), data.get("target"), data.get("target_basis") or "",
                   data.get("block_aligned_target"), data.get("target_breakdown"))


@dataclass(frozen=True)
class Speedup:
    """The hit-rate run's TTFT against a cache-off reference run, beside the bound 1 / (1 - h)
    (``decision.verdict.speedup``). The bound is ``ttft_speedup_bound`` here as in the paired summary; the
    ``hitrate`` file has always called it ``theoretical_prefill_speedup``."""

    ttft_speedup_bound: float | None
    definition: str
    measured_ttft_speedup: float | None
    reason: str | None = None
    """Why nothing was measured against a baseline (no ``--baseline``); ``None`` when one was given."""
    baseline_ttft_p50_ms: float | None = None
    ttft_p50_ms: float | None = None
    baseline_ttft_ms: Sequence[float] = ()
    baseline_workload_id: str | None = None
    warning: str | None = None

    def to_json(self) -> dict:
        out: dict[str, Any] = {"theoretical_prefill_speedup": self.ttft_speedup_bound, "definition": self.definition}
        if self.reason is not None:
            return out | {"measured_ttft_speedup": self.measured_ttft_speedup, "reason": self.reason}
        out.update(baseline_ttft_p50_ms=self.baseline_ttft_p50_ms, ttft_p50_ms=self.ttft_p50_ms,
                   baseline_ttft_ms=list(self.baseline_ttft_ms), measured_ttft_speedup=self.measured_ttft_speedup,
                   baseline_workload_id=self.baseline_workload_id)
        return out | ({"warning": self.warning} if self.warning is not None else {})

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Speedup | None:
        """A result's ``speedup`` section; ``None`` when the run has none (it failed before measuring)."""
        if not isinstance(data, Mapping):
            return None
        return cls(ttft_speedup_bound=data.get("theoretical_prefill_speedup"), definition=data.get("definition") or "",
                   measured_ttft_speedup=data.get("measured_ttft_speedup"), reason=data.get("reason"),
                   baseline_ttft_p50_ms=data.get("baseline_ttft_p50_ms"), ttft_p50_ms=data.get("ttft_p50_ms"),
                   baseline_ttft_ms=data.get("baseline_ttft_ms") or (),
                   baseline_workload_id=data.get("baseline_workload_id"), warning=data.get("warning"))


@dataclass(frozen=True)
class ChatTemplateNote(FlatRecord):
    """What ``--tokenizer``'s chat template would add to the token-id prompts (``workload.chat_template``): the
    tokenizer, its vocabulary against the workload's highest id, and the template's leading and trailing tokens
    with the explanation, or why they are unknown (no tokenizer, one that failed to load, no template, a template
    that failed to render). The tokenizer is always written; the other fields only when found, ``reason`` last."""

    tokenizer: str | None
    vocab_size: int | None = None
    highest_token_id: int | None = None
    sent_as: str | None = None
    chat_template: bool | None = None
    """Whether the tokenizer has a chat template (``None``: it was not loaded)."""
    leading_template_tokens: int | None = None
    trailing_template_tokens: int | None = None
    explanation: str | None = None
    reason: str | None = None

    def to_json(self) -> dict:
        found = super().to_json()
        return {"tokenizer": self.tokenizer, **{k: v for k, v in found.items() if k != "tokenizer" and v is not None}}
