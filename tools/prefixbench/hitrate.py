"""Hit-rate benchmark against any running OpenAI-compatible server: is prefix caching actually working?

Phases: probe the server (models, metrics, block size); optionally reset its cache (vLLM ``/reset_prefix_cache``,
SGLang ``/flush_cache``); prefill each distinct prefix; snapshot its Prometheus counters; send the measured
requests (token ids, a progress bar); snapshot again. Three hit rates come out side by side:

- **target**: what was asked (``--hit-rate``, or prefix length / input length), with the block-aligned value a
  correct cache can reach and the rules (whole blocks, last token, cold prefixes) that separate the two;
- **predicted**: the library simulator on the exact token ids sent, in the order sent, with the server's block
  size and capacity, the prefill requests simulated first and left out of the counts (as the snapshot leaves
  them out);
- **measured**: the server's counter deltas (``metrics.hit_rate_evidence``), per engine / endpoint and summed.

The verdict compares measured with predicted (and latency with the limits given); see ``VERDICT_RULES``.
Backend modules are reused, not forked: ``client`` sends, ``metrics`` snapshots and diffs, ``server`` resets,
``experiment.predict_hits`` predicts.
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timezone
from typing import Callable, Mapping, Sequence

from .errors import InputError

SCHEMA = "prefixbench.hitrate/1"
PREFILL_MAX_TOKENS = 1
"""A prefill request generates one token: its prompt's full blocks are cached, its output never is."""

GOOD_GAP_POINTS = 1.0
MARGINAL_GAP_POINTS = 5.0
MARGINAL_ERROR_SHARE = 0.05
VERDICT_RULES = (
    f"GOOD: |measured - predicted| <= {GOOD_GAP_POINTS:g} point, no failed request, no latency check failed. "
    f"MARGINAL: |measured - predicted| <= {MARGINAL_GAP_POINTS:g} points and at most "
    f"{MARGINAL_ERROR_SHARE:.0%} of requests failed, or a GOOD hit rate whose latency slipped (TTFT / TPOT p50 "
    "above --ttft-slo-ms / --tpot-slo-ms, or with --baseline no TTFT gain although the prediction reuses >= 10% "
    f"of prompt tokens). POOR: a larger gap or more failures. UNKNOWN: the server gave no hit-rate evidence "
    "(no usable counters), so nothing can be judged. The reference is the prediction; without a known block "
    "size, the target."
)

STATUS_EXIT = {"ok": 0, "partial": 0, "failed": 2, "interrupted": 3}
"""Exit codes: 0 done (``partial`` means some requests failed: see the verdict), 2 nothing was measured
(every request failed or the server could not be reached), 3 interrupted (partial results written)."""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# ------------------------------------------------------------------------------------------------- inputs

def base_url_of(endpoint: str) -> str:
    """``http://host:8000/v1`` or ``.../v1/completions`` -> ``http://host:8000`` (the client adds the path)."""
    if not isinstance(endpoint, str) or not endpoint.startswith(("http://", "https://")):
        raise InputError("--endpoint", f"must be an http(s) URL, got {endpoint!r}")
    url = endpoint.rstrip("/")
    for suffix in ("/v1/chat/completions", "/v1/completions", "/v1"):
        if url.endswith(suffix):
            return url[: -len(suffix)]
    return url


def metrics_endpoints(values: Sequence[str] | None, base_url: str) -> list[dict]:
    """``[LABEL=]URL`` values to ``[{"label", "url"}]``; none given: the endpoint's own ``/metrics``."""
    if not values:
        return [{"label": "server", "url": base_url + "/metrics"}]
    out = []
    for i, value in enumerate(values):
        label, sep, url = value.partition("=")
        if not sep or label.startswith(("http://", "https://")):
            label, url = f"endpoint{i}" if len(values) > 1 else "server", value
        if not url.startswith(("http://", "https://")):
            raise InputError("--metrics-endpoint", f"must be [LABEL=]http(s)://..., got {value!r}")
        if any(e["label"] == label for e in out):
            raise InputError("--metrics-endpoint", f"label {label!r} is used twice")
        out.append({"label": label, "url": url})
    return out


