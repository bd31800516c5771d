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

The verdict is ``decision.verdict``. The result (schema ``prefixbench.hitrate/1``) is returned; the CLI writes it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from .. import evidence
from ..core.bounds import DEFAULT_DEADLINE_S, DEFAULT_REQUEST_TIMEOUT_S
from ..core.errors import InputError
from ..core.provenance import environment_snapshot, now
from ..core.records import SCHEMA_HITRATE
from ..decision.verdict import VERDICT_RULES, speedup, verdict
from ..measure import client, metrics as prom
from ..cache.engine_pool import rules_for
from ..measure.endpoints import base_url_of, check_model, server_version
from ..measure.kv_events import REPORT_HITS_BODY, KvEventRecorder
from ..serve.control import reset_any_prefix_cache
from ..simulate.attribution import attribute
from ..simulate.block_events import compare_block_events
from ..simulate.pool_size import check_pool_fits
from ..simulate.predict import RunConditions, judge, predict_with_replay, unpredicted
from ..simulate.targets import target_breakdown
from ..workload.chat_template import chat_template_note
from . import hitrate_replicas as fleet
from .routed import cluster_prediction

PREFILL_MAX_TOKENS = 1
"""A prefill request generates one token: its prompt's full blocks are cached, its output never is."""

TOKEN_IDS_BODY = client.TOKEN_IDS_BODY


@dataclass
class HitrateRun:
    """The state of one run while its phases go: the result being built and what was measured so far."""

    base_url: str
    model: str
    workload: Mapping
    urls: list[str]
    result: dict
    on_update: Callable[[dict], None] | None = None
    collected: list = field(default_factory=list)
    prefill_requests: list = field(default_factory=list)
    prefill_results: list = field(default_factory=list)
    before: list | None = None
    after: list | None = None
    phase_started: float | None = None
    kv_blocks: int | None = None
    recorder: KvEventRecorder | None = None
    replicas: fleet.Replicas | None = None
    """Several replicas (``run.hitrate_replicas``): where each request goes, and each one's counters."""
    requests_end: float | None = None
    """``time.monotonic()`` when the deadline cuts the requests still running (None: no deadline)."""
    ends_at: float | None = None
    """The deadline plus one request timeout: nothing (no scrape, no wait) runs past it."""
    scrape_s: float = prom.SCRAPE_TIMEOUT_S

    def enter(self, phase: str) -> None:
        self.result["phase"] = phase
        if self.on_update is not None:
            self.on_update(self.result)

    def limit(self, deadline_s: float | None, request_timeout_s: float) -> None:
        """Start the clock: ``--deadline`` bounds the whole run (probe, prefill, measured phase, every scrape);
        the last scrape after the requests were cut gets one request timeout more."""
        limits = prom.scrape_limits(request_timeout_s, deadline_s)
        self.scrape_s, self.ends_at = limits["scrape_timeout_s"], limits["ends_at"]
        self.requests_end = None if self.ends_at is None else self.ends_at - request_timeout_s

    def left(self, cap_s: float | None = None) -> float | None:
        """Seconds until the requests' deadline (>= 0, at most ``cap_s``); None without a deadline or cap."""
        if self.requests_end is None:
            return cap_s
        return max(0.0, prom.time_left(cap_s if cap_s is not None else float("inf"), self.requests_end))

    def scrape(self, settle: bool = False) -> list:
        """The counters now (``settle``: once two scrapes agree), each scrape within the run's limits."""
        if settle:
            return prom.settled_snapshot(self.urls, timeout_s=10.0, scrape_timeout_s=self.scrape_s,
                                         ends_at=self.ends_at)
        return prom.snapshot(self.urls, self.scrape_s, self.ends_at)


