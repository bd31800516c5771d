"""``hitrate`` across replicas: which replica served each request, and each replica's counters and prediction.

Two ways to meet several replicas:

- **client placement** (``--endpoint A --endpoint B --routing POLICY``): the client places every request, the
  prefill ones included, with the block model's ``simulate.routing.Cluster``, as ``g0g1 --replicas`` does. A
  measuring harness, not a router.
- **a router** (``--endpoint ROUTER --replica-metrics URL ...``): a real router (vLLM production-stack, the
  llm-d gateway, SGLang's router) places the requests. With one request at a time the client reads every
  replica's ``vllm:request_success`` counter after each request: the one replica whose count grew served it.
  The placement observed this way is then replayed on one pool per replica, so the prediction is exact for the
  router's own placement, and the block model says what each client policy would have reached on the same
  requests: how well the router kept prefixes together. With requests in flight together the placement cannot
  be observed; the per-replica counters stand, the per-replica prediction is null with that reason.

Each replica's hit rate comes from its own counter deltas; the cluster's is their sum (``metrics.diff`` sums
the endpoints). Nothing here guesses a placement from latency.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from .. import evidence
from ..core.errors import InputError
from ..measure import metrics as prom
from ..measure.endpoints import base_url_of, check_url
from ..simulate.routing import ROUTINGS, check_routing
from .routed import place_requests

OBSERVE_TIMEOUT_S = 5.0
"""How long to wait, after a request ended, for one replica's finished-request counter to count it."""


@dataclass
class Replicas:
    """Where the replicas are and, once known, where each request went (``None``: not observed)."""

    mode: str
    """``client`` (the client places requests by ``routing``) or ``router`` (an external router does)."""
    labels: list[str]
    metrics_urls: list[str]
    base_urls: list[str | None]
    """Each replica's server (its cache is reset there); in router mode derived from ``.../metrics``."""
    routing: str | None = None
    router_url: str | None = None
    prefill_placement: list[int | None] = field(default_factory=list)
    placement: list[int | None] = field(default_factory=list)
    placement_reason: str | None = None
    infos: list[dict | None] = field(default_factory=list)
    """Each replica's ``vllm:cache_config_info`` (block size, pool, caching on)."""
    resets: list[dict] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.labels)

    def metrics(self) -> list[dict]:
        return [{"label": label, "url": url} for label, url in zip(self.labels, self.metrics_urls)]


def check_replica_flags(endpoints: Sequence[str], replica_metrics: Sequence[str] | None, routing: str | None, *,
                        metrics_endpoints: Sequence[str] | None, kv_events: str | None) -> Replicas | None:
    """The replicas the flags name, or ``None`` for one server; every conflict is one ``InputError``."""
    endpoints = list(endpoints)
    if len(endpoints) == 1 and not replica_metrics:
        if routing is not None:
            raise InputError("--routing", "needs several --endpoint (the client places requests on them) or a "
                                          "router --endpoint with --replica-metrics")
        return None
    for flag, value in (("--metrics-endpoint", metrics_endpoints), ("--kv-events", kv_events)):
        if value:
            raise InputError(flag, "applies to one server; with replicas each replica's counters are read at its "
                                   "own /metrics (or --replica-metrics)")
    if len(endpoints) > 1:
        return _client_replicas(endpoints, replica_metrics, routing)
    if routing is not None:
        raise InputError("--routing", "the router behind --endpoint places the requests; --routing is for several "
                                      "--endpoint placed by the client")
    return _router_replicas(endpoints[0], replica_metrics)


def _client_replicas(endpoints: Sequence[str], replica_metrics, routing) -> Replicas:
    if replica_metrics:
        raise InputError("--replica-metrics", "is for a router --endpoint; several --endpoint are read at their "
                                              "own /metrics")
    if routing is None:
        raise InputError("--routing", f"{len(endpoints)} endpoints need a --routing ({', '.join(ROUTINGS)})")
    if routing not in ROUTINGS:
        check_routing(routing)  # names the simulator-only policies too
        raise InputError("--routing", f"{routing!r} is simulated only; a client places with {', '.join(ROUTINGS)}")
    bases = [base_url_of(e) for e in endpoints]
    if len(set(bases)) != len(bases):
        raise InputError("--endpoint", "names the same server twice")
    return Replicas("client", [f"replica{i}" for i in range(len(bases))], [b + "/metrics" for b in bases],
                    list(bases), routing=routing)


def _router_replicas(router: str, replica_metrics: Sequence[str]) -> Replicas:
    labels, urls = [], []
    for i, value in enumerate(replica_metrics):
        label, sep, url = value.partition("=")
        if not sep or label.startswith(("http://", "https://")):
            label, url = f"replica{i}", value
        check_url("--replica-metrics", url)
        if label in labels or url in urls:
            raise InputError("--replica-metrics", f"names {label if label in labels else url} twice")
        labels.append(label)
        urls.append(url)
    bases = [u[: -len("/metrics")] if u.rstrip("/").endswith("/metrics") else None
             for u in (u.rstrip("/") for u in urls)]
    return Replicas("router", labels, urls, bases, router_url=base_url_of(router))