def check_model(base_url: str, model: str) -> dict:
    """Ask ``/v1/models`` whether ``model`` is served: a wrong name is a bad argument, not a failed run."""
    import requests

    try:
        response = requests.get(base_url + "/v1/models", timeout=10)
    except requests.RequestException as exc:
        return {"reachable": False, "detail": f"cannot reach {base_url}: {type(exc).__name__}"}
    if response.status_code != 200:
        return {"reachable": True, "served_models": None, "detail": f"/v1/models answered HTTP {response.status_code}"}
    try:
        served = [m.get("id") for m in response.json().get("data", [])]
    except (ValueError, AttributeError):
        served = None
    if served and model not in served:
        raise InputError("--model", f"{base_url} serves {', '.join(map(str, served))}, not {model!r}")
    return {"reachable": True, "served_models": served, "detail": None}


def chat_template_note(tokenizer: str | None, requests: Sequence[dict]) -> dict:
    """With ``--tokenizer``: check the ids fit its vocabulary and say what a chat template would add.

    The benchmark sends token ids to ``/v1/completions``, so nothing is added; through a chat endpoint the
    template's leading tokens would shift every prefix (moving block boundaries) and its trailing tokens would
    lengthen every prompt. Those counts are approximate (the template is rendered as text, then tokenized).
    """
    if not tokenizer:
        return {"tokenizer": None, "reason": "no --tokenizer given; prompts are token ids sent as they are"}
    try:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(tokenizer)
    except Exception as exc:  # a wrong path or an offline hub id: the benchmark itself does not need it
        return {"tokenizer": tokenizer, "reason": f"could not load it: {type(exc).__name__}: {str(exc)[:200]}"}
    vocab = len(tok)
    highest = max(max(r["prompt_token_ids"]) for r in requests)
    if highest >= vocab:
        raise InputError("--tokenizer", f"the workload uses token id {highest}, beyond the vocabulary ({vocab})")
    note = {"tokenizer": tokenizer, "vocab_size": vocab, "highest_token_id": highest,
            "sent_as": "token ids to /v1/completions: no chat template, no re-tokenization"}
    if not getattr(tok, "chat_template", None):
        note.update(chat_template=False, reason="the tokenizer has no chat template")
        return note
    marker = "PREFIXBENCH_MARKER"
    try:
        text = tok.apply_chat_template([{"role": "user", "content": marker}], tokenize=False,
                                       add_generation_prompt=True)
    except Exception as exc:
        note.update(chat_template=True, reason=f"the template failed to render: {exc}")
        return note
    head, _, tail = text.partition(marker)
    lead = len(tok(head, add_special_tokens=False)["input_ids"])
    trail = len(tok(tail, add_special_tokens=False)["input_ids"])
    note.update(chat_template=True, leading_template_tokens=lead, trailing_template_tokens=trail,
                explanation=f"through /v1/chat/completions each prompt would gain about {lead} tokens before it "
                            f"and {trail} after; the leading ones shift every shared prefix by {lead} tokens, "
                            "which moves the block boundaries (and are themselves shared, so they add hits)")
    return note


# ---------------------------------------------------------------------------------------------- phases

def _send(base_url: str, model: str, requests: Sequence[dict], *, concurrency: int, request_rate: float | None,
          progress: str | None, collected: list) -> tuple[list, float]:
    """``client.send_requests_async`` with each finished result appended to ``collected`` as it ends, so an
    interrupt still leaves the finished rows."""
    from .client import request_specs, send_requests_async

    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(requests), desc=progress, unit="req", leave=False)

    def done(result) -> None:
        collected.append(result)
        if bar is not None:
            bar.update(1)

    started = time.perf_counter()
    try:
        results, duration = asyncio.run(send_requests_async(
            base_url, model, request_specs(requests), concurrency=concurrency, request_rate=request_rate,
            on_done=done))
    finally:
        if bar is not None:
            bar.close()
    return results, duration or time.perf_counter() - started


