"""Layer 6, evidence: the measured hit rate and where it comes from, or ``None`` and why. Never a guess.

Order of preference: the backend's Prometheus counter deltas (``backend_metrics``), then the per-request
``usage.prompt_tokens_details.cached_tokens`` (``per_request_usage``, only when every request reported it and
caching is on). With caching off the answer is ``not_applicable``: a cache that is never queried has no hit
rate, not a 0% one. Latency is never evidence of reuse.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping, Sequence

from .core.evidence_records import EngineRow, EvidenceAgreement
from .core.kv_event_records import KvEventCheck
from .core.live_records import CounterDelta, Evidence, Prediction, Usage
from .core.request_rows import RequestRow, rows_of
from .measure.metrics import COUNTERS

EVIDENCE_METRICS = "backend_metrics"
EVIDENCE_USAGE = "per_request_usage"
EVIDENCE_NOT_APPLICABLE = "not_applicable"
EVIDENCE_REQUIRED = "backend_metrics_or_logs_required"
"""``hit_rate_evidence`` values. The last one is the chapter's marker for "no evidence, do not guess"."""


def hit_rate_evidence(delta: CounterDelta | Mapping | None, *, caching_enabled: bool | None,
                      usage_cached_tokens: Sequence[int | None] = (),
                      usage_prompt_tokens: Sequence[int | None] = (), sent_prompt_tokens: int | None = None,
                      usage_dropped: Sequence[str] = ()) -> dict:
    """``measure_hit_rate`` as JSON (for callers that still read dicts)."""
    return measure_hit_rate(delta, caching_enabled=caching_enabled, usage_cached_tokens=usage_cached_tokens,
                            usage_prompt_tokens=usage_prompt_tokens, sent_prompt_tokens=sent_prompt_tokens,
                            usage_dropped=usage_dropped).to_json()


def measure_hit_rate(delta: CounterDelta | Mapping | None, *, caching_enabled: bool | None,
                     usage_cached_tokens: Sequence[int | None] = (),
                     usage_prompt_tokens: Sequence[int | None] = (), sent_prompt_tokens: int | None = None,
                     usage_dropped: Sequence[str] = ()) -> Evidence:
    """The measured hit rate and where it comes from, or ``None`` and why.

    Order of preference: the backend's counters (``backend_metrics``), then the per-request usage field
    (``per_request_usage``, only when every successful request reported it and caching is on). With caching
    off the answer is ``not_applicable``: a cache that is never queried has no hit rate, not a 0% one.
    ``sent_prompt_tokens``: what the phase sent, which no hit count can exceed; ``usage_dropped``: why requests'
    usage counts were dropped (``RequestResult.usage_reason``), said beside a missing rate.
    """
    usage = _usage_totals(usage_cached_tokens, usage_prompt_tokens)
    none = Evidence(None, EVIDENCE_REQUIRED, None, None, None, usage)
    counters = CounterDelta.of(delta)
    metrics_reason = _metrics_problem(counters) or _unfit_counters(counters, sent_prompt_tokens)
    if metrics_reason is None:
        hits, queries = counters.hits, counters.queries
        if queries is not None and queries > 0 and hits is not None:
            return replace(none, hit_rate=hits / queries, hit_rate_evidence=EVIDENCE_METRICS, hit_tokens=hits,
                           query_tokens=queries)
        metrics_reason = "the backend counted 0 prefix-cache queries (0/0 is no evidence, not a 0% hit rate)"
        if caching_enabled is False:
            return replace(none, hit_rate_evidence=EVIDENCE_NOT_APPLICABLE,
                           hit_rate_reason=f"prefix caching is off; {metrics_reason}")
    if caching_enabled is False:
        return replace(none, hit_rate_evidence=EVIDENCE_NOT_APPLICABLE,
                       hit_rate_reason=f"prefix caching is off; no backend counters either ({metrics_reason})")
    complete, cached = usage.complete, usage.cached_tokens or 0
    if complete and usage.prompt_tokens and cached > usage.prompt_tokens:
        complete = False  # the result keeps the usage as reported
        metrics_reason += (f"; per-request usage reports more cached tokens ({usage.cached_tokens}) "
                           f"than prompt tokens ({usage.prompt_tokens}), which cannot be")
    if caching_enabled and complete and usage.prompt_tokens:
        return replace(none, hit_rate=cached / usage.prompt_tokens, hit_rate_evidence=EVIDENCE_USAGE,
                       hit_tokens=usage.cached_tokens, query_tokens=usage.prompt_tokens,
                       hit_rate_reason=f"backend counters unusable ({metrics_reason}); "
                                       "hit tokens summed from per-request usage.cached_tokens")
    usage_note = ("" if complete or usage.reported == usage.requests else
                  f"; per-request usage reported cached_tokens for {usage.reported} of {usage.requests} requests")
    if usage_dropped:
        usage_note += f"; {len(usage_dropped)} requests' usage dropped as impossible (first: {usage_dropped[0]})"
    return replace(none, hit_rate_reason=f"{metrics_reason}{usage_note}")