def replica_cache_configs(replicas: Replicas, probe: Sequence, result: dict) -> dict | None:
    """Each replica's cache config; they must share a block size (one block model places and predicts). The
    first replica's config stands for the server section, with the pool of the smallest replica."""
    replicas.infos = [prom.cache_config([snap]) for snap in probe]
    sizes = {i["block_size"] for i in replicas.infos if i and i.get("block_size")}
    if len(sizes) > 1:
        raise InputError("--endpoint", f"the replicas publish different block sizes ({sorted(sizes)}): start them "
                                       "with the same --block-size")
    known = [i for i in replicas.infos if i]
    if not known:
        return None
    pools = [i["num_blocks"] for i in known if i.get("num_blocks")]
    result["warnings"].extend(f"replica {replicas.labels[i]} publishes no vllm:cache_config_info: its prediction "
                              "is unknown" for i, info in enumerate(replicas.infos) if info is None)
    return {**known[0], "num_blocks": min(pools) if len(pools) == len(known) else None,
            "replicas": len(replicas.infos)}


def reset_replicas(replicas: Replicas, reset: Callable[[str], dict]) -> dict:
    """Empty every replica's cache; ``ok`` only when each one was emptied."""
    replicas.resets = [reset(base) if base else {"status": "unavailable", "detail": f"{url} does not end in "
                                                 "/metrics, so the replica's server is unknown"}
                       for base, url in zip(replicas.base_urls, replicas.metrics_urls)]
    bad = [(label, r) for label, r in zip(replicas.labels, replicas.resets) if r["status"] != "ok"]
    if not bad:
        return {**replicas.resets[0], "replicas": replicas.resets}
    label, first = bad[0]
    return {"status": first["status"], "detail": f"{len(bad)} of {replicas.count} replicas not reset (first: "
                                                 f"{label}: {first['detail']})", "replicas": replicas.resets}


def placement_known(replicas: Replicas, requests: int) -> bool:
    return len(replicas.placement) == requests and None not in replicas.placement and \
        None not in replicas.prefill_placement


def replica_rows(replicas: Replicas, before: Sequence, after: Sequence | None, ordered: Sequence) -> list[dict]:
    """Each replica's counters and hit rate (its own deltas); ``prediction`` is filled in by the caller. The
    per-request usage joins a replica's evidence only when every finished request's replica is known."""
    placement = replicas.placement
    known = all(r.index < len(placement) and placement[r.index] is not None for r in ordered)
    rows = []
    for i, label in enumerate(replicas.labels):
        info = replicas.infos[i] if i < len(replicas.infos) else None
        delta = prom.diff([before[i]], [after[i]]) if after is not None else None
        mine = [r for r in ordered if known and replicas.placement[r.index] == i]
        found = evidence.from_results(delta, mine if known else [], (info or {}).get("enable_prefix_caching"))
        rows.append({"replica": i, "label": label, "base_url": replicas.base_urls[i],
                     "metrics_url": replicas.metrics_urls[i], "requests": len(mine) if known else None,
                     **{k: found[k] for k in ("hit_rate", "hit_rate_evidence", "hit_rate_reason", "hit_tokens",
                                              "query_tokens")},
                     "usage": evidence.usage_check(found["usage"], delta), "backend_cache_config": info,
                     "backend_counters": delta,
                     "reset": replicas.resets[i] if i < len(replicas.resets) else {"status": "skipped"},
                     "prediction": None if info else {"predicted_hit_tokens": None, "predicted_hit_rate": None,
                                                      "exact_expected": False,
                                                      "reason": "the replica publishes no cache config"}})
    return rows


def add_placement(replicas: Replicas, result: dict, prefill: Sequence[dict], requests: Sequence[dict],
                  measured_rate: float | None) -> None:
    """Each row's replica and the routing record (placement, prefix spread, what every policy would reach)."""
    known = len(replicas.placement) == len(requests)
    for row in result["requests"]:
        row["replica"] = replicas.placement[row["index"]] if known else None
    server = result.get("server") or {}
    result["routing"] = placement_record(replicas, prefill, requests, server.get("block_size"),
                                         server.get("num_blocks"), measured_rate)


def plan_client_placement(replicas: Replicas, prefill: Sequence[dict], requests: Sequence[dict], block_size: int,
                          capacity_blocks: int | None) -> None:
    """Client mode: place the prefill requests, then the measured ones, on one simulated cluster."""
    placement, _ = place_requests([*prefill, *requests], replicas.routing, replicas.count, block_size,
                                  capacity_blocks)
    replicas.prefill_placement = placement[:len(prefill)]
    replicas.placement = placement[len(prefill):]


def targets(replicas: Replicas, phase: str) -> str | list[str]:
    """The URL(s) a phase sends to: the router, or each request's replica."""
    if replicas.mode == "router":
        return replicas.router_url
    placement = replicas.prefill_placement if phase == "prefill" else replicas.placement
    return [replicas.base_urls[i] for i in placement]