def run_hitrate(*, endpoint: str, model: str, workload: dict, concurrency: int | None, request_rate: float | None,
                metrics: Sequence[dict], reset_cache: bool, prefill: bool, block_size: int | None = None,
                tokenizer: str | None = None, ttft_slo_ms: float | None = None, tpot_slo_ms: float | None = None,
                baseline: Mapping | None = None, progress: bool = True,
                request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S, deadline_s: float | None = DEFAULT_DEADLINE_S,
                kv_blocks: int | None = None, kv_events: str | None = None, replicas: fleet.Replicas | None = None,
                on_update: Callable[[dict], None] | None = None, log: Callable[[str], None] = lambda _: None) -> dict:
    """Run every phase and return the result (``on_update`` gets it while running, e.g. to write it).

    ``kv_blocks``: the pool size the server was started with (``--num-gpu-blocks-override``), checked against
    what it publishes and against the workload before any request. ``kv_events``: the address to receive its KV
    events on. ``replicas``: several servers, placed by the client or by a router (``metrics`` is then theirs).
    Never raises for a server problem: a failure or Ctrl-C ends in a result with ``status`` failed /
    partial / interrupted and what was measured up to then.
    """
    base_url = base_url_of(endpoint)
    started = time.perf_counter()
    result = _new_result(endpoint, base_url, model, tokenizer, workload, concurrency, request_rate, reset_cache,
                         prefill, block_size, metrics, ttft_slo_ms, tpot_slo_ms)
    result["config"].update(request_timeout_s=request_timeout_s, deadline_s=deadline_s, kv_blocks=kv_blocks,
                            kv_events=kv_events, replicas=None if replicas is None else {
                                "mode": replicas.mode, "routing": replicas.routing, "labels": replicas.labels,
                                "endpoints": replicas.base_urls, "router": replicas.router_url})
    run = HitrateRun(base_url, model, workload, [m["url"] for m in metrics], result, on_update, kv_blocks=kv_blocks,
                     replicas=replicas)
    run.limit(deadline_s, request_timeout_s)
    try:
        run.recorder = _start_recorder(kv_events)
        _probe(run, tokenizer, block_size)
        result["timing"]["setup_s"] = time.perf_counter() - started
        _reset(run, reset_cache, log)
        _prefill(run, prefill)
        _measure(run, concurrency, request_rate, progress)
        status = "ok"
    except KeyboardInterrupt:
        status = "interrupted"
        result["error"] = f"interrupted during {result.get('phase', 'setup')}"
        _stop_measuring(run)
    except InputError:
        raise
    except Exception as exc:  # the server refused, died or answered nonsense: a result, not a crash
        status = "failed"
        result["error"] = f"{type(exc).__name__}: {exc}"
        _stop_measuring(run, timed=False)
    finally:
        if run.recorder is not None:
            run.recorder.stop()
    result["environment"] = environment_snapshot()
    result["timing"]["total_s"] = time.perf_counter() - started
    if run.phase_started is None:
        return _unmeasured(run, status, prefill)
    _assemble(run, status, concurrency, request_rate, len(metrics), prefill, baseline)
    result["verdict"] = verdict(result, ttft_slo_ms=ttft_slo_ms, tpot_slo_ms=tpot_slo_ms)
    result["finished_at"] = now()
    return result


def _new_result(endpoint, base_url, model, tokenizer, workload, concurrency, request_rate, reset_cache, prefill,
                block_size, metrics, ttft_slo_ms, tpot_slo_ms) -> dict:
    requests = workload["requests"]
    return {
        "schema": SCHEMA_HITRATE, "status": "running", "error": None, "started_at": now(),
        "config": {"endpoint": endpoint, "base_url": base_url, "model": model, "tokenizer": tokenizer,
                   "num_requests": len(requests), "input_len": workload["input_len"],
                   "prefix_len": workload["prefix_len"], "prefix_num": workload["prefix_num"],
                   "output_len": sorted({r["max_tokens"] for r in requests}),
                   "concurrency": concurrency, "request_rate": request_rate, "reset_cache": reset_cache,
                   "prefill": prefill, "block_size_flag": block_size, "metrics_endpoints": list(metrics),
                   "workload": workload["source"], "workload_id": workload["workload_id"],
                   "ttft_slo_ms": ttft_slo_ms, "tpot_slo_ms": tpot_slo_ms,
                   "api": "/v1/completions with token-id prompts"},
        "warnings": [], "phases": {}, "timing": {},
    }


