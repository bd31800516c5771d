"""The G0 / G1 paired summary: both groups side by side, the overhead, the speed-up against its bound, every
G1-vs-G0 difference with its bootstrap interval (``confidence``), and the chapter's accept / tune / reject on
the measured numbers, never ``accept`` on a TTFT gain the data cannot tell from noise.

A group manifest with ``repeats`` (``g0g1 --repeats K``) is read as all of them: its TTFT / TPOT / E2E p50 are
over every request of every repeat; without ``repeats`` it is one run.

Why its own module: the G0 / G1 experiment and the course's GPU cell both end here, so the decision rules about
missing evidence (no hit rate -> ``tune``, never ``accept``) live in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ..core.errors import require_number
from ..core.group_records import GroupRecord, SideBySide, percentile
from ..core.interval_records import PairedInterval, bounds
from ..core.paired_records import Decision, Overhead, PairedSummary, ServerSignal, Thresholds
from ..core.replica_records import ClientRouting, ReplicaRow
from .chapter import DECISIONS
from .confidence import differences, group_values, p50 as pooled_p50, recommend_with_confidence
from .pairing import paired_differences
from .speedup import BOUND_DEFINITION, measured_speedup, speedup_bound

DEFAULT_MIN_HIT_RATE = 0.5
DEFAULT_MAX_OVERHEAD = 0.10
EVIDENCE_LEVEL = "real_backend"

OVERHEAD_DEFINITION = (
    "overhead = TPOT(group) / TPOT(G0) - 1: the relative decode slowdown against the cache-off baseline (G0's "
    "overhead is 0 by definition; positive means slower). Prefix caching can only shorten prefill, so the time per "
    "output token measures what keeping the cache costs the work it cannot speed up: block hashing, cache "
    "bookkeeping, eviction and memory pressure. TPOT is the server's own mean time per output token "
    "(vllm:request_time_per_output_token_seconds, engine clock) when both groups export it, otherwise the "
    "client's TPOT p50; overhead.source says which. The decision requires overhead_delta <= max_overhead."
)


@dataclass(frozen=True)
class GroupFacts:
    """The numbers the summary reads from one group manifest (all ``None`` for a group that did not run)."""

    ran: bool = False
    ok: bool = False
    name: str = "group"
    error: str | None = None
    ttft_p50_ms: float | None = None
    tpot_p50_ms: float | None = None
    e2e_p50_ms: float | None = None
    server_ttft_mean_ms: float | None = None
    server_tpot_mean_ms: float | None = None
    throughput_tokens_per_s: float | None = None
    error_count: int | None = None
    hit_rate: float | None = None
    hit_rate_evidence: str | None = None
    hit_rate_reason: str | None = None
    hit_tokens: int | None = None
    query_tokens: int | None = None
    predicted_hit_rate: float | None = None
    predicted_hit_tokens: int | None = None
    matches_measured: bool | None = None
    peak_memory_mib: float | None = None
    memory_source: str | None = None
    repeats: int = 0


def facts_of(manifest: Mapping | None) -> GroupFacts:
    """Read a group manifest once (``GroupRecord``); every missing section becomes ``None``, never 0."""
    if not manifest:
        return GroupFacts()
    record = GroupRecord.from_json(manifest)

    def p50(metric: str) -> float | None:
        if record.repeats:  # several runs of the group: the p50 of every request they served
            pooled = [v for rep in group_values(manifest, metric) for v in rep]
            return pooled_p50(pooled) if pooled else None
        return percentile(record.aggregates, metric)

    aggregates, prediction = record.aggregates, record.prediction
    return GroupFacts(
        ran=True, ok=record.status == "ok", name=record.name, error=record.error, ttft_p50_ms=p50("ttft_ms"),
        tpot_p50_ms=p50("tpot_ms"), e2e_p50_ms=p50("e2e_ms"), server_ttft_mean_ms=record.server_ttft_mean_ms,
        server_tpot_mean_ms=record.server_tpot_mean_ms,
        throughput_tokens_per_s=aggregates.throughput_tokens_per_s if aggregates else None,
        error_count=aggregates.error_count if aggregates else None, hit_rate=record.hit_rate,
        hit_rate_evidence=record.hit_rate_evidence, hit_rate_reason=record.hit_rate_reason,
        hit_tokens=record.hit_tokens, query_tokens=record.query_tokens,
        predicted_hit_rate=prediction.predicted_hit_rate, predicted_hit_tokens=prediction.predicted_hit_tokens,
        matches_measured=prediction.matches_measured, peak_memory_mib=record.peak_memory_mib,
        memory_source=record.memory_source, repeats=len(record.runs))


def overhead_of(g0: GroupFacts, g1: GroupFacts) -> Overhead:
    """G1's decode slowdown over G0, from the engine's clock when both groups have it, else the client's."""
    if g0.server_tpot_mean_ms and g1.server_tpot_mean_ms is not None:
        value, source = g1.server_tpot_mean_ms / g0.server_tpot_mean_ms - 1, "server_tpot_mean"
    elif g0.tpot_p50_ms and g1.tpot_p50_ms is not None:
        value, source = g1.tpot_p50_ms / g0.tpot_p50_ms - 1, "client_tpot_p50"
    else:
        value, source = None, None
    return Overhead(
        definition=OVERHEAD_DEFINITION, source=source, g0=0.0 if source else None, g1=value,
        client_tpot_p50_ratio=(g1.tpot_p50_ms / g0.tpot_p50_ms
                               if g0.tpot_p50_ms and g1.tpot_p50_ms is not None else None),
        server_tpot_mean_ratio=(g1.server_tpot_mean_ms / g0.server_tpot_mean_ms
                                if g0.server_tpot_mean_ms and g1.server_tpot_mean_ms is not None else None))


