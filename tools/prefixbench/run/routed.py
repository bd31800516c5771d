"""One group on several replicas, with the client placing each request (``--replicas N --routing POLICY``).

The client-side routing is a measuring harness, not a router: it places request i on a replica before sending
it, with the block model's ``simulate.routing.Cluster`` (``round_robin``, ``least_loaded`` by the prefill the
model says each replica computed, ``prefix_affinity`` by the longest prefix the model says a replica holds).
Each replica is warmed up, reset and scraped on its own; per replica the manifest keeps its counters, its hit
rate and the prediction for the requests it received (one pool per replica, the same rules as one server).
The cluster's hit rate is the replicas' hit tokens over their queried tokens, from the counters only.

``routing.predicted_by_policy`` is the block model's cluster hit rate for every policy on the same requests,
so the report can say what each policy loses against the best without running them all.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from .. import evidence
from ..cache.blocks import BlockKeys, max_hit_blocks
from ..core.bounds import REPLICAS
from ..core.errors import InputError
from ..core.provenance import now
from ..measure import client, metrics
from ..measure.memory import sampler_for
from ..serve.control import reset_prefix_cache
from ..simulate.routing import ROUTINGS, Cluster, check_routing
from .group import _new_manifest, _normalized, _prediction, _warm_up, note_server_exit


def check_replicas(replicas: int, routing: str | None) -> dict:
    """``{"replicas": N, "routing": POLICY or None, "compare_routings": [...] or None}``: a routing is required
    for N > 1 and refused for 1. ``routing`` may list several policies (``prefix_affinity,round_robin``): the
    first places the measured runs, and every listed one also gets one comparison run of the caching group."""
    replicas = REPLICAS.check("replicas", replicas)
    if replicas == 1 and routing is not None:
        raise InputError("routing", "needs --replicas 2 or more")
    if replicas == 1:
        return {"replicas": 1, "routing": None, "compare_routings": None}
    if routing is None:
        raise InputError("routing", f"{replicas} replicas need a --routing ({', '.join(ROUTINGS)})")
    names = [part.strip() for part in str(routing).split(",")]
    for name in names:
        check_routing(name)
    if len(set(names)) != len(names):
        raise InputError("routing", f"lists a policy twice: {routing}")
    return {"replicas": replicas, "routing": names[0], "compare_routings": names if len(names) > 1 else None}


def place_requests(requests: Sequence[dict], routing: str, replicas: int, block_size: int,
                   capacity_blocks: int | None = None, *, counted_from: int = 0) -> tuple[list[int], float | None]:
    """Each request's replica under ``routing`` and the block model's cluster hit rate for that placement,
    over ``requests[counted_from:]`` (the ones before, e.g. prefill, only fill the pools)."""
    keys, cluster = BlockKeys(), Cluster(replicas, routing, capacity_blocks)
    placement, hits, tokens_counted = [], 0, 0
    for i, request in enumerate(requests):
        tokens = request["prompt_token_ids"]
        replica, hit = cluster.route(keys.of(tokens, block_size), max_hit_blocks(len(tokens), block_size, True),
                                     len(tokens), block_size)
        placement.append(replica)
        if i >= counted_from:
            hits, tokens_counted = hits + hit, tokens_counted + len(tokens)
    return placement, hits / tokens_counted if tokens_counted else None


def routing_record(requests: Sequence[dict], routing: str, replicas: int, block_size: int,
                   capacity_blocks: int | None) -> dict:
    placement, _ = place_requests(requests, routing, replicas, block_size, capacity_blocks)
    predicted = {name: place_requests(requests, name, replicas, block_size, capacity_blocks)[1] for name in ROUTINGS}
    best = max((v for v in predicted.values() if v is not None), default=None)
    return {"policy": routing, "replicas": replicas, "placement": placement,
            "predicted_by_policy": predicted,
            "predicted_lost_to_best": {k: (best - v if best is not None and v is not None else None)
                                       for k, v in predicted.items()},
            "note": "client-side placement by the block model: a measuring harness, not a router"}


def run_routed_group(*, servers: Sequence, model: str, requests: Sequence[dict], group: Mapping, routing: str,
                     warmup: int = 1, concurrency: int = 1, request_rate: float | None = None,
                     config: Mapping | None = None, label: str | None = None, progress: bool = True,
                     environment: Mapping | None = None, timing: Mapping) -> dict:
    """Benchmark one group on ``servers`` (running ``VllmServer``-like objects with ``base_url``)."""
    urls = [s.base_url for s in servers]
    manifest = _new_manifest(urls[0], model, requests, group, warmup, concurrency, request_rate,
                             [u.rstrip("/") + "/metrics" for u in urls], servers[0], config, label, environment)
    manifest["replica_servers"] = [s.describe() for s in servers]
    try:
        measured = _measure_replicas(servers, urls, model, requests, routing, warmup, concurrency, request_rate,
                                     progress and group["name"], manifest["phases"], timing)
    except InputError:
        raise
    except Exception as exc:  # a replica died or answered nonsense: a result, not a crash
        manifest.update(status="failed", error=f"{type(exc).__name__}: {exc}", finished_at=now())
        manifest.update(evidence.unmeasured_hit_rate("the group failed before its measurement ended"))
        for server in servers:
            if manifest.get("server_log_tail") is None:
                note_server_exit(manifest, server)
        return manifest
    _record_replicas(manifest, measured, requests, group, concurrency, request_rate)
    failure = client.failure_summary(measured["run"]["results"])
    manifest.update(status="failed" if failure else "ok", error=failure, finished_at=now())
    return manifest


def _measure_replicas(servers, urls, model, requests, routing, warmup, concurrency, request_rate, progress,
                      phases: dict, timing: Mapping) -> dict:
    warm = []
    for url in urls:
        warm = _warm_up(url, model, requests, warmup, phases)
    resets = [reset_prefix_cache(url) for url in urls]
    phases["reset_prefix_cache"] = resets[0] if all(r.get("status") == "ok" for r in resets) else {
        "status": "partial", "replicas": resets}
    limits = metrics.scrape_limits(timing["request_timeout_s"], timing["deadline_s"])  # a scrape never holds it
    befores = [metrics.snapshot([url.rstrip("/") + "/metrics"], limits["scrape_timeout_s"]) for url in urls]
    infos = [metrics.cache_config(b) for b in befores]
    if not infos[0] or not infos[0].get("block_size"):
        raise RuntimeError("replica 0 does not report vllm:cache_config_info; the block model cannot place requests")
    routed = routing_record(requests, routing, len(urls), infos[0]["block_size"], infos[0].get("num_blocks"))
    sampler = sampler_for(servers)
    with sampler:
        run = client.run_requests([urls[i] for i in routed["placement"]], model, requests, concurrency=concurrency,
                                  request_rate=request_rate, progress=progress, timeout_s=timing["request_timeout_s"],
                                  deadline_s=timing["deadline_s"])
    afters = [metrics.settled_snapshot([url.rstrip("/") + "/metrics"], timeout_s=10.0, **limits) for url in urls]
    return {"urls": urls, "warm": warm, "resets": resets, "infos": infos, "run": run, "routing": routed,
            "sampler": sampler,
            "deltas": [metrics.diff(b, a) for b, a in zip(befores, afters)]}


def _record_replicas(manifest: dict, measured: dict, requests, group, concurrency, request_rate) -> None:
    results, duration = measured["run"]["results"], measured["run"]["aggregates"]["duration_s"]
    placement = measured["routing"]["placement"]
    replicas = []
    for i, (info, delta, reset) in enumerate(zip(measured["infos"], measured["deltas"], measured["resets"])):
        mine = [r for r in results if placement[r.index] == i]
        aggregates = client.aggregate(mine, duration)
        caching = info["enable_prefix_caching"] if info else bool(group.get("enabled"))
        found = evidence.from_results(delta, mine, caching)
        prediction = _prediction(mine, requests, measured["warm"], reset, info, None, concurrency, request_rate,
                                 aggregates, delta, found)
        replicas.append({"replica": i, "base_url": measured["urls"][i], "requests": len(mine),
                         **{k: found[k] for k in ("hit_rate", "hit_rate_evidence", "hit_rate_reason", "hit_tokens",
                                                  "query_tokens")},
                         "prediction": prediction, "backend_cache_config": info, "backend_counters": delta,
                         "usage": evidence.usage_check(found["usage"], delta), "aggregates": aggregates})
    manifest["replicas"] = replicas
    manifest["routing"] = measured["routing"]
    manifest.update(_cluster_hit_rate(replicas))
    manifest["hit_rate_unit"] = "token"
    manifest["backend_cache_config"] = measured["infos"][0]
    manifest["backend_counters"] = {"server_timing_ms": _pooled_timing([r["backend_counters"] for r in replicas]),
                                    "per_replica": True}
    manifest["prediction"] = cluster_prediction(replicas, manifest["hit_tokens"])
    manifest["memory"] = measured["sampler"].result()
    manifest["aggregates"] = measured["run"]["aggregates"]
    manifest["requests"] = [{**row, "replica": placement[row["index"]]} for row in measured["run"]["rows"]]
    manifest["normalized_result"] = _normalized(manifest)


def _pooled_timing(deltas: Sequence[Mapping]) -> dict:
    """Each server latency histogram's mean over all replicas (weighted by their observation counts)."""
    out = {}
    for delta in deltas:
        for key, h in ((delta or {}).get("server_timing_ms") or {}).items():
            if h.get("mean_ms") is None or not h.get("count"):
                continue
            total = out.setdefault(key, {"name": h.get("name"), "count": 0, "sum_ms": 0.0})
            total["count"] += h["count"]
            total["sum_ms"] += h["mean_ms"] * h["count"]
    return {key: {"name": t["name"], "count": t["count"], "mean_ms": t["sum_ms"] / t["count"]}
            for key, t in out.items()}