class PlacementObserver:
    """Router mode, one request at a time: after each request, the replica whose ``vllm:request_success``
    counter grew by one is the one that served it (``None`` when none or several did)."""

    def __init__(self, replicas: Replicas, out: list, *, timeout_s: float = OBSERVE_TIMEOUT_S):
        self.urls, self.out, self.timeout_s = replicas.metrics_urls, out, timeout_s
        self.last = self._counts()
        self.unobserved: list[str] = []

    def _counts(self) -> list[float | None]:
        counts = []
        for snap in prom.snapshot(self.urls):
            found = snap.counter(prom.COUNTERS["request_success"]) if snap.ok else None
            counts.append(sum(found[1].values()) if found else None)
        return counts

    def __call__(self, result) -> None:
        deadline = time.monotonic() + (self.timeout_s if result.status == "ok" else 0.5)
        while True:
            counts = self._counts()
            grown = [i for i, (now, before) in enumerate(zip(counts, self.last))
                     if now is not None and before is not None and now > before]
            growth = sum(counts[i] - self.last[i] for i in grown)
            if (grown and growth >= 1) or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        self.last = counts
        chosen = grown[0] if len(grown) == 1 and growth == 1 else None
        if chosen is None:
            self.unobserved.append(f"{result.id}: {len(grown)} replicas counted a finished request")
        self.out.append(chosen)


def observer(replicas: Replicas, phase: str, concurrent: bool) -> Callable | None:
    """The ``after_each`` hook that records a router's placement for ``phase``, or ``None`` (client mode, or
    requests in flight together: the placement is then unknown, and says why)."""
    if replicas.mode != "router":
        return None
    out = replicas.prefill_placement if phase == "prefill" else replicas.placement
    out.clear()
    if concurrent and phase != "prefill":
        replicas.placement_reason = ("requests were in flight together: which replica served each one cannot be "
                                     "read from the counters, so there is no per-replica prediction")
        return None
    return PlacementObserver(replicas, out)


ROUTER_PAUSE_NOTE = ("behind a router the client reads every replica's counters after each request to see where it "
                     "went: the phase's duration and throughput include those pauses (TTFT, TPOT and E2E do not)")


def placement_record(replicas: Replicas, prefill: Sequence[dict], requests: Sequence[dict], block_size: int | None,
                     capacity_blocks: int | None, measured_rate: float | None) -> dict:
    """Who placed the requests, where they went, and what every client policy would reach on them."""
    known = len(replicas.placement) == len(requests) and None not in replicas.placement
    record = {"mode": replicas.mode, "policy": replicas.routing, "replicas": replicas.count,
              "router": replicas.router_url, "placement": replicas.placement if known else None,
              "prefill_placement": replicas.prefill_placement,
              "placement_reason": None if known else (replicas.placement_reason
                                                      or "some requests were not counted by exactly one replica"),
              "prefix_spread": prefix_spread(requests, replicas.placement if known else None),
              "note": ("placed by the client with the block model: a measuring harness, not a router"
                       if replicas.mode == "client" else
                       "placed by the router; observed from each replica's finished-request counter")}
    if block_size:
        traffic = [*prefill, *requests]
        predicted = {name: place_requests(traffic, name, replicas.count, block_size, capacity_blocks,
                                          counted_from=len(prefill))[1] for name in ROUTINGS}
        single = place_requests(traffic, "round_robin", 1, block_size, capacity_blocks, counted_from=len(prefill))[1]
        best = max((v for v in predicted.values() if v is not None), default=None)
        record.update(predicted_by_policy=predicted, predicted_single_pool=single, best_policy=max(
            (k for k, v in predicted.items() if v is not None), key=predicted.get, default=None),
            measured_lost_to_best_policy=best - measured_rate if None not in (best, measured_rate) else None,
            measured_lost_to_single_pool=single - measured_rate if None not in (single, measured_rate) else None,
            model_note="predicted_by_policy places the prefill and measured requests on pools of the smallest "
                       "replica's size with the teaching simulator (lru) and counts the measured ones: a comparison "
                       "of policies, not the engine-exact prediction")
    return record


def prefix_spread(requests: Sequence[Mapping], placement: Sequence[int | None] | None) -> dict | None:
    """For each prefix group, on how many replicas its requests ran (1 everywhere: prefixes kept together)."""
    if placement is None or None in placement:
        return None
    groups: dict = {}
    for request, replica in zip(requests, placement):
        if request.get("prefix_group") is not None:
            groups.setdefault(request["prefix_group"], set()).add(replica)
    if not groups:
        return None
    spread = {str(k): len(v) for k, v in sorted(groups.items(), key=lambda kv: str(kv[0]))}
    return {"replicas_per_prefix": spread, "mean": sum(spread.values()) / len(spread),
            "definition": "distinct replicas that served a prefix group's measured requests (1 = kept together)"}