def side_by_side(g0: GroupFacts, g1: GroupFacts) -> SideBySide:
    """The measured numbers of both groups, G1's hit rate with its evidence, and the prediction beside it."""
    return SideBySide(
        g0_ttft_p50_ms=g0.ttft_p50_ms, g1_ttft_p50_ms=g1.ttft_p50_ms,
        g0_tpot_p50_ms=g0.tpot_p50_ms, g1_tpot_p50_ms=g1.tpot_p50_ms,
        g0_e2e_p50_ms=g0.e2e_p50_ms, g1_e2e_p50_ms=g1.e2e_p50_ms,
        g0_server_ttft_mean_ms=g0.server_ttft_mean_ms, g1_server_ttft_mean_ms=g1.server_ttft_mean_ms,
        g0_server_tpot_mean_ms=g0.server_tpot_mean_ms, g1_server_tpot_mean_ms=g1.server_tpot_mean_ms,
        g0_throughput_tokens_per_s=g0.throughput_tokens_per_s, g1_throughput_tokens_per_s=g1.throughput_tokens_per_s,
        g0_error_count=g0.error_count, g1_error_count=g1.error_count,
        hit_rate=g1.hit_rate, hit_rate_evidence=g1.hit_rate_evidence, hit_rate_reason=g1.hit_rate_reason,
        hit_rate_unit="token", hit_tokens=g1.hit_tokens, query_tokens=g1.query_tokens,
        g0_hit_rate=g0.hit_rate, g0_hit_rate_evidence=g0.hit_rate_evidence,
        predicted_hit_rate=g1.predicted_hit_rate, predicted_hit_tokens=g1.predicted_hit_tokens,
        prediction_matches_measured=g1.matches_measured,
        g0_peak_memory_mib=g0.peak_memory_mib, g1_peak_memory_mib=g1.peak_memory_mib,
        peak_memory_source=g1.memory_source,
        ttft_speedup=measured_speedup(g0.ttft_p50_ms, g1.ttft_p50_ms),
        server_ttft_speedup=measured_speedup(g0.server_ttft_mean_ms, g1.server_ttft_mean_ms),
        ttft_speedup_bound=speedup_bound(g1.hit_rate), ttft_speedup_bound_definition=BOUND_DEFINITION)


def routing_of(manifest: Mapping | None) -> dict | None:
    """G1's replicas (``g0g1 --replicas``): each one's measured and predicted hit rate, and what the block model
    says each routing policy would lose against the best on the same requests; ``None`` for one server."""
    if manifest is None:
        return None
    record = GroupRecord.from_json(manifest)
    if not record.replicas:
        return None
    routing = ClientRouting.from_json(record.routing)
    return {"replicas": len(record.replicas), "policy": routing.policy,
            "per_replica": [_replica_row(ReplicaRow.from_json(r)) for r in record.replicas if isinstance(r, Mapping)],
            "predicted_by_policy": dict(routing.predicted_by_policy),
            "predicted_lost_to_best": routing.predicted_lost_to_best,
            "measured_comparison": record.routing_comparison}


def _replica_row(replica: ReplicaRow) -> dict:
    prediction = replica.prediction
    return {"replica": replica.replica, "requests": replica.requests, "hit_rate": replica.evidence.hit_rate,
            "hit_rate_evidence": replica.evidence.hit_rate_evidence,
            "predicted_hit_rate": None if prediction is None else prediction.predicted_hit_rate,
            "prediction_matches_measured": None if prediction is None else prediction.matches_measured}


def summarize(g0: Mapping | None, g1: Mapping | None, *, min_hit_rate: float = DEFAULT_MIN_HIT_RATE,
              max_overhead: float = DEFAULT_MAX_OVERHEAD) -> PairedSummary:
    """Side by side numbers, the TTFT bound against the achieved speedup, and accept / tune / reject."""
    min_hit_rate = require_number("min_hit_rate", min_hit_rate, low=0.0, high=1.0)
    max_overhead = require_number("max_overhead", max_overhead, low=0.0)
    f0, f1 = facts_of(g0), facts_of(g1)
    paired = paired_differences(g0, g1)
    overhead = overhead_of(f0, f1)
    signal = server_signal(f0, f1, paired.ttft_gain_ms)
    decision = decide(f0, f1, overhead.g1, min_hit_rate, max_overhead, paired.ttft_gain_ms)
    if signal.agreement in ("disagree", "client_unsure") and decision.reason:
        decision = decision.with_note(signal.note)
    return PairedSummary(side=side_by_side(f0, f1), overhead=overhead,
                         thresholds=Thresholds(min_hit_rate, max_overhead), evidence_level=EVIDENCE_LEVEL,
                         repeats=(f0.repeats, f1.repeats), confidence=differences(g0, g1), paired=paired,
                         routing=routing_of(g1), server_ttft_signal=signal, decision=decision)