def _probe(run: HitrateRun, tokenizer: str | None, block_size: int | None) -> None:
    """The model is served, the metrics answer, the block size is known (or why not)."""
    result, warnings = run.result, run.result["warnings"]
    result["chat_template"] = chat_template_note(tokenizer, run.workload["requests"])
    for url in _served_urls(run):
        preflight = check_model(url, run.model, timeout_s=run.left(run.scrape_s) or 0.001)
        result["phases"]["preflight"] = preflight
        if not preflight["reachable"]:
            raise ConnectionError(preflight["detail"])
    probe = run.scrape()
    cache_info = prom.cache_config(probe)
    if run.replicas is not None:
        cache_info = fleet.replica_cache_configs(run.replicas, probe, result)
    size, size_source, size_warning = prom.block_size_of(cache_info, block_size)
    backend = prom.detect_backend(probe)
    result["server"] = {"backend": backend, "cache_config": cache_info, "block_size": size,
                        "block_size_source": size_source, "metrics_errors": [s.error for s in probe if not s.ok],
                        "vllm_version": server_version(run.base_url, run.left(min(5.0, run.scrape_s)) or 0.001)
                        if backend == "vllm" else None}
    if size_warning:
        warnings.append(size_warning)
    for s in probe:
        if not s.ok:
            warnings.append(f"metrics: {s.error}; the measured hit rate needs the server's counters")
    _check_pool(run, size)
    _connect_events(run)


def _served_urls(run: HitrateRun) -> list[str]:
    """Where the model must be served: the endpoint, or every replica the client places requests on."""
    if run.replicas is not None and run.replicas.mode == "client":
        return list(run.replicas.base_urls)
    return [run.base_url]


def _check_pool(run: HitrateRun, block_size: int | None) -> None:
    """``--kv-blocks`` against what the server publishes, and every request against the pool, before any request:
    a request that cannot fit would be refused or preempted forever."""
    server = run.result["server"]
    published = (server["cache_config"] or {}).get("num_blocks")
    if run.kv_blocks is not None and published is not None and published != run.kv_blocks:
        raise InputError("--kv-blocks", f"the server reports num_gpu_blocks={published}, not {run.kv_blocks}: "
                         "start it with --num-gpu-blocks-override " + str(run.kv_blocks) + " or drop --kv-blocks")
    server["num_blocks"] = published if published is not None else run.kv_blocks
    server["num_blocks_source"] = ("server (vllm:cache_config_info num_gpu_blocks)" if published is not None
                                   else "--kv-blocks (the server does not publish its pool size)"
                                   if run.kv_blocks is not None else None)
    if block_size and server["num_blocks"]:
        sizes = [(len(r["prompt_token_ids"]), r["max_tokens"], r["id"]) for r in run.workload["requests"]]
        sizes += [(len(p), PREFILL_MAX_TOKENS, f"prefill{i}") for i, p in enumerate(run.workload["prefixes"])]
        check_pool_fits(sizes, block_size, server["num_blocks"],
                        flag="--kv-blocks" if run.kv_blocks is not None else "the server's num_gpu_blocks")


def _start_recorder(address: str | None) -> KvEventRecorder | None:
    return KvEventRecorder(address).start() if address else None


def _connect_events(run: HitrateRun) -> None:
    if run.recorder is not None and not run.recorder.wait_connected(run.left(10.0)):
        run.result["warnings"].append(f"no KV-event publisher connected to {run.recorder.endpoint} within 10 s: "
                                      "start vLLM with --kv-events-config pointing at it")


def _reset(run: HitrateRun, reset_cache: bool, log: Callable[[str], None]) -> None:
    phases = run.result["phases"]
    if not reset_cache:
        phases["reset"] = {"status": "skipped"}
        return
    phases["reset"] = reset = (reset_any_prefix_cache(run.base_url) if run.replicas is None
                               else fleet.reset_replicas(run.replicas, reset_any_prefix_cache))
    if reset["status"] != "ok":
        run.result["warnings"].append(
            f"cache reset {reset['status']} ({reset['detail']}): the baseline may not be clean; earlier traffic "
            "still in the cache can raise the measured hit rate")
        log(f"warning: {run.result['warnings'][-1]}")