def block_size_of(cache_info: Mapping | None, flag: int | None) -> tuple[int | None, str | None, str | None]:
    """``(block size, where it came from, warning)``: the server's own metrics win over ``--block-size``."""
    published = (cache_info or {}).get("block_size")
    if published:
        warning = None
        if flag and flag != published:
            warning = f"--block-size {flag} ignored: the server publishes block_size {published}"
        return published, "server metrics (vllm:cache_config_info)", warning
    if flag:
        return flag, "--block-size", None
    return None, None, None


def detect_backend(snapshots) -> str | None:
    names = [name for s in snapshots if s.ok for name in s.samples]
    if any(n.startswith("vllm:") for n in names):
        return "vllm"
    if any(n.startswith("sglang:") for n in names):
        return "sglang"
    return None


def _gauge(snapshots, name: str) -> list[float]:
    return [value for s in snapshots if s.ok for _, value in s.samples.get(name, [])]


def run_hitrate(*, endpoint: str, model: str, workload: dict, concurrency: int | None, request_rate: float | None,
                metrics: Sequence[dict], reset_cache: bool, prefill: bool, block_size: int | None = None,
                tokenizer: str | None = None, ttft_slo_ms: float | None = None, tpot_slo_ms: float | None = None,
                baseline: Mapping | None = None, progress: bool = True,
                on_update: Callable[[dict], None] | None = None, log: Callable[[str], None] = lambda _: None) -> dict:
    """Run every phase and return the result (``on_update`` gets it while running, e.g. to write it).

    Never raises for a server problem: a failure or Ctrl-C ends in a result with ``status`` failed /
    partial / interrupted and what was measured up to then.
    """
    from . import metrics as prom
    from .experiment import environment_snapshot
    from .server import reset_any_prefix_cache

    base_url = base_url_of(endpoint)
    requests = workload["requests"]
    started_wall = time.perf_counter()
    result: dict = {
        "schema": SCHEMA, "status": "running", "error": None, "started_at": _now(),
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
    phases, timing, warnings = result["phases"], result["timing"], result["warnings"]
    urls = [m["url"] for m in metrics]

    def update(phase: str) -> None:
        result["phase"] = phase
        if on_update is not None:
            on_update(result)

    collected: list = []
    phase_started = None
    try:
        result["chat_template"] = chat_template_note(tokenizer, requests)
        preflight = check_model(base_url, model)
        phases["preflight"] = preflight
        if not preflight["reachable"]:
            raise ConnectionError(preflight["detail"])
        probe = prom.snapshot(urls)
        cache_info = prom.cache_config(probe)
        size, size_source, size_warning = block_size_of(cache_info, block_size)
        result["server"] = {"backend": detect_backend(probe), "cache_config": cache_info, "block_size": size,
                            "block_size_source": size_source,
                            "metrics_errors": [s.error for s in probe if not s.ok]}
        if size_warning:
            warnings.append(size_warning)
        for s in probe:
            if not s.ok:
                warnings.append(f"metrics: {s.error}; the measured hit rate needs the server's counters")
        timing["setup_s"] = time.perf_counter() - started_wall

        if reset_cache:
            reset = reset_any_prefix_cache(base_url)
            phases["reset"] = reset
            if reset["status"] != "ok":
                warnings.append(f"cache reset {reset['status']} ({reset['detail']}): the baseline may not be "
                                "clean; earlier traffic still in the cache can raise the measured hit rate")
                log(f"warning: {warnings[-1]}")
        else:
            phases["reset"] = {"status": "skipped"}

        prefill_requests = [{"id": f"prefill{i}", "prompt_token_ids": p, "max_tokens": PREFILL_MAX_TOKENS}
                            for i, p in enumerate(workload["prefixes"])] if prefill else []
        if prefill_requests:
            update("prefill")
            t = time.perf_counter()
            got: list = []
            prefill_results, _ = _send(base_url, model, prefill_requests, concurrency=1, request_rate=None,
                                       progress=None, collected=got)
            failed = [r for r in prefill_results if r.status != "ok"]
            phases["prefill"] = {"requests": len(prefill_requests), "errors": len(failed),
                                 "prefix_tokens": [len(p["prompt_token_ids"]) for p in prefill_requests]}
            timing["prefill_s"] = time.perf_counter() - t
            if failed:
                if len(failed) == len(prefill_results):
                    raise ConnectionError(f"every prefill request failed (first: {failed[0].error})")
                warnings.append(f"{len(failed)} prefill requests failed: their prefixes start cold")
        else:
            phases["prefill"] = {"requests": 0, "reason": "--no-prefill" if not prefill else "no shared prefix"}

        before = prom.snapshot(urls)
        update("measure")
        phase_started = time.perf_counter()
        in_flight = concurrency if concurrency else len(requests)
        results, duration = _send(base_url, model, requests, concurrency=in_flight, request_rate=request_rate,
                                  progress="hitrate" if progress else None, collected=collected)
        timing["bench_s"] = duration
        after = prom.settled_snapshot(urls, timeout_s=10.0)
        status = "ok"
    except KeyboardInterrupt:
        status = "interrupted"
        result["error"] = f"interrupted during {result.get('phase', 'setup')}"
        results = collected
        after = prom.snapshot(urls) if phase_started is not None else None
        if phase_started is not None:
            timing["bench_s"] = time.perf_counter() - phase_started
    except InputError:
        raise
    except Exception as exc:  # the server refused, died or answered nonsense: a result, not a crash
        status = "failed"
        result["error"] = f"{type(exc).__name__}: {exc}"
        results = collected
        after = prom.snapshot(urls) if phase_started is not None else None

    result["environment"] = environment_snapshot()
    timing["total_s"] = time.perf_counter() - started_wall
    if phase_started is None:  # nothing was measured
        result.update(status=status, finished_at=_now())
        result["hit_rates"] = _hit_rates(workload, result, None, None, prefill)
        result["verdict"] = {"verdict": "UNKNOWN", "reasons": [result["error"] or "nothing measured"],
                             "rules": VERDICT_RULES}
        result["requests"] = []
        return result

    from .client import aggregate, server_order
    from .experiment import predict_hits

    ordered = server_order(results)
    aggregates = aggregate(results, timing.get("bench_s") or 0.0)
    delta = prom.diff(before, after) if after is not None else None
    caching_enabled = (result["server"]["cache_config"] or {}).get("enable_prefix_caching")
    evidence = prom.hit_rate_evidence(
        delta, caching_enabled=caching_enabled,
        usage_cached_tokens=[r.cached_tokens if r.status == "ok" else None for r in results],
        usage_prompt_tokens=[r.prompt_tokens if r.status == "ok" else None for r in results])
    if status == "interrupted":
        evidence["hit_rate_reason"] = ("interrupted: requests still in flight were cancelled, so the counters "
                                       "may include work the rows do not show; " + (evidence["hit_rate_reason"] or ""))

    by_index = {r["id"]: r for r in requests}
    prediction = None
    size = result["server"]["block_size"]
    if size:
        capacity = (result["server"]["cache_config"] or {}).get("num_blocks")
        sent = [by_index[r.id]["prompt_token_ids"] for r in ordered]
        prediction = predict_hits(sent, size, capacity, [p["prompt_token_ids"] for p in prefill_requests])
        prediction["in_phase_reuse_tokens"] = _in_phase_reuse(
            sent, [p["prompt_token_ids"] for p in prefill_requests], size, prediction["per_request_hit_tokens"])
        per_id = dict(zip((r.id for r in ordered), prediction["per_request_hit_tokens"]))
    else:
        per_id = {}
    errors = aggregates["error_count"]
    if status == "ok" and errors:
        status = "failed" if errors == len(requests) else "partial"
        first = next(r.error for r in results if r.status != "ok")
        result["error"] = f"{errors} of {len(requests)} requests failed (first: {first})"
    result["status"] = status
    result["backend_counters"] = delta
    result["measured"] = {k: evidence[k] for k in ("hit_rate", "hit_rate_evidence", "hit_rate_reason",
                                                     "hit_tokens", "query_tokens", "usage")}
    result["prediction"] = _exactness(prediction, result, evidence, delta, aggregates, concurrency, request_rate,
                                      len(metrics))
    result["hit_rates"] = _hit_rates(workload, result, prediction, evidence, prefill)
    result["engines"] = engine_rows(delta, metrics)
    if result["server"]["backend"] == "sglang" or _gauge(after or [], prom.SGLANG_LAST_BATCH_GAUGE):
        result["server"]["sglang_cache_hit_rate_gauge"] = {
            "value_after": _gauge(after or [], prom.SGLANG_LAST_BATCH_GAUGE),
            "note": "sglang:cache_hit_rate covers the most recent batch only; it is shown, never used as the "
                    "run's hit rate (that is the counter delta above)"}
    result["summary"] = aggregates
    result["server"]["server_timing_ms"] = (delta or {}).get("server_timing_ms")
    result["speedup"] = speedup(result, baseline)
    result["verdict"] = verdict(result, ttft_slo_ms=ttft_slo_ms, tpot_slo_ms=tpot_slo_ms)
    rows = []
    for r in ordered:
        row = r.row()
        spec = by_index[r.id]
        row.update(prefix_group=spec.get("prefix_group"), predicted_hit_tokens=per_id.get(r.id))
        rows.append(row)
    result["requests"] = rows
    result["finished_at"] = _now()
    return result


def _in_phase_reuse(sent, prefill, block_size: int, predicted_per_request: Sequence[int]) -> int:
    """Predicted hit tokens that come from blocks the measured phase itself cached (not the prefill).

    Only these depend on timing: a request can reach a block that another in-flight request is still
    computing. When it is 0, concurrency cannot change the count.
    """
    from .cache import PrefixCache
    from .simulate import BlockKeys, max_hit_blocks

    cache, keys = PrefixCache(None), BlockKeys()
    for p in prefill:
        cache.process(keys.of(p, block_size))
    from_prefill = sum(cache.match(keys.of(p, block_size), max_hit_blocks(len(p), block_size, True)) * block_size
                       for p in sent)
    return sum(predicted_per_request) - from_prefill


def _exactness(prediction, result, evidence, delta, aggregates, concurrency, request_rate, endpoints) -> dict:
    """The prediction with ``exact_expected`` and the caveats that make it an estimate, and the difference."""
    if prediction is None:
        return {"predicted_hit_rate": None, "predicted_hit_tokens": None, "exact_expected": False,
                "reason": "the server's block size is unknown (it publishes no vllm:cache_config_info): "
                          "pass --block-size (SGLang: its page size, default 1)"}
    caveats = []
    parallel = request_rate is not None or (concurrency or 1) > 1
    if parallel and prediction["in_phase_reuse_tokens"]:
        caveats.append(f"requests overlap in time and {prediction['in_phase_reuse_tokens']} predicted hit tokens "
                       "come from blocks the measured phase caches itself: a request can miss a block another "
                       "one is still computing")
    if aggregates["error_count"]:
        caveats.append("some requests failed; what they left in the cache is unknown")
    if prediction["predicted_evictions"]:
        caveats.append("the simulated cache evicted blocks; the engine's eviction order is only approximated")
    if result["phases"].get("reset", {}).get("status") != "ok":
        caveats.append("the cache was not reset: blocks of earlier traffic may still hit")
    cache_info = result["server"]["cache_config"] or {}
    if cache_info.get("enable_prefix_caching") is False:
        caveats.append("prefix caching is off on the server: the prediction is what caching would reuse")
    if endpoints > 1 or (cache_info.get("engines") or 1) > 1:
        caveats.append("several engines: routing decides which cache a request meets; the prediction assumes one")
    preempted = ((delta or {}).get("counters", {}).get("preemptions") or {}).get("total")
    if preempted:
        caveats.append(f"{preempted} preemptions: a preempted request queries the cache again")
    if result["server"].get("backend") == "sglang":
        caveats.append("SGLang: page-granular radix cache; exact only with --block-size equal to its page size")
    if result["status"] == "interrupted":
        caveats.append("interrupted run")
    measured = evidence["hit_tokens"]
    prediction = dict(prediction)
    prediction.pop("per_request_hit_tokens", None)
    prediction.update(exact_expected=not caveats, caveats=caveats, measured_hit_tokens=measured,
                      difference_tokens=None if measured is None else measured - prediction["predicted_hit_tokens"],
                      matches_measured=None if measured is None else measured == prediction["predicted_hit_tokens"])
    if evidence["query_tokens"] is not None and evidence["query_tokens"] != prediction["predicted_query_tokens"]:
        prediction["query_tokens_note"] = (f"the server counted {evidence['query_tokens']} queried tokens, the "
                                           f"prediction {prediction['predicted_query_tokens']}: other traffic or "
                                           "retried requests reached the server")
    return prediction


def _hit_rates(workload, result, prediction, evidence, prefill) -> dict:
    from .hitrate_workload import target_breakdown

    size = (result.get("server") or {}).get("block_size")
    breakdown = target_breakdown(target=workload["target_hit_rate"] if workload["input_len"] else None,
                                 prefix_len=workload["prefix_len"], input_len=workload["input_len"],
                                 block_size=size, prefill=prefill and bool(workload["prefixes"]),
                                 prefix_num=workload["prefix_num"], num_requests=len(workload["requests"]))
    predicted = (prediction or {}).get("predicted_hit_rate")
    measured = (evidence or {}).get("hit_rate")
    return {
        "unit": "token (hit tokens / prompt tokens of the measured phase)",
        "target": workload["target_hit_rate"], "target_basis": workload["target_basis"],
        "block_aligned_target": breakdown.get("expected_hit_rate"),
        "predicted": predicted, "measured": measured,
        "measured_evidence": (evidence or {}).get("hit_rate_evidence"),
        "measured_reason": (evidence or {}).get("hit_rate_reason") if evidence else "nothing was measured",
        "measured_minus_predicted_points": (measured - predicted) * 100 if None not in (measured, predicted) else None,
        "target_minus_predicted_points": ((workload["target_hit_rate"] - predicted) * 100
                                          if None not in (workload["target_hit_rate"], predicted) else None),
        "target_breakdown": breakdown,
    }


def engine_rows(delta: Mapping | None, metrics: Sequence[dict]) -> list[dict]:
    """One row per endpoint / engine (hit and query token deltas) and the sum; empty without counters."""
    counters = (delta or {}).get("counters") or {}
    if "hits" not in counters or "queries" not in counters:
        return []
    hits, queries = counters["hits"]["per_engine"], counters["queries"]["per_engine"]
    many = len(metrics) > 1
    rows = []
    for key in sorted(set(hits) | set(queries)):
        index, engine = key.split(":", 1) if many else ("0", key)
        label = metrics[int(index)]["label"]
        name = label if not engine else f"{label} engine {engine}"
        h, q = hits.get(key, 0), queries.get(key, 0)
        rows.append({"engine": name, "hit_tokens": h, "query_tokens": q, "hit_rate": h / q if q else None})
    total_h, total_q = counters["hits"]["total"], counters["queries"]["total"]
    rows.append({"engine": "all", "hit_tokens": total_h, "query_tokens": total_q,
                 "hit_rate": total_h / total_q if total_q else None})
    return rows


def speedup(result: Mapping, baseline: Mapping | None) -> dict:
    """Measured TTFT change against a cache-off reference run beside the bound 1 / (1 - h)."""
    h = result["hit_rates"]["measured"]
    bound = (1 / (1 - h) if h < 1 else None) if h is not None else None
    out = {"theoretical_prefill_speedup": bound,
           "definition": "1 / (1 - h): prefill time if it were linear in computed tokens (h: measured hit rate)"}
    ttft = ((result.get("summary") or {}).get("ttft_ms") or {}).get("p50")
    if baseline is None:
        out.update(measured_ttft_speedup=None, reason="no --baseline (a cache-off run of the same workload) given")
        return out
    base_ttft = ((baseline.get("summary") or {}).get("ttft_ms") or {}).get("p50")
    out.update(baseline_ttft_p50_ms=base_ttft, ttft_p50_ms=ttft,
               baseline_ttft_ms=[r["ttft_ms"] for r in baseline.get("requests") or [] if r.get("ttft_ms") is not None],
               measured_ttft_speedup=base_ttft / ttft if base_ttft and ttft else None,
               baseline_workload_id=(baseline.get("config") or {}).get("workload_id"))
    if out["baseline_workload_id"] != result["config"]["workload_id"]:
        out["warning"] = "the baseline ran a different workload: the TTFT comparison is not like for like"
    return out


def verdict(result: Mapping, *, ttft_slo_ms: float | None = None, tpot_slo_ms: float | None = None) -> dict:
    """GOOD / MARGINAL / POOR / UNKNOWN from measured vs predicted, failures and latency (``VERDICT_RULES``)."""
    rates = result["hit_rates"]
    summary = result.get("summary") or {}
    measured, predicted = rates["measured"], rates["predicted"]
    reference, basis = predicted, "predicted"
    if reference is None:
        reference = rates["block_aligned_target"] if rates["block_aligned_target"] is not None else rates["target"]
        basis = "target"
    reasons, latency = [], []
    if measured is None:
        return {"verdict": "UNKNOWN", "reference": basis, "gap_points": None,
                "reasons": [f"no measured hit rate: {rates['measured_reason']}"], "latency_checks": [],
                "rules": VERDICT_RULES}
    gap = abs(measured - reference) * 100 if reference is not None else None
    requests = summary.get("requests") or 0
    errors = summary.get("error_count") or 0
    share = errors / requests if requests else 1.0
    ttft = (summary.get("ttft_ms") or {}).get("p50")
    tpot = (summary.get("tpot_ms") or {}).get("p50")
    if ttft_slo_ms is not None:
        latency.append({"check": f"TTFT p50 <= {ttft_slo_ms:g} ms", "value": ttft,
                        "ok": ttft is not None and ttft <= ttft_slo_ms})
    if tpot_slo_ms is not None:
        latency.append({"check": f"TPOT p50 <= {tpot_slo_ms:g} ms", "value": tpot,
                        "ok": tpot is not None and tpot <= tpot_slo_ms})
    gain = (result.get("speedup") or {}).get("measured_ttft_speedup")
    if gain is not None and (predicted or 0) >= 0.10:
        latency.append({"check": "TTFT p50 faster than the cache-off baseline", "value": gain, "ok": gain > 1.0})
    slipped = [c["check"] for c in latency if not c["ok"]]
    if gap is None:
        level = "MARGINAL"
        reasons.append("no reference hit rate to compare with")
    elif gap <= GOOD_GAP_POINTS:
        level = "GOOD"
        reasons.append(f"measured is within {gap:.2f} points of {basis}")
    elif gap <= MARGINAL_GAP_POINTS:
        level = "MARGINAL"
        reasons.append(f"measured differs from {basis} by {gap:.2f} points (> {GOOD_GAP_POINTS:g})")
    else:
        level = "POOR"
        reasons.append(f"measured differs from {basis} by {gap:.2f} points (> {MARGINAL_GAP_POINTS:g})")
    if errors:
        reasons.append(f"{errors} of {requests} requests failed")
        level = "POOR" if share > MARGINAL_ERROR_SHARE else max(level, "MARGINAL", key=_rank)
    if slipped:
        reasons.append("latency slipped: " + "; ".join(slipped))
        level = max(level, "MARGINAL", key=_rank)
    return {"verdict": level, "reference": basis, "gap_points": gap, "reasons": reasons, "latency_checks": latency,
            "rules": VERDICT_RULES}


def _rank(level: str) -> int:
    return {"GOOD": 0, "MARGINAL": 1, "POOR": 2}[level]
