"""The result records the project writes, as types, and one validating loader per schema.

The files stay plain JSON with the shapes and schema names they always had (``prefixbench.hitrate/1``,
``prefixbench.backend_group/1``, ``prefixbench.g0g1_summary/1``, and the live commands' ``prefixbench.sessions/1``,
``prefixbench.replay/1``, ``prefixbench.isolation/1``); these ``TypedDict``s say what each section holds (the
evidence, prediction and hit rates are the dataclasses of ``core.live_records``, written with ``to_json``), and
``load_*`` checks that a file is one of them before anything reads it, failing with one line that names the file
and the section. For the live results that is every field their reports read (``report.live``), so that
``prefixbench report`` renders them or says in one line what is wrong, never a traceback. A section that a run
could not produce (a run that failed before measuring has no ``summary``) may be absent or null; one that is
present must have the right type.
"""

from __future__ import annotations

import os
from typing import Any, TypedDict

from .errors import InputError
from .files import read_json

SCHEMA_HITRATE = "prefixbench.hitrate/1"
SCHEMA_GROUP = "prefixbench.backend_group/1"
SCHEMA_SUMMARY = "prefixbench.g0g1_summary/1"
SCHEMA_SESSIONS = "prefixbench.sessions/1"
SCHEMA_REPLAY = "prefixbench.replay/1"
SCHEMA_ISOLATION = "prefixbench.isolation/1"
SCHEMA_SWEEP = "prefixbench.sweep/1"
SCHEMA_PLAN = "prefixbench.plan/1"
STATUSES = ("running", "ok", "partial", "failed", "interrupted")
STATUSLESS = (SCHEMA_PLAN,)
"""Results of a computation, not of a run against a server: they have no status."""


class HitrateResult(TypedDict, total=False):
    """``prefixbench.hitrate/1``: one hit-rate run against a running server (``run.hitrate``)."""

    schema: str
    status: str
    error: str | None
    config: dict
    server: dict
    phases: dict
    timing: dict
    warnings: list[str]
    hit_rates: dict
    """``core.live_records.HitRates.to_json()``"""
    measured: dict
    """``core.live_records.Evidence.to_json()``"""
    prediction: dict
    """``core.live_records.Prediction.to_json()``"""
    verdict: dict
    """``decision.verdict.verdict`` (read back as ``core.live_results.Verdict``)"""
    summary: dict
    """``core.group_records.Aggregates.to_json()``"""
    speedup: dict
    """``core.live_records.Speedup.to_json()``"""
    engines: list[dict]
    requests: list[dict]


class GroupManifest(TypedDict, total=False):
    """``prefixbench.backend_group/1``: one G0 or G1 group, as ``core.group_records.GroupRunManifest`` writes it
    (the header, then the measured sections of ``GroupMeasurement`` or, on replicas, ``ClusterMeasurement``, then
    the outcome); ``GroupRecord.from_json`` reads it back for the decision and the reports."""

    schema: str
    project: str
    label: str
    status: str
    error: str | None
    started_at: str
    group: dict
    config: dict
    server: dict | None
    environment: dict
    quality: dict
    phases: dict
    """``warmup`` and ``reset_prefix_cache`` (on replicas: ``partial`` with each replica's outcome unless all were
    ok), as they happened."""
    replica_servers: list[dict]
    replicas: list[dict]
    """Replica runs: ``core.replica_records.ReplicaRow.to_json()`` per replica."""
    routing: dict
    backend_cache_config: dict | None
    backend_counters: dict | None
    hit_rate: float | None
    hit_rate_evidence: str
    hit_rate_reason: str | None
    hit_tokens: int | None
    query_tokens: int | None
    hit_rate_unit: str
    usage: dict
    prediction: dict
    """``core.live_records.Prediction.to_json()``"""
    memory: dict
    aggregates: dict
    """``core.group_records.Aggregates.to_json()``"""
    requests: list[dict]
    normalized_result: dict
    server_log_tail: str
    finished_at: str | None
    repeats: list[dict]
    """With ``--repeats``: every run, without the sections they share (``run.group.combine_repeats``)."""
    routing_comparison: dict


class G0G1Summary(TypedDict, total=False):
    """``prefixbench.g0g1_summary/1``: the experiment's summary (``run.g0g1``, ``decision.paired``)."""

    schema: str
    status: str
    config: dict
    groups: list[dict]
    paired_summary: dict