def _prefill(run: HitrateRun, prefill: bool) -> None:
    """One request per distinct prefix, so the measured phase starts with every prefix cached."""
    phases, timing = run.result["phases"], run.result["timing"]
    run.prefill_requests = [{"id": f"prefill{i}", "prompt_token_ids": p, "max_tokens": PREFILL_MAX_TOKENS}
                            for i, p in enumerate(run.workload["prefixes"])] if prefill else []
    if run.replicas is not None and run.replicas.mode == "client":  # the prefill and the measured phase, placed
        server = run.result["server"]
        fleet.plan_client_placement(run.replicas, run.prefill_requests, run.workload["requests"],
                                    server["block_size"] or 16, server.get("num_blocks"))
    if not run.prefill_requests:
        phases["prefill"] = {"requests": 0, "reason": "--no-prefill" if not prefill else "no shared prefix"}
        return
    run.enter("prefill")
    started = time.perf_counter()
    results, _ = client.send(_targets(run, "prefill"), run.model, client.request_specs(run.prefill_requests),
                             timeout_s=run.result["config"]["request_timeout_s"], deadline_s=run.left(),
                             extra_body=_extra_body(run), after_each=_observer(run, "prefill", False))
    run.prefill_results = client.server_order(results)
    failed = [r for r in results if r.status != "ok"]
    phases["prefill"] = {"requests": len(run.prefill_requests), "errors": len(failed),
                         "prefix_tokens": [len(p["prompt_token_ids"]) for p in run.prefill_requests]}
    timing["prefill_s"] = time.perf_counter() - started
    if failed:
        if len(failed) == len(results):
            raise ConnectionError(f"every prefill request failed (first: {failed[0].error})")
        run.result["warnings"].append(f"{len(failed)} prefill requests failed: their prefixes start cold")


def _targets(run: HitrateRun, phase: str) -> str | list[str]:
    """The endpoint, or (replicas) the router or each request's replica."""
    return run.base_url if run.replicas is None else fleet.targets(run.replicas, phase)


def _observer(run: HitrateRun, phase: str, concurrent: bool):
    return None if run.replicas is None else fleet.observer(run.replicas, phase, concurrent)


def _measure(run: HitrateRun, concurrency: int | None, request_rate: float | None, progress: bool) -> None:
    requests = run.workload["requests"]
    urls = _targets(run, "measure")
    run.before = run.scrape()
    run.enter("measure")
    run.phase_started = time.perf_counter()
    config = run.result["config"]
    concurrent = request_rate is not None or (concurrency or len(requests)) > 1
    _, duration = client.send(urls, run.model, client.request_specs(requests),
                              concurrency=concurrency if concurrency else len(requests), request_rate=request_rate,
                              progress="hitrate" if progress else None, collected=run.collected,
                              timeout_s=config["request_timeout_s"], deadline_s=run.left(),
                              extra_body=_extra_body(run), after_each=_observer(run, "measure", concurrent))
    _name_the_deadline(run.collected, config["deadline_s"])
    run.result["timing"]["bench_s"] = duration
    run.after = run.scrape(settle=True)
    if run.recorder is not None:
        run.recorder.settle(timeout_s=max(0.0, prom.time_left(5.0, run.ends_at)))


CUT = "not finished when the deadline of"
"""How ``measure.client`` begins the error of a request the deadline cut."""


def _name_the_deadline(results: Sequence, deadline_s: float | None) -> None:
    """The client was given what was left of the run's deadline; its rows name the deadline the user gave."""
    for r in results:
        if deadline_s is not None and (r.error or "").startswith(CUT):
            r.error = f"{CUT} {deadline_s:g} s passed (--deadline counts from the start of the run)"