def _cluster_hit_rate(replicas: Sequence[Mapping]) -> dict:
    """Sum of the replicas' counter deltas; ``null`` with the first replica's reason unless every one has them."""
    missing = [r for r in replicas if r["hit_rate_evidence"] != "backend_metrics"]
    if missing:
        first = missing[0]
        return {"hit_rate": None, "hit_rate_evidence": first["hit_rate_evidence"], "hit_tokens": None,
                "query_tokens": None, "hit_rate_reason": f"replica {first['replica']}: {first['hit_rate_reason']}"}
    hits, queries = sum(r["hit_tokens"] for r in replicas), sum(r["query_tokens"] for r in replicas)
    return {"hit_rate": hits / queries if queries else None, "hit_rate_evidence": "backend_metrics",
            "hit_rate_reason": None, "hit_tokens": hits, "query_tokens": queries}


def cluster_prediction(rows: Sequence[Mapping], measured_hits: int | None) -> dict:
    """The replicas' predictions (one pool each) summed: exact only when every replica's is, matching only when
    every replica's matches its own counters; null with the first missing replica's reason. ``measured_hits``:
    the cluster's counted hit tokens (``None``: not every replica was counted)."""
    missing = [r for r in rows if r["prediction"].get("predicted_hit_tokens") is None]
    if missing:
        first = missing[0]
        return {"predicted_hit_tokens": None, "predicted_hit_rate": None, "exact_expected": False,
                "matches_measured": None, "per_replica": True,
                "reason": f"{first.get('label', 'replica ' + str(first['replica']))}: "
                          f"{first['prediction'].get('reason') or 'no prediction'}"}
    preds = [r["prediction"] for r in rows]
    hits, queries = sum(p["predicted_hit_tokens"] for p in preds), sum(p["predicted_query_tokens"] for p in preds)
    return {"predicted_hit_tokens": hits, "predicted_query_tokens": queries,
            "predicted_hit_rate": hits / queries if queries else None, "per_replica": True,
            "block_size": preds[0]["block_size"], "capacity_blocks": [p["capacity_blocks"] for p in preds],
            "policy": preds[0]["policy"], "engine_model": preds[0].get("engine_model"),
            "predicted_evictions": sum(p["predicted_evictions"] for p in preds),
            "in_phase_reuse_tokens": sum(p["in_phase_reuse_tokens"] for p in preds),
            "simulated_warmup_prompts": sum(p["simulated_warmup_prompts"] for p in preds),
            "exact_expected": all(p["exact_expected"] for p in preds),
            "caveats": [f"{r.get('label', 'replica ' + str(r['replica']))}: {c}" for r in rows
                        for c in r["prediction"].get("caveats") or []],
            "measured_hit_tokens": measured_hits,
            "difference_tokens": None if measured_hits is None else measured_hits - hits,
            "matches_measured": None if measured_hits is None else all(p.get("matches_measured") for p in preds),
            "replicas_matching": sum(bool(p.get("matches_measured")) for p in preds)}