def paired_summary(g0: Mapping | None, g1: Mapping | None, *, min_hit_rate: float = DEFAULT_MIN_HIT_RATE,
                   max_overhead: float = DEFAULT_MAX_OVERHEAD) -> dict:
    """``summarize`` as the JSON a summary manifest holds (for a notebook, or anything that writes it)."""
    return summarize(g0, g1, min_hit_rate=min_hit_rate, max_overhead=max_overhead).to_json()


PAIRED_LABEL = "paired TTFT gain (mean of per-request G0 - G1)"
DECISION_BASIS = ("the decision's TTFT interval is the paired one (paired.ttft_gain_ms); confidence.* are the "
                  "unpaired intervals, kept for comparison")


def server_signal(g0: GroupFacts, g1: GroupFacts, client_gain: PairedInterval) -> ServerSignal:
    """The engine-clock TTFT (``vllm:time_to_first_token_seconds`` mean, which the client's machine load does not
    reach) as a second signal beside the client's paired gain: ``agree``, ``disagree`` (opposite signs),
    ``client_unsure`` (the engine shows a change the client's interval cannot tell from 0) or ``unknown``."""
    before, after = g0.server_ttft_mean_ms, g1.server_ttft_mean_ms
    server_gain = before - after if before is not None and after is not None else None

    def signal(agreement: str, note: str) -> ServerSignal:
        return ServerSignal(server_gain, client_gain.estimate, DECISION_BASIS, agreement, note)

    found = bounds(client_gain)
    if server_gain is None or found is None:
        return signal("unknown", "no engine-clock TTFT in both groups" if server_gain is None
                      else "no paired client interval")
    estimate, low, high = found
    client_sign = 1 if low > 0 else -1 if high < 0 else 0
    server_sign = (server_gain > 0) - (server_gain < 0)
    engine = f"the engine-clock TTFT mean goes {g0.server_ttft_mean_ms:.1f} -> {g1.server_ttft_mean_ms:.1f} ms"
    client = f"the client's paired TTFT gain is {estimate:+.2f} [{low:+.2f}, {high:+.2f}] ms"
    if client_sign == 0:
        agreement = "client_unsure" if server_sign else "agree"
    else:
        agreement = "agree" if client_sign == server_sign else "disagree"
    note = {"agree": f"client and engine agree: {client}, {engine}",
            "disagree": f"client and engine disagree: {client} but {engine}",
            "client_unsure": f"the engine sees a change the client cannot confirm: {engine}, {client} "
                             "(load on the client's side, or too few requests)"}[agreement]
    return signal(agreement, note)


def decide(g0: GroupFacts, g1: GroupFacts, overhead: float | None, min_hit_rate: float,
           max_overhead: float, ttft_gain: PairedInterval | None = None) -> Decision:
    """accept / tune / reject, or no decision when a group failed (the chapter's inputs and checks when it ran)."""
    failed = [f for f in (g0, g1) if not f.ok]
    if failed:
        reasons = ([f"{f.name}: {f.error or 'did not run'}" for f in failed] if any(f.ran for f in failed)
                   else ["a group did not run"])
        return Decision("failed", None, "no decision: " + "; ".join(reasons), "fix_the_failure_and_rerun")
    if g1.hit_rate is None:
        return Decision("ok", "tune", f"no backend hit-rate evidence ({g1.hit_rate_reason}); a TTFT change alone "
                        "does not show reuse", "collect_backend_hit_rate_evidence")
    if overhead is None or g0.ttft_p50_ms is None or g1.ttft_p50_ms is None:
        return Decision("ok", "tune", "TTFT or TPOT was not measured in both groups (the overhead needs >= 2 output "
                        "tokens)", "rerun_with_more_output_tokens")
    baseline = {"name": "g0", "hit_rate": g0.hit_rate if g0.hit_rate is not None else 0.0, "ttft_ms": g0.ttft_p50_ms,
                "overhead": 0.0, "hit_rate_unit": "token"}
    candidate = {"name": "g1", "hit_rate": g1.hit_rate, "ttft_ms": g1.ttft_p50_ms, "overhead": overhead,
                 "hit_rate_unit": "token"}
    verdict = recommend_with_confidence(baseline, candidate, min_hit_rate, max_overhead, ttft_gain, label=PAIRED_LABEL)
    assert verdict["next_action"] == DECISIONS[verdict["decision"]]
    inputs = {"baseline": baseline, "candidate": candidate,
              "baseline_hit_rate_basis": ("measured" if g0.hit_rate is not None else
                                          f"0 by construction: caching off in G0 ({g0.hit_rate_evidence})")}
    return Decision("ok", verdict["decision"], verdict["reason"], verdict["next_action"], inputs, verdict["checks"],
                    verdict["comparison"])