_SECTIONS: dict[str, dict[str, tuple[type, ...]]] = {
    # schema -> section -> allowed JSON types; "config" is required, the rest may be absent or null
    SCHEMA_HITRATE: {"config": (dict,), "server": (dict,), "phases": (dict,), "timing": (dict,),
                     "warnings": (list,), "hit_rates": (dict,), "measured": (dict,), "prediction": (dict,),
                     "verdict": (dict,), "summary": (dict,), "speedup": (dict,), "engines": (list,),
                     "requests": (list,), "replicas": (list,), "routing": (dict,), "chat_template": (dict,),
                     "evidence_agreement": (dict,), "kv_events": (dict,), "timeline": (dict,), "attribution": (dict,)},
    SCHEMA_GROUP: {"config": (dict,), "group": (dict,), "prediction": (dict,), "aggregates": (dict,),
                   "memory": (dict,), "backend_counters": (dict,), "requests": (list,),
                   "normalized_result": (dict,)},
    SCHEMA_SUMMARY: {"config": (dict,), "groups": (list,), "paired_summary": (dict,)},
}
_REQUIRED = {SCHEMA_HITRATE: ("config",), SCHEMA_GROUP: ("config",), SCHEMA_SUMMARY: ("config", "groups")}
_REQUIRED_CONFIG = {SCHEMA_HITRATE: ("model", "endpoint", "workload", "workload_id", "num_requests", "input_len",
                                     "prefix_len", "prefix_num", "concurrency", "request_rate", "prefill"),
                    SCHEMA_GROUP: (), SCHEMA_SUMMARY: ()}
_HITRATE_KEYS = {
    # list elements the report reads key by key: each must carry all of them
    "hit_rates.target_breakdown.steps[]": ("rule", "points", "explanation"),
    "verdict.latency_checks[]": ("check", "ok", "value"),
    "measured.usage": ("requests", "reported", "complete", "cached_tokens", "prompt_tokens"),
    "engines[]": ("engine", "hit_rate", "hit_tokens", "query_tokens"),
    "replicas[]": ("label",), "routing.prefix_spread": ("mean", "definition"),
    "attribution.summary": ("requests", "requests_that_differ", "difference_tokens", "by_cause", "lost_tokens"),
    "server.sglang_cache_hit_rate_gauge": ("value_after", "note"), "chat_template": ("tokenizer",),
}