def _extra_body(run: HitrateRun) -> dict | None:
    """vLLM streams the generated token ids when asked (and, with KV events on, publishes its hits); other
    servers are sent the plain OpenAI body."""
    if run.result["server"].get("backend") != "vllm":
        return None
    return {**TOKEN_IDS_BODY, **REPORT_HITS_BODY} if run.recorder is not None else TOKEN_IDS_BODY


def _stop_measuring(run: HitrateRun, timed: bool = True) -> None:
    """After an interrupt or a failure: one last snapshot of what the measured phase did, if it began."""
    if run.phase_started is None:
        return
    run.after = run.scrape()
    if timed:
        run.result["timing"]["bench_s"] = time.perf_counter() - run.phase_started


def _unmeasured(run: HitrateRun, status: str, prefill: bool) -> dict:
    result = run.result
    result.update(status=status, finished_at=now())
    result["hit_rates"] = hit_rates(run.workload, result, None, None, prefill)
    result["verdict"] = {"verdict": "UNKNOWN", "reasons": [result["error"] or "nothing measured"],
                         "rules": VERDICT_RULES}
    result["requests"] = []
    return result


def _assemble(run: HitrateRun, status: str, concurrency, request_rate, endpoints: int, prefill: bool,
              baseline: Mapping | None) -> None:
    """Evidence, prediction, hit rates, engines, latency and rows of a run whose measured phase began."""
    result, results, requests = run.result, run.collected, run.workload["requests"]
    aggregates = client.aggregate(results, result["timing"].get("bench_s") or 0.0)
    delta = prom.diff(run.before, run.after) if run.after is not None else None
    found = evidence.from_results(delta, results, (result["server"]["cache_config"] or {}).get("enable_prefix_caching"))
    if status == "interrupted":
        found = _interrupted_evidence(found, results)
    failure = client.failure_summary(results)
    if status == "ok" and failure:
        status = "failed" if aggregates["error_count"] == len(requests) else "partial"
        result["error"] = failure
    result["status"] = status
    result["backend_counters"] = delta
    result["measured"] = {k: found[k] for k in ("hit_rate", "hit_rate_evidence", "hit_rate_reason",
                                                  "hit_tokens", "query_tokens", "usage")}
    ordered = client.server_order(results)
    prediction, per_id, replay = _predict(run, ordered, found, delta, aggregates, concurrency, request_rate,
                                          endpoints)
    result["prediction"] = prediction
    result["kv_events"] = _kv_events(run, replay, ordered)
    result["hit_rates"] = hit_rates(run.workload, result, prediction, found, prefill)
    result["engines"] = evidence.engine_rows(delta, result["config"]["metrics_endpoints"])
    _note_sglang_gauge(result, run.after or [])
    result["summary"] = aggregates
    result["server"]["server_timing_ms"] = (delta or {}).get("server_timing_ms")
    result["speedup"] = speedup(result, baseline)
    by_id = {r["id"]: r for r in requests}
    result["requests"] = [{**r.row(), "prefix_group": by_id[r.id].get("prefix_group"),
                           "predicted_hit_tokens": per_id.get(r.id)} for r in ordered]
    if run.replicas is not None:
        fleet.add_placement(run.replicas, result, run.prefill_requests, requests, found["hit_rate"])
        if run.replicas.mode == "router" and result["routing"]["placement"] is not None:
            result["warnings"].append(fleet.ROUTER_PAUSE_NOTE)
    result["evidence_agreement"] = evidence.agreement(prediction, found, result["requests"], result["kv_events"])
    result["attribution"] = _attribution(run, result, delta)


def _attribution(run: HitrateRun, result: dict, delta) -> dict | None:
    """Why each request hit what it did and, where the server differs from the prediction, the likely cause."""
    size = result["server"]["block_size"]
    if not size:
        return None
    by_id = {r["id"]: r for r in run.workload["requests"]}
    preemptions = ((delta or {}).get("counters", {}).get("preemptions") or {}).get("total")
    return attribute([by_id[r["id"]]["prompt_token_ids"] for r in result["requests"]], result["requests"], size,
                     earlier=[p["prompt_token_ids"] for p in run.prefill_requests], preemptions=preemptions)