def measure_routings(servers: Sequence, policies: Sequence[str] = ROUTINGS, **run) -> dict:
    """The same requests on the same replicas once per routing policy (caches reset before each): each policy's
    measured cluster hit rate and TTFT p50, its prediction, and what it loses against the best measured one.
    ``run`` holds ``run_routed_group``'s other arguments."""
    measured = {}
    for policy in policies:
        m = run_routed_group(servers=servers, routing=check_routing(policy), **run)
        measured[policy] = {"status": m["status"], "error": m["error"], "hit_rate": m.get("hit_rate"),
                            "hit_rate_evidence": m.get("hit_rate_evidence"),
                            "predicted_hit_rate": (m.get("prediction") or {}).get("predicted_hit_rate"),
                            "prediction_matches_measured": (m.get("prediction") or {}).get("matches_measured"),
                            "ttft_p50_ms": ((m.get("aggregates") or {}).get("ttft_ms") or {}).get("p50"),
                            "per_replica_hit_tokens": [r["hit_tokens"] for r in m.get("replicas") or []],
                            "placement": (m.get("routing") or {}).get("placement")}
    hits = {p: v["hit_rate"] for p, v in measured.items() if v["hit_rate"] is not None}
    ttfts = {p: v["ttft_p50_ms"] for p, v in measured.items() if v["ttft_p50_ms"] is not None}
    for policy, v in measured.items():
        v["hit_rate_lost_to_best"] = max(hits.values()) - v["hit_rate"] if policy in hits else None
        v["ttft_p50_lost_to_best_ms"] = v["ttft_p50_ms"] - min(ttfts.values()) if policy in ttfts else None
    return {"replicas": len(servers), "policies": measured,
            "best_hit_rate": max(hits, key=hits.get) if hits else None,
            "best_ttft": min(ttfts, key=ttfts.get) if ttfts else None,
            "note": "one run per policy, sequentially on the same replicas; TTFT differences of one run are not "
                    "bounded by an interval"}