_NUM = (int, float, type(None))
_INT = (int, type(None))
_STR = (str, type(None))
_BOOL = (bool, type(None))
_OBJ = (dict, type(None))
_LIST = (list, type(None))
_STATS = {"p50": _NUM, "p90": _NUM, "p99": _NUM, "mean": _NUM, "count": _INT}
_HITRATE_FIELDS: dict[str, tuple[type, ...]] = {
    # what the report, compare and history read from a hit-rate result; null is allowed everywhere (a run that
    # failed early has nothing to put there), a present value must have the type
    **{f"config.{k}": _STR for k in ("model", "endpoint", "workload", "workload_id")},
    **{f"config.{k}": _INT for k in ("num_requests", "input_len", "prefix_len", "prefix_num", "concurrency")},
    "config.request_rate": _NUM, "config.prefill": _BOOL,
    **{f"server.{k}": _STR for k in ("backend", "block_size_source")}, "server.block_size": _INT,
    "server.sglang_cache_hit_rate_gauge": _OBJ, "server.sglang_cache_hit_rate_gauge.value_after": _LIST,
    "server.sglang_cache_hit_rate_gauge.note": _STR,
    **{f"hit_rates.{k}": _NUM for k in ("target", "block_aligned_target", "predicted", "measured",
                                         "measured_minus_predicted_points", "target_minus_predicted_points")},
    "hit_rates.target_basis": _STR, "hit_rates.measured_reason": _STR, "hit_rates.measured_evidence": _STR,
    "hit_rates.target_breakdown": _OBJ, "hit_rates.target_breakdown.available": _BOOL,
    "hit_rates.target_breakdown.reason": _STR, "hit_rates.target_breakdown.steps": _LIST,
    "hit_rates.target_breakdown.steps[]": (dict,), "hit_rates.target_breakdown.steps[].rule": _STR,
    "hit_rates.target_breakdown.steps[].points": (int, float),
    "hit_rates.target_breakdown.steps[].explanation": _STR,
    "hit_rates.target_breakdown.expected_hit_rate": _NUM, "hit_rates.target_breakdown.target_hit_rate": _NUM,
    **{f"prediction.{k}": _INT for k in ("predicted_hit_tokens", "predicted_query_tokens", "difference_tokens",
                                          "in_phase_reuse_tokens")},
    "prediction.exact_expected": _BOOL, "prediction.caveats": _LIST, "prediction.caveats[]": (str,),
    "prediction.reason": _STR, "prediction.query_tokens_note": _STR,
    "measured.hit_tokens": _INT, "measured.query_tokens": _INT, "measured.hit_rate_evidence": _STR,
    "measured.usage": _OBJ, "measured.usage.complete": _BOOL,
    **{f"measured.usage.{k}": _INT for k in ("requests", "reported", "cached_tokens", "prompt_tokens")},
    "verdict.verdict": _STR, "verdict.rules": _STR, "verdict.reasons": _LIST, "verdict.reasons[]": (str,),
    "verdict.latency_checks": _LIST, "verdict.latency_checks[]": (dict,), "verdict.latency_checks[].check": _STR,
    "verdict.latency_checks[].ok": _BOOL, "verdict.latency_checks[].value": _NUM,
    **{f"summary.{k}": _OBJ for k in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms")},
    **{f"summary.{m}.{k}": t for m in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms") for k, t in _STATS.items()},
    **{f"summary.{k}": _INT for k in ("requests", "successful", "error_count")},
    "summary.throughput_tokens_per_s": _NUM,
    **{f"speedup.{k}": _NUM for k in ("theoretical_prefill_speedup", "measured_ttft_speedup",
                                       "baseline_ttft_p50_ms", "ttft_p50_ms")},
    "speedup.reason": _STR, "speedup.warning": _STR, "speedup.baseline_ttft_ms": _LIST,
    "speedup.baseline_ttft_ms[]": (int, float),
    "engines[]": (dict,), "engines[].engine": _STR, "engines[].hit_rate": _NUM, "engines[].hit_tokens": _NUM,
    "engines[].query_tokens": _NUM,
    **{f"timing.{k}": _NUM for k in ("setup_s", "prefill_s", "bench_s")},
    "phases.reset": _OBJ, "phases.reset.status": _STR,
    "chat_template": _OBJ, **{f"chat_template.{k}": _STR for k in ("explanation", "tokenizer", "reason")},
    "warnings[]": (str,), "requests[]": (dict,), "requests[].ttft_ms": _NUM,
    "finished_at": _STR, "error": _STR,
    # replicas (``run.replicas``): one row per replica and how the requests were placed
    "replicas[]": (dict,), "replicas[].label": _STR, "replicas[].requests": _INT, "replicas[].hit_rate": _NUM,
    "replicas[].hit_tokens": _INT, "replicas[].query_tokens": _INT, "replicas[].prediction": _OBJ,
    "replicas[].prediction.predicted_hit_tokens": _INT, "replicas[].prediction.matches_measured": _BOOL,
    "replicas[].prediction.reason": _STR,
    **{f"routing.{k}": _STR for k in ("mode", "policy", "router", "placement_reason", "best_policy", "model_note")},
    "routing.prefix_spread": _OBJ, "routing.prefix_spread.mean": (int, float), "routing.prefix_spread.definition": _STR,
    "routing.predicted_by_policy": _OBJ, "routing.predicted_by_policy{}": _NUM, "routing.predicted_single_pool": _NUM,
    "routing.measured_lost_to_best_policy": _NUM, "routing.measured_lost_to_single_pool": _NUM,
    # the evidence section: which sources agree (``core.evidence_records``), the KV events
    # (``core.kv_event_records``), the timeline replay (``core.timeline_records``)
    **{f"evidence_agreement.{k}": _BOOL for k in ("counters", "cached_tokens", "kv_events")},
    "evidence_agreement.requests_that_differ": _LIST, "evidence_agreement.requests_that_differ[]": (str,),
    "evidence_agreement.reasons": _OBJ,
    **{f"evidence_agreement.reasons.{k}": _STR for k in ("counters", "cached_tokens", "kv_events")},
    **{f"{at}.{k}": t for at in ("kv_events", "timeline.kv_events") for k, t in (
        ("status", _STR), ("reason", _STR), ("events_expected", _INT), ("events_seen", _INT),
        ("first_divergence", _OBJ), ("first_divergence.event", _INT), ("first_divergence.request", _STR),
        ("first_divergence.block", _INT), ("first_divergence.expected", _OBJ), ("first_divergence.seen", _OBJ),
        ("first_divergence.expected.kind", _STR), ("first_divergence.expected.block", _STR),
        ("first_divergence.seen.kind", _STR), ("first_divergence.seen.block", _STR))},
    "timeline.status": _STR, "timeline.reason": _STR, "timeline.requests_exact": _INT, "timeline.requests": _LIST,
    "timeline.unsettled": _OBJ, "timeline.unsettled{}": (list,), "timeline.kv_events": _OBJ,
    "timeline.requests[]": (dict,),
    "timeline.requests[].cached_tokens": _INT,
    **{f"timeline.{k}": _LIST for k in ("requests_that_differ", "differ_outside_range")},
    **{f"timeline.{k}[]": (str,) for k in ("requests_that_differ", "differ_outside_range")},
    "attribution.summary": _OBJ, "attribution.summary.by_cause": _OBJ, "attribution.summary.lost_tokens": _OBJ,
    "attribution.summary.by_cause{}": _INT,
    **{f"attribution.summary.{k}": _INT for k in ("requests", "requests_that_differ", "difference_tokens")},
    **{f"attribution.summary.lost_tokens.{k}": _INT for k in ("block_alignment", "last_token_rule", "eviction")},
}
_FIELDS = {SCHEMA_HITRATE: _HITRATE_FIELDS, SCHEMA_GROUP: {}, SCHEMA_SUMMARY: {}}
_RATES = {f"hit_rates.{k}" for k in ("target", "block_aligned_target", "predicted", "measured")} | {
    "engines[].hit_rate", "hit_rates.target_breakdown.expected_hit_rate", "hit_rates.target_breakdown.target_hit_rate",
    "replicas[].hit_rate", "routing.predicted_by_policy{}", "routing.predicted_single_pool"}
MAX_MAGNITUDE = 1e15
"""No count, latency or rate the project writes comes near this; a larger number in a result is damage."""

_LIVE_SECTIONS = {"config": (dict,), "server": (dict,), "phases": (dict,), "warnings": (list,), "hit_rates": (dict,),
                  "prediction": (dict,), "verdict": (dict,), "requests": (list,), "attribution": (dict,)}
_LIVE_FIELDS: dict[str, tuple[type, ...]] = {
    # what every live report reads (``report.live``: header, prediction, attribution, warnings)
    "error": _STR, "config.model": _STR, "config.endpoint": _STR, "server.backend": _STR,
    **{f"server.{k}": _INT for k in ("block_size", "num_blocks", "max_model_len")},
    "phases.reset": _OBJ, "phases.reset.status": _STR,
    "hit_rates.predicted": _NUM, "hit_rates.measured": _NUM, "hit_rates.measured_evidence": _STR,
    "hit_rates.measured_reason": _STR, "prediction.policy": _STR, "prediction.exact_expected": _BOOL,
    **{f"prediction.{k}": _INT for k in ("predicted_hit_tokens", "measured_hit_tokens", "difference_tokens")},
    "prediction.engine_model": _OBJ, "prediction.engine_model.used": _BOOL,
    "prediction.engine_model.vllm_version": _STR, "prediction.engine_model.reason": _STR,
    "prediction.caveats": _LIST, "prediction.caveats[]": (str,),
    "verdict.verdict": _STR, "verdict.reasons": _LIST, "verdict.reasons[]": (str,),
    "verdict.latency_checks": _LIST, "verdict.latency_checks[]": (dict,), "verdict.latency_checks[].check": _STR,
    "verdict.latency_checks[].ok": _BOOL, "verdict.latency_checks[].value": _NUM,
    "warnings[]": (str,), "requests[]": (dict,),
    "attribution.summary": _OBJ, "attribution.summary.by_cause": _OBJ, "attribution.summary.lost_tokens": _OBJ,
    **{f"attribution.summary.{k}": _INT for k in ("requests", "requests_that_differ", "difference_tokens")},
    **{f"attribution.summary.lost_tokens.{k}": _INT for k in ("block_alignment", "last_token_rule", "eviction")},
}
_LIVE_KEYS = {"attribution.summary": ("requests", "requests_that_differ", "difference_tokens", "by_cause",
                                      "lost_tokens"),
              "verdict.latency_checks[]": ("check", "ok", "value")}
_TURN_RATES = ("predicted_hit_rate", "cached_rate", "counter_hit_rate", "client_estimate_rate")
_SESSIONS_FIELDS = {
    **_LIVE_FIELDS, "config.kind": _STR, "prediction.requests_matching_cached_tokens": _INT,
    **{f"config.{k}": _INT for k in ("users", "turns", "system_prompt_len", "concurrency")},
    "requests[].turn": (int,), "requests[].user": (int,), "requests[].ttft_ms": (int, float),
    "requests[].status": (str,),  # what ``sessions --baseline`` reads of each request
    "per_turn[]": (dict,), **{f"per_turn[].{k}": _INT for k in ("turn", "requests", "prompt_tokens")},
    **{f"per_turn[].{k}": _NUM for k in (*_TURN_RATES, "ttft_ms_p50")},
    "baseline.per_turn": _LIST, "baseline.per_turn[]": (dict,), "baseline.per_turn[].turn": _INT,
    **{f"baseline.per_turn[].{k}": _NUM for k in ("g0_ttft_ms_p50", "g1_ttft_ms_p50", "speedup")},
    "baseline.warning": _STR,
}
_REPLAY_FIELDS = {
    **_LIVE_FIELDS, "config.speed": _NUM,
    **{f"config.{k}": _INT for k in ("num_requests", "block_tokens", "max_output_len", "concurrency")},
    "prediction.overlap_note": _STR, "prediction.predicted_evictions": _INT, "prediction.order_dependent_tokens": _INT,
    "trace_hit_rate.block_tokens": _INT, "trace_hit_rate.token_hit_rate": _NUM,
    "skipped.count": _INT, "skipped.reason": _STR, "skipped.context_tokens": _INT, "skipped.requests": _LIST,
    "skipped.requests[]": (dict,), "skipped.requests[].line": _STR,
    **{f"skipped.requests[].{k}": _INT for k in ("prompt_tokens", "output_tokens")},
}
_ISOLATION_FIELDS = {
    **_LIVE_FIELDS, "isolation.verdict": _STR, "isolation.reasons": _LIST, "isolation.reasons[]": (str,),
    "prediction.requests_matching": _INT,
    **{f"requests[].{k}": _STR for k in ("phase", "label", "cache_salt")}, "requests[].may_hit": _BOOL,
    **{f"requests[].{k}": _INT for k in ("cached_tokens", "counter_hit_tokens", "predicted_hit_tokens")},
    **{f"cost.{k}_cost_points": _NUM for k in ("predicted", "measured")}, "cost.salted": _OBJ, "cost.unsalted": _OBJ,
    **{f"cost.{p}.{k}": t for p in ("salted", "unsalted")
       for k, t in (("requests", _INT), ("predicted_hit_rate", _NUM), ("measured_hit_rate", _NUM))},
}
_RATES |= {*(f"per_turn[].{k}" for k in _TURN_RATES), "trace_hit_rate.token_hit_rate",
           *(f"cost.{p}.{k}_hit_rate" for p in ("salted", "unsalted") for k in ("predicted", "measured"))}

_SECTIONS.update({
    SCHEMA_SESSIONS: {**_LIVE_SECTIONS, "per_turn": (list,), "baseline": (dict,)},
    SCHEMA_REPLAY: {**_LIVE_SECTIONS, "trace_hit_rate": (dict,), "skipped": (dict,)},
    SCHEMA_ISOLATION: {**_LIVE_SECTIONS, "isolation": (dict,), "cost": (dict,)},
})
_REQUIRED.update({SCHEMA_SESSIONS: ("config", "requests"), SCHEMA_REPLAY: ("config",), SCHEMA_ISOLATION: ("config",)})
_REQUIRED_CONFIG.update({SCHEMA_SESSIONS: (), SCHEMA_REPLAY: (), SCHEMA_ISOLATION: ()})
_FIELDS.update({SCHEMA_SESSIONS: _SESSIONS_FIELDS, SCHEMA_REPLAY: _REPLAY_FIELDS, SCHEMA_ISOLATION: _ISOLATION_FIELDS})
_REQUIRED_KEYS = {
    SCHEMA_HITRATE: _HITRATE_KEYS,
    SCHEMA_SESSIONS: {**_LIVE_KEYS, "per_turn[]": ("turn", "requests", "prompt_tokens", *_TURN_RATES, "ttft_ms_p50"),
                      "baseline.per_turn[]": ("turn", "g0_ttft_ms_p50", "g1_ttft_ms_p50", "speedup")},
    SCHEMA_REPLAY: {**_LIVE_KEYS, "skipped.requests[]": ("line", "prompt_tokens", "output_tokens")},
    SCHEMA_ISOLATION: {**_LIVE_KEYS, "requests[]": ("phase", "label", "cache_salt", "may_hit", "cached_tokens",
                                                    "counter_hit_tokens", "predicted_hit_tokens"),
                       "cost": ("salted", "unsalted")},
}

_SPREAD = ("request_throughput_over_repeats", "ttft_p90_ms_over_repeats", "goodput_over_repeats")
_SWEEP_FIELDS: dict[str, tuple[type, ...]] = {
    # what the sweep's Markdown, table and plot read (``report.sweep``, through ``core.sweep_records``)
    "points[]": (dict,), "points[].load": _OBJ, "points[].load.kind": _STR, "points[].load.value": _NUM,
    **{f"points[].{g}": _OBJ for g in ("g0", "g1")}, **{f"points[].{g}.metrics": _OBJ for g in ("g0", "g1")},
    **{f"points[].{g}.metrics.{k}": _NUM for g in ("g0", "g1")
       for k in ("request_throughput_per_s", "goodput_per_s")},
    **{f"points[].{g}.metrics.ttft_ms": _OBJ for g in ("g0", "g1")},
    **{f"points[].{g}.metrics.ttft_ms.p90": _NUM for g in ("g0", "g1")},
    **{f"points[].{g}.metrics.{k}": _OBJ for g in ("g0", "g1") for k in _SPREAD},
    **{f"points[].{g}.metrics.{k}.{m}": _NUM for g in ("g0", "g1") for k in _SPREAD for m in ("mean", "min", "max")},
    **{f"points[].{g}.hit_rate": _NUM for g in ("g0", "g1")},
    "points[].comparison": _OBJ, "points[].comparison.ttft_p50_gain_ms": _OBJ,
    **{f"points[].comparison.ttft_p50_gain_ms.{k}": _NUM for k in ("estimate", "ci_low", "ci_high")},
    "headline.status": _STR, "headline.reason": _STR,
    **{f"headline.{k}": _NUM for k in ("attainment_required", "ttft_slo_ms", "tpot_slo_ms", "capacity_gain",
                                        "goodput_ratio_at_g1_limit")},
    **{f"headline.{g}": _OBJ for g in ("g0", "g1")}, **{f"headline.{g}.load": _OBJ for g in ("g0", "g1")},
    **{f"headline.{g}.load.kind": _STR for g in ("g0", "g1")},
    **{f"headline.{g}.{k}": _NUM for g in ("g0", "g1") for k in ("load.value", "goodput_per_s")},
}
_SECTIONS[SCHEMA_SWEEP] = {"config": (dict,), "points": (list,), "headline": (dict,), "previous": (dict,)}
_REQUIRED[SCHEMA_SWEEP] = ("config", "points")
_REQUIRED_CONFIG[SCHEMA_SWEEP] = ("model", "num_prompts", "repeats")
_FIELDS[SCHEMA_SWEEP] = _SWEEP_FIELDS
_RATES |= {"points[].g0.hit_rate", "points[].g1.hit_rate"}

_INTERVAL = ("estimate", "ci_low", "ci_high")
_SUMMARY_FIELDS: dict[str, tuple[type, ...]] = {
    # what the G0 / G1 report formats as numbers (``report.tables.g0g1_rows``, through ``core.paired_records``)
    "paired_summary.confidence": _OBJ, "paired_summary.confidence.level": _NUM,
    **{f"paired_summary.confidence.{d}": _OBJ for d in ("ttft_p50_gain_ms", "tpot_p50_gain_ms",
                                                        "throughput_gain_tokens_per_s")},
    **{f"paired_summary.confidence.{d}.{k}": _NUM for d in ("ttft_p50_gain_ms", "tpot_p50_gain_ms",
                                                            "throughput_gain_tokens_per_s") for k in _INTERVAL},
    "paired_summary.paired": _OBJ, "paired_summary.paired.level": _NUM,
    **{f"paired_summary.paired.{d}": _OBJ for d in ("ttft_gain_ms", "tpot_gain_ms", "e2e_gain_ms")},
    **{f"paired_summary.paired.{d}.{k}": _NUM for d in ("ttft_gain_ms", "tpot_gain_ms", "e2e_gain_ms")
       for k in (*_INTERVAL, "p_value", "unpaired_ci_width", "spread_removed")},
}
_FIELDS[SCHEMA_SUMMARY] = _SUMMARY_FIELDS

_POOL = {"num_blocks": _INT, "gib": _NUM, "hit_rate": _NUM, "evictions": _INT}
_PLAN_FIELDS: dict[str, tuple[type, ...]] = {
    # what the plan's Markdown, table and plot read (``report.plan``)
    **{k: _INT for k in ("requests", "prompt_tokens", "block_size", "min_blocks", "no_eviction_blocks")},
    "max_hit_rate": _NUM, "target_hit_rate": _NUM, "memory_gib": _NUM, "plan_reason": _STR, "kv_memory_reason": _STR,
    "source.name": _STR, "engine_model.vllm_version": _STR, "engine_model.order": _STR,
    **{f"kv_memory.{k}": _INT for k in ("bytes_per_token", "layers", "kv_heads", "kv_heads_per_gpu", "head_dim",
                                         "tensor_parallel_size")},
    **{f"kv_memory.{k}": _STR for k in ("source", "dtype", "attention")},
    "curve[]": (dict,), **{f"curve[].{k}": t for k, t in _POOL.items()},
    **{f"cliff.{k}": _INT for k in ("num_blocks", "below")}, "cliff.hit_rate_above": _NUM, "cliff.hit_rate_below": _NUM,
    "plan.planned": _OBJ, **{f"plan.planned.{k}": t for k, t in _POOL.items()},
    "plan.one_block_less": _OBJ, **{f"plan.one_block_less.{k}": t for k, t in _POOL.items()},
    "reverse.num_blocks": _INT, "reverse.hit_rate": _NUM, "reverse.reason": _STR,
}
_SECTIONS[SCHEMA_PLAN] = {"source": (dict,), "engine_model": (dict,), "kv_memory": (dict,), "plan": (dict,),
                          "reverse": (dict,), "cliff": (dict,), "curve": (list,)}
_REQUIRED[SCHEMA_PLAN] = ("source", "engine_model", "curve")
_REQUIRED_CONFIG[SCHEMA_PLAN] = ()
_FIELDS[SCHEMA_PLAN] = _PLAN_FIELDS
_REQUIRED_KEYS[SCHEMA_PLAN] = {"curve[]": tuple(_POOL), "cliff": ("num_blocks", "below", "hit_rate_above",
                                                                 "hit_rate_below"),
                               "plan.planned": tuple(_POOL), "plan.one_block_less": ("num_blocks", "hit_rate"),
                               "reverse": ("num_blocks", "hit_rate", "reason")}
_RATES |= {"max_hit_rate", "target_hit_rate", "curve[].hit_rate", "cliff.hit_rate_above", "cliff.hit_rate_below",
           "plan.planned.hit_rate", "plan.one_block_less.hit_rate", "reverse.hit_rate"}

_NAMES = {SCHEMA_HITRATE: "hit-rate result", SCHEMA_GROUP: "G0 / G1 group manifest",
          SCHEMA_SUMMARY: "G0 / G1 summary", SCHEMA_SESSIONS: "sessions result", SCHEMA_REPLAY: "replay result",
          SCHEMA_ISOLATION: "isolation result", SCHEMA_SWEEP: "load sweep", SCHEMA_PLAN: "capacity plan"}


def _read_json(path: str | os.PathLike) -> Any:
    return read_json(path)


def validate(data: Any, schema: str, where: str) -> dict:
    """``data`` if it is a record of ``schema`` with well-typed sections, else one ``InputError``."""
    if not isinstance(data, dict) or data.get("schema") != schema:
        raise InputError(where, f"not a {_NAMES[schema]} (schema {schema})")
    if schema not in STATUSLESS and data.get("status") not in STATUSES:
        raise InputError(f"{where}.status", f"must be one of {', '.join(STATUSES)}, got {data.get('status')!r}")
    for section in _REQUIRED[schema]:
        if data.get(section) is None:
            raise InputError(f"{where}.{section}", "is missing")
    for section, types in _SECTIONS[schema].items():
        value = data.get(section)
        if value is not None and not isinstance(value, types):
            expected = {"dict": "object", "list": "array"}[types[0].__name__]
            raise InputError(f"{where}.{section}", f"must be a JSON {expected}, got {type(value).__name__}")
    for key in _REQUIRED_CONFIG[schema]:
        if key not in data["config"]:
            raise InputError(f"{where}.config.{key}", "is missing")
    for path, types in _FIELDS[schema].items():
        _check_field(data, path, types, where)
    for path, keys in _REQUIRED_KEYS.get(schema, {}).items():
        for name, element in _values_at(data, path):
            missing = [k for k in keys if k not in element]
            if missing:
                raise InputError(f"{where}.{name}", f"is missing {', '.join(missing)}")
    return data


def _check_field(data: dict, path: str, types: tuple[type, ...], where: str) -> None:
    """Every value at ``path`` (``a.b``, ``a[].b``: each element of list ``a``) has one of ``types``."""
    for name, value in _values_at(data, path):
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            allowed = " or ".join(sorted({_JSON_TYPES[t] for t in types}))
            raise InputError(f"{where}.{name}", f"must be {allowed}, got {type(value).__name__} {str(value)[:40]!r}")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            low, high = (0.0, 1.0) if path in _RATES else (-MAX_MAGNITUDE, MAX_MAGNITUDE)
            if not low <= value <= high:
                raise InputError(f"{where}.{name}", f"must be in [{low:g}, {high:g}], got {value!r}")


def _values_at(data: dict, path: str) -> list[tuple[str, Any]]:
    """``(name, value)`` of every non-null value at ``path``; ``[]`` steps into each element of a list, ``{}``
    into each value of an object."""
    values: list[tuple[str, Any]] = [("", data)]
    for part in path.split("."):
        each = part[-2:] if part[-2:] in ("[]", "{}") else ""
        key = part[:-2] if each else part
        nxt = []
        for name, value in values:
            if not isinstance(value, dict) or value.get(key) is None:
                continue  # absent or null: allowed (checked by the section rules above where it matters)
            child, child_name = value[key], f"{name}.{key}" if name else key
            if each == "[]" and isinstance(child, list):
                nxt += [(f"{child_name}[{i}]", item) for i, item in enumerate(child)]
            elif each == "{}" and isinstance(child, dict):
                nxt += [(f"{child_name}.{k}", item) for k, item in child.items() if item is not None]
            elif not each:
                nxt.append((child_name, child))
        values = nxt
    return values


_JSON_TYPES = {int: "a number", float: "a number", str: "a string", bool: "true or false", dict: "an object",
               list: "an array", type(None): "null"}


def load_hitrate_result(path: str | os.PathLike) -> HitrateResult:
    return validate(_read_json(path), SCHEMA_HITRATE, str(path))  # type: ignore[return-value]


def load_group_manifest(path: str | os.PathLike) -> GroupManifest:
    return validate(_read_json(path), SCHEMA_GROUP, str(path))  # type: ignore[return-value]


def load_g0g1_summary(path: str | os.PathLike) -> G0G1Summary:
    return validate(_read_json(path), SCHEMA_SUMMARY, str(path))  # type: ignore[return-value]


def load_sessions_result(path: str | os.PathLike) -> dict:
    """A ``prefixbench.sessions/1`` result (``sessions --baseline``, ``report``): typed turn, user and TTFT per
    request, and what its report reads."""
    return validate(_read_json(path), SCHEMA_SESSIONS, str(path))


def load_result(path: str | os.PathLike, schemas: tuple[str, ...]) -> dict:
    """A result of any of ``schemas``, told apart by its ``schema`` field and validated as that one; anything else
    is one ``InputError`` naming the file, what it holds and what would have been accepted."""
    data, where = _read_json(path), str(path)
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema not in schemas:
        accepted = ", ".join(f"{_NAMES[s]} ({s})" for s in schemas)
        raise InputError(where, f"schema {str(schema)[:60]!r} is none of: {accepted}")
    return validate(data, schema, where)