def _kv_events(run: HitrateRun, replay, ordered) -> dict | None:
    """The KV-event replay against the engine model, or why there is none (null: no events were asked for)."""
    recorder = run.recorder
    if recorder is None:
        return None
    base = {"endpoint": recorder.endpoint, "errors": recorder.errors[:5]}
    if replay is None:
        reason = (run.result.get("prediction") or {}).get("engine_model", {}).get("reason") or "no prediction"
        return {**base, "status": "not_comparable", "reason": f"the engine model did not run: {reason}",
                "first_divergence": None}
    names = [r["id"] for r in run.prefill_requests] + [r.id for r in ordered]
    reset = run.result["phases"].get("reset", {}).get("status") == "ok"
    return {**base, **compare_block_events(recorder.batches, replay, names, gaps=recorder.gaps, reset=reset)}


def _interrupted_evidence(found: dict, results: Sequence) -> dict:
    """After an interrupt the counters may include work of cancelled requests: with no finished request they
    describe nothing the rows show, so the measured rate is null; otherwise it stands, with the warning."""
    if not any(r.status == "ok" for r in results):
        return {**found, "hit_rate": None, "hit_rate_evidence": evidence.EVIDENCE_REQUIRED, "hit_tokens": None,
                "query_tokens": None,
                "hit_rate_reason": "interrupted before any request finished: the counters only saw cancelled work"}
    return {**found, "hit_rate_reason": ("interrupted: requests still in flight were cancelled, so the counters "
                                         "may include work the rows do not show; " + (found["hit_rate_reason"] or ""))}


def _predict(run: HitrateRun, ordered, found, delta, aggregates, concurrency, request_rate,
             endpoints: int) -> tuple[dict, dict, object]:
    """The judged prediction, each request's predicted hit tokens (by id), and the engine model's replay."""
    result = run.result
    size = result["server"]["block_size"]
    if not size:
        return unpredicted("the server's block size is unknown (it publishes no vllm:cache_config_info): pass "
                           "--block-size (SGLang: its page size, default 1)"), {}, None
    if run.replicas is not None:
        return _predict_replicas(run, ordered, aggregates, concurrency, request_rate, found["hit_tokens"])
    cache_info = result["server"]["cache_config"] or {}
    conditions = _conditions(run, aggregates["error_count"], concurrency, request_rate, cache_info, delta,
                             max(endpoints, cache_info.get("engines") or 1), result["phases"].get("reset", {}))
    prediction, per_id, replay = _predict_pool(run, ordered, run.prefill_requests, run.prefill_results,
                                               result["server"].get("num_blocks"), concurrency, request_rate)
    return judge(prediction, conditions, found["hit_tokens"], found["query_tokens"]), per_id, replay


def _conditions(run: HitrateRun, failed: int, concurrency, request_rate, cache_info: Mapping, delta, engines: int,
                reset: Mapping) -> RunConditions:
    return RunConditions(
        overlapping=request_rate is not None or (concurrency or 1) > 1, failed_requests=failed,
        unknown_earlier_traffic=reset.get("status") != "ok", caching_enabled=cache_info.get("enable_prefix_caching"),
        engines=engines, preemptions=((delta or {}).get("counters", {}).get("preemptions") or {}).get("total"),
        backend=run.result["server"].get("backend"), interrupted=run.result["status"] == "interrupted")


def _predict_pool(run: HitrateRun, ordered, earlier: Sequence[dict], earlier_results, num_blocks, concurrency,
                  request_rate) -> tuple[dict, dict, object]:
    """One pool's prediction (not judged yet) for ``ordered`` results after the ``earlier`` prefill requests."""
    by_id = {r["id"]: r for r in run.workload["requests"]}
    prediction, replay = predict_with_replay(
        [by_id[r.id]["prompt_token_ids"] for r in ordered], run.result["server"]["block_size"], num_blocks,
        [p["prompt_token_ids"] for p in earlier], outputs=[r.output_token_ids for r in ordered],
        warmup_outputs=[r.output_token_ids for r in earlier_results],
        sequential=concurrency == 1 and request_rate is None, record_events=run.recorder is not None,
        report_hits=run.recorder is not None)
    per_id = dict(zip((r.id for r in ordered), prediction.pop("per_request_hit_tokens")))
    if run.result["server"].get("backend") == "vllm":
        rules = rules_for(run.result["server"].get("vllm_version"))
        prediction["engine_model"].update(rules)
        if rules["note"] and prediction["engine_model"]["used"] and rules["note"] not in run.result["warnings"]:
            run.result["warnings"].append(rules["note"])
    return prediction, per_id, replay