def _metrics_problem(counters: CounterDelta) -> str | None:
    if counters.problems:
        return "; ".join(counters.problems)
    missing = [key for key in ("queries", "hits") if key not in counters.counted]
    if missing:
        names = " / ".join(COUNTERS[missing[0]])
        return f"the endpoint exposes no prefix-cache {missing[0]} counter ({names})"
    return None


def _unfit_counters(counters: CounterDelta, sent_prompt_tokens: int | None) -> str | None:
    """Counter deltas that cannot belong to the phase: more hit tokens than its prompts held in all."""
    hits = counters.hits
    if sent_prompt_tokens and hits is not None and hits > sent_prompt_tokens:
        return (f"the server counted {hits} prefix-cache hit tokens, more than the {sent_prompt_tokens} prompt "
                "tokens sent in the phase, so the counters do not fit it (another client, or a bad counter)")
    return None


def _usage_totals(cached: Sequence[int | None], prompt: Sequence[int | None]) -> Usage:
    reported = [(c, p) for c, p in zip(cached, prompt, strict=True) if c is not None and p is not None]
    return Usage(requests=len(cached), reported=len(reported), complete=bool(cached) and len(reported) == len(cached),
                 cached_tokens=sum(c for c, _ in reported) if reported else None,
                 prompt_tokens=sum(p for _, p in reported) if reported else None)


def unmeasured_hit_rate(why: str) -> dict:
    """The hit-rate fields of a group that measured nothing: null with the reason, never 0."""
    return {"hit_rate": None, "hit_rate_evidence": EVIDENCE_REQUIRED, "hit_rate_reason": why,
            "hit_tokens": None, "query_tokens": None, "hit_rate_unit": "token"}


def usage_check(found: Evidence, delta: CounterDelta | Mapping | None) -> dict:
    """Per-request cached tokens against the counter delta: two independent backend reports should agree.
    ``found``: the evidence ``evidence_of`` built (which always counts the rows' usage)."""
    usage = found.usage
    assert usage is not None, "evidence_of counts every row's usage"
    counters = CounterDelta.of(delta)
    counter = counters.hits if not counters.problems and "hits" in counters.counted else None
    matches = usage.cached_tokens == counter if usage.complete and counter is not None else None
    return {**usage.to_json(), "counter_hit_tokens": counter, "matches_counter_delta": matches}


def from_results(delta: CounterDelta | Mapping | None, results: Sequence, caching_enabled: bool | None, *,
                 fit_sent: bool = False) -> dict:
    """``evidence_of`` as JSON (for callers that still read dicts)."""
    return evidence_of(delta, results, caching_enabled, fit_sent=fit_sent).to_json()


def evidence_of(delta: CounterDelta | Mapping | None, results: Sequence, caching_enabled: bool | None, *,
                fit_sent: bool = False) -> Evidence:
    """The evidence for a phase's ``RequestResult`` rows: every request counts, so a failed one (which reported
    nothing) leaves the per-request usage incomplete. ``fit_sent``: the counters must fit what the rows sent (no
    more hit tokens than their prompts held), for a caller whose delta covers exactly these rows."""
    return measure_hit_rate(
        delta, caching_enabled=caching_enabled,
        usage_cached_tokens=[r.cached_tokens if r.status == "ok" else None for r in results],
        usage_prompt_tokens=[r.prompt_tokens if r.status == "ok" else None for r in results],
        sent_prompt_tokens=sum(r.sent_prompt_tokens for r in results) if fit_sent else None,
        usage_dropped=[f"{r.id}: {r.usage_reason}" for r in results if getattr(r, "usage_reason", None)])


