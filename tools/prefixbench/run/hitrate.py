"""The hit-rate mode against any running OpenAI-compatible server: is prefix caching actually working?

Phases, each a function below: probe the server (models, metrics, block size); optionally reset its cache
(vLLM ``/reset_prefix_cache``, SGLang ``/flush_cache``); prefill each distinct prefix; snapshot its Prometheus
counters; send the measured requests (token ids, a progress bar); snapshot again. Then three hit rates side by
side:

- **target**: what was asked (``--hit-rate``, or prefix length / input length), with the block-aligned value a
  correct cache can reach and the rules (whole blocks, last token, cold prefixes) that separate the two
  (``simulate.targets``);
- **predicted**: ``simulate.predict`` on the exact token ids sent, in the order sent, with the server's block
  size and capacity, the prefill simulated first and left out of the counts;
- **measured**: the server's counter deltas (``evidence``), per engine / endpoint and summed.

With ``kv_events`` (an address the server's KV-event publisher connects to) a third source joins the counters and
per-request ``cached_tokens``: the blocks the engine cached and evicted, replayed against the engine model
(``simulate.block_events``); ``evidence_agreement`` says which of the three agree with the prediction.

The phases, the evidence, the prediction and the attribution are the live-run engine's (``run.live``), as for
``sessions``, ``replay`` and ``isolation``; this module adds the workload (prefixes, then the measured requests)
and its report section: the target breakdown, per-engine rows, latency, speed-up, the routing record of
replicas and the verdict (``decision.verdict``). The result (schema ``prefixbench.hitrate/1``) is returned; the
CLI writes it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Sequence

from .. import evidence
from ..core.bounds import DEFAULT_DEADLINE_S, DEFAULT_REQUEST_TIMEOUT_S
from ..core.live_records import Evidence, HitRates, Prediction
from ..core.live_results import LiveRunResult, Verdict
from ..core.records import SCHEMA_HITRATE
from ..decision.verdict import VERDICT_RULES, speedup, verdict
from ..measure import client, metrics as prom
from ..simulate.targets import target_breakdown
from ..workload.chat_template import chat_template_note
from ..workload.hitrate import HitrateWorkload
from . import live as lv
from .replicas import ROUTER_PAUSE_NOTE, Replicas, placement_of, with_replicas


@dataclass(frozen=True)
class HitrateOptions:
    """What one hit-rate run is asked to do, beside where the server is: the parameter object its steps read."""

    workload: HitrateWorkload
    concurrency: int | None
    request_rate: float | None
    reset_cache: bool
    prefill: bool
    block_size: int | None = None
    tokenizer: str | None = None
    ttft_slo_ms: float | None = None
    tpot_slo_ms: float | None = None
    deadline_s: float | None = DEFAULT_DEADLINE_S
    kv_blocks: int | None = None
    kv_events: str | None = None
    replicas: Replicas | None = None
    twin: str | None = None
    """``vllm``: the timeline's arrivals replayed through vLLM's own scheduler in-process as well."""

    @property
    def sequential(self) -> bool:
        return self.concurrency == 1 and self.request_rate is None

    def config(self) -> dict:
        """The result's ``config`` section (``run.live.start`` adds the server's part)."""
        workload, requests, replicas = self.workload, self.workload.requests, self.replicas
        return {"tokenizer": self.tokenizer, "num_requests": len(requests), "input_len": workload.input_len,
                "prefix_len": workload.prefix_len, "prefix_num": workload.prefix_num,
                "output_len": sorted({r["max_tokens"] for r in requests}), "concurrency": self.concurrency,
                "request_rate": self.request_rate, "reset_cache": self.reset_cache, "prefill": self.prefill,
                "block_size_flag": self.block_size, "workload": workload.source,
                "workload_id": workload.workload_id, "ttft_slo_ms": self.ttft_slo_ms,
                "tpot_slo_ms": self.tpot_slo_ms, "api": "/v1/completions with token-id prompts",
                "deadline_s": self.deadline_s, "kv_blocks": self.kv_blocks, "kv_events": self.kv_events,
                "replicas": None if replicas is None else {
                    "mode": replicas.mode, "routing": replicas.routing, "labels": replicas.labels,
                    "endpoints": replicas.base_urls, "router": replicas.router_url}}


def run_hitrate(*, endpoint: str, model: str, metrics: Sequence[dict], baseline: Mapping | None = None,
                progress: bool = True, request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S,
                on_update: Callable[[dict], None] | None = None, log: Callable[[str], None] = lambda _: None,
                **options: Any) -> LiveRunResult:
    """Run every phase and return the result (``on_update`` gets its JSON while running, e.g. to write it).

    ``options`` are ``HitrateOptions``' fields: ``kv_blocks``, the pool size the server was started with
    (``--num-gpu-blocks-override``), checked against what it publishes and against the workload before any
    request; ``kv_events``, the address to receive its KV events on; ``replicas``, several servers, placed by
    the client or by a router (``metrics`` is then theirs). Never raises for a server problem: a failure or
    Ctrl-C ends in a result with ``status`` failed / partial / interrupted and what was measured up to then.
    """
    opts = HitrateOptions(**options)
    run = lv.start(SCHEMA_HITRATE, endpoint=endpoint, model=model, metrics=metrics, config=opts.config(),
                   on_update=on_update, timeout_s=request_timeout_s, deadline_s=opts.deadline_s,
                   kv_blocks=opts.kv_blocks, replicas=opts.replicas, kv_events=opts.kv_events)
    requests = opts.workload.requests
    run.twin = opts.twin

    def phases() -> None:
        run.result.put(chat_template=chat_template_note(opts.tokenizer, requests))
        lv.probe(run, opts.block_size, fits=_sizes(opts.workload))
        run.result.timing["setup_s"] = time.perf_counter() - run.started
        lv.reset(run, opts.reset_cache, log)
        lv.prefill(run, opts.workload.prefixes if opts.prefill else [], requests)
        if not run.prefill_requests:
            run.result.phases["prefill"] = {"requests": 0, "reason": "--no-prefill" if not opts.prefill
                                               else "no shared prefix"}
        lv.measure(run, lambda: lv.send(run, client.request_specs(requests), request_rate=opts.request_rate,
                                        concurrency=opts.concurrency or len(requests),
                                        progress="hitrate" if progress else None)[1])

    lv.finish(run, lv.guarded(run, phases))
    if run.phase_started is None:
        return _unmeasured(run, opts)
    _assemble(run, opts, lv.Sent(client.server_order(run.collected),
                                 {r["id"]: r["prompt_token_ids"] for r in requests}, opts.sequential), baseline)
    return run.result


def _sizes(workload: HitrateWorkload) -> list[tuple[int, int, str]]:
    """Every request's (prompt tokens, output tokens, id), the prefill's included, for the pool check."""
    sizes = [(len(r["prompt_token_ids"]), r["max_tokens"], r["id"]) for r in workload.requests]
    return sizes + [(len(p), lv.PREFILL_MAX_TOKENS, f"prefill{i}") for i, p in enumerate(workload.prefixes)]


def _unmeasured(run: lv.Live, opts: HitrateOptions) -> LiveRunResult:
    result = run.result
    result.put(hit_rates=hit_rates(opts.workload, result.server, None, None, opts.prefill), requests=[],
               verdict=Verdict("UNKNOWN", [result.error or "nothing measured"], rules=VERDICT_RULES))
    return result


def _assemble(run: lv.Live, opts: HitrateOptions, sent: lv.Sent, baseline: Mapping | None) -> None:
    """Evidence, prediction, hit rates, engines, latency, rows and the verdict of a run whose measured phase
    began."""
    result, ordered, workload = run.result, sent.ordered, opts.workload
    found, delta = lv.measured(run, run.collected)
    result.put(backend_counters=delta, measured=found)
    prediction, per_id, replay = lv.predict(run, sent, found, delta)
    events = lv.kv_events(run, replay, ordered, prediction)
    rates = hit_rates(workload, result.server, prediction, found, opts.prefill)
    summary = client.aggregates(run.collected, result.timing.get("bench_s") or 0.0)
    gain = speedup(found.hit_rate, summary, baseline, workload.workload_id)
    result.put(prediction=prediction, kv_events=events, hit_rates=rates,
               engines=evidence.engine_rows(delta, result.config["metrics_endpoints"]), summary=summary, speedup=gain)
    _note_sglang_gauge(result.server, run.after or [])
    result.server["server_timing_ms"] = delta.to_json()["server_timing_ms"] if delta is not None else None
    by_id = {r["id"]: r for r in workload.requests}
    rows = lv.request_rows(ordered, per_id, {i: {"prefix_group": r.get("prefix_group")} for i, r in by_id.items()})
    if run.replicas is not None:
        rows = with_replicas(run.replicas, rows, len(workload.requests))
    result.put(requests=rows)
    if run.replicas is not None:
        placement = placement_of(run.replicas, result.server, rows, run.prefill_requests, workload.requests,
                                 found.hit_rate, run.replica_rows)
        result.put(routing=placement)
        if run.replicas.mode == "router" and placement.placement is not None:
            run.warn(ROUTER_PAUSE_NOTE)
    checked = None if events is None else events.check
    result.put(evidence_agreement=evidence.agreement(prediction, found, rows, checked),
               attribution=lv.attribution(run, sent, rows, delta))
    section = lv.timeline(run, sent)
    if section is not None:
        result.put(timeline=section)
    result.put(verdict=verdict(rates, summary, gain, ttft_slo_ms=opts.ttft_slo_ms, tpot_slo_ms=opts.tpot_slo_ms))


def _note_sglang_gauge(server: dict, after: Sequence) -> None:
    gauge = prom.gauge_values(after, prom.SGLANG_LAST_BATCH_GAUGE)
    if server["backend"] == "sglang" or gauge:
        server["sglang_cache_hit_rate_gauge"] = {
            "value_after": gauge,
            "note": "sglang:cache_hit_rate covers the most recent batch only; it is shown, never used as the "
                    "run's hit rate (that is the counter delta above)"}


def hit_rates(workload: HitrateWorkload, server: Mapping, prediction: Prediction | None, found: Evidence | None,
              prefill: bool) -> HitRates:
    """Target, block-aligned target, predicted and measured side by side, with the target's breakdown
    (``server``: the result's server section, for the block size)."""
    size = server.get("block_size")
    breakdown = target_breakdown(target=workload.target_hit_rate if workload.generated else None,
                                 prefix_len=workload.prefix_len, input_len=workload.input_len,
                                 block_size=size, prefill=prefill and bool(workload.prefixes),
                                 prefix_num=workload.prefix_num, num_requests=len(workload.requests))
    return replace(HitRates.of(prediction, found), unit="token (hit tokens / prompt tokens of the measured phase)",
                   target=workload.target_hit_rate, target_basis=workload.target_basis,
                   block_aligned_target=breakdown.get("expected_hit_rate"), target_breakdown=breakdown)