def _predict_replicas(run: HitrateRun, ordered, aggregates, concurrency, request_rate,
                      measured_hits: int | None) -> tuple[dict, dict, None]:
    """One pool per replica, each fed the requests the placement sent it (prefill first), judged against that
    replica's own counters; the cluster's prediction is their sum."""
    replicas, per_id = run.replicas, {}
    rows = fleet.replica_rows(replicas, run.before, run.after, ordered)
    for row in rows:
        if row["prediction"] is not None:
            continue
        if not fleet.placement_known(replicas, len(run.workload["requests"])):
            row["prediction"] = unpredicted(replicas.placement_reason or "the placement was not observed")
            continue
        info = row["backend_cache_config"] or {}
        mine = [r for r in ordered if replicas.placement[r.index] == row["replica"]]
        earlier = [i for i, where in enumerate(replicas.prefill_placement) if where == row["replica"]]
        prediction, mine_ids, _ = _predict_pool(run, mine, [run.prefill_requests[i] for i in earlier],
                                                [run.prefill_results[i] for i in earlier], info.get("num_blocks"),
                                                concurrency, request_rate)
        per_id.update(mine_ids)
        conditions = _conditions(run, sum(r.status != "ok" for r in mine), concurrency, request_rate, info,
                                 row["backend_counters"], info.get("engines") or 1, row["reset"])
        row["prediction"] = judge(prediction, conditions, row["hit_tokens"], row["query_tokens"])
    run.result["replicas"] = rows
    return cluster_prediction(rows, measured_hits), per_id, None


def _note_sglang_gauge(result: dict, after: Sequence) -> None:
    gauge = prom.gauge_values(after, prom.SGLANG_LAST_BATCH_GAUGE)
    if result["server"]["backend"] == "sglang" or gauge:
        result["server"]["sglang_cache_hit_rate_gauge"] = {
            "value_after": gauge,
            "note": "sglang:cache_hit_rate covers the most recent batch only; it is shown, never used as the "
                    "run's hit rate (that is the counter delta above)"}


def hit_rates(workload: Mapping, result: Mapping, prediction: Mapping | None, found: Mapping | None,
              prefill: bool) -> dict:
    """Target, block-aligned target, predicted and measured side by side, with the target's breakdown."""
    size = (result.get("server") or {}).get("block_size")
    breakdown = target_breakdown(target=workload["target_hit_rate"] if workload["input_len"] else None,
                                 prefix_len=workload["prefix_len"], input_len=workload["input_len"],
                                 block_size=size, prefill=prefill and bool(workload["prefixes"]),
                                 prefix_num=workload["prefix_num"], num_requests=len(workload["requests"]))
    predicted = (prediction or {}).get("predicted_hit_rate")
    measured = (found or {}).get("hit_rate")
    return {
        "unit": "token (hit tokens / prompt tokens of the measured phase)",
        "target": workload["target_hit_rate"], "target_basis": workload["target_basis"],
        "block_aligned_target": breakdown.get("expected_hit_rate"),
        "predicted": predicted, "measured": measured,
        "measured_evidence": (found or {}).get("hit_rate_evidence"),
        "measured_reason": (found or {}).get("hit_rate_reason") if found else "nothing was measured",
        "measured_minus_predicted_points": (measured - predicted) * 100 if None not in (measured, predicted) else None,
        "target_minus_predicted_points": ((workload["target_hit_rate"] - predicted) * 100
                                          if None not in (workload["target_hit_rate"], predicted) else None),
        "target_breakdown": breakdown,
    }