IDLE_REPLICA = ("the placement sent this replica no request and its counters counted none: 0 hit tokens of 0 "
                "queried, no hit rate of its own (0/0); its zeros add nothing to the cluster's sums")


def replica_evidence(delta: CounterDelta | Mapping | None, results: Sequence, caching_enabled: bool | None, *,
                     served: int | None) -> Evidence:
    """One replica's evidence (``evidence_of`` over the requests placed on it; ``served``: how many, ``None`` when
    the placement is unknown). A replica the placement sent nothing, whose counters read 0 hits of 0 queries, is
    counted: 0/0 is no hit rate of its own, but its zeros are the cluster's share from it (a cluster's hit rate
    is its replicas' hit tokens over their queried tokens) and what its prediction of 0 is judged against."""
    found = evidence_of(delta, results, caching_enabled)
    counters = CounterDelta.of(delta)
    if served != 0 or found.hit_rate_evidence != EVIDENCE_REQUIRED or _metrics_problem(counters) \
            or counters.queries != 0 or counters.hits != 0:
        return found
    return replace(found, hit_rate_evidence=EVIDENCE_METRICS, hit_rate_reason=IDLE_REPLICA, hit_tokens=0,
                   query_tokens=0)


def engine_rows(delta: CounterDelta | Mapping | None, metrics: Sequence[dict]) -> list[EngineRow]:
    """One row per endpoint / engine (hit and query token deltas) and the sum; empty without counters."""
    counters = CounterDelta.of(delta).counters
    if "hits" not in counters or "queries" not in counters:
        return []
    hits, queries = counters["hits"].per_engine, counters["queries"].per_engine
    many = len(metrics) > 1
    rows = []
    for key in sorted(set(hits) | set(queries)):
        index, engine = key.split(":", 1) if many else ("0", key)
        label = metrics[int(index)]["label"]
        name = label if not engine else f"{label} engine {engine}"
        h, q = hits.get(key, 0), queries.get(key, 0)
        rows.append(EngineRow(name, h, q, _rate(h, q)))
    total_h, total_q = counters["hits"].total, counters["queries"].total
    rows.append(EngineRow("all", total_h, total_q, _rate(total_h, total_q)))
    return rows


def _rate(hits: float | None, queries: float | None) -> float | None:
    """hits / queries when both were counted, queries > 0 and the rate is possible (at most 1)."""
    if hits is None or not queries or hits > queries:
        return None
    return hits / queries


def agreement(prediction: Prediction, found: Evidence, rows: Sequence[RequestRow | Mapping],
              kv_events: KvEventCheck | None) -> EvidenceAgreement:
    """Which of the three sources agree with the prediction: the counters (total hit tokens), each request's
    ``cached_tokens``, and the KV-event replay. ``None`` where a source is missing, with the reason."""
    predicted = prediction.predicted_hit_tokens
    counters = None
    if found.hit_rate_evidence == EVIDENCE_METRICS and predicted is not None:
        counters = found.hit_tokens == predicted
    rows = rows_of(rows)
    reported = [r for r in rows if r.cached_tokens is not None and r.predicted_hit_tokens is not None]
    complete = bool(rows) and len(reported) == len(rows)
    differ = [r.id for r in reported if r.cached_tokens != r.predicted_hit_tokens]
    events = None if kv_events is None or kv_events.status not in ("agree", "diverged") \
        else kv_events.status == "agree"
    return EvidenceAgreement(
        counters=counters, cached_tokens=(not differ) if complete else None, kv_events=events,
        requests_that_differ=differ,
        reasons={"counters": None if counters is not None else "no backend counters, or no prediction",
                 "cached_tokens": None if complete else "some requests reported no cached_tokens or have no prediction",
                 "kv_events": None if events is not None else (kv_events.reason if kv_events is not None else None)
                 or "no KV events recorded"})
