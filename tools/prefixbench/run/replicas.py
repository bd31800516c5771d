"""Replicas: one home for every run against several servers, whoever places the requests.

- **``g0g1 --replicas N --routing POLICY``** (``run_replica_group``, ``measure_routings``): one group on N servers
  this project started, the client placing request i before sending it with the block model's
  ``simulate.routing.Cluster`` (``round_robin``, ``least_loaded`` by the prefill the model says each replica
  computed, ``prefix_affinity`` by the longest prefix the model says a replica holds). Each replica is warmed
  up, reset and scraped on its own; per replica the manifest keeps its counters, its hit rate and the
  prediction for the requests it received (one pool per replica, the same rules as one server). The cluster's
  hit rate is the replicas' hit tokens over their queried tokens, from the counters only;
  ``routing.predicted_by_policy`` is the block model's cluster hit rate for every policy on the same requests.
- **``hitrate`` with client placement** (``--endpoint A --endpoint B --routing POLICY``, ``Replicas`` mode
  ``client``): the client places every request, the prefill ones included, on the same simulated cluster. A
  measuring harness, not a router.
- **``hitrate`` behind a router** (``--endpoint ROUTER --replica-metrics URL ...``, mode ``router``): a real
  router (vLLM production-stack, the llm-d gateway, SGLang's router) places the requests. With one request at a
  time the client reads every replica's ``vllm:request_success`` counter after each request: the one replica
  whose count grew served it. The placement observed this way is then replayed on one pool per replica (by the
  live-run engine, ``run.live``), so the prediction is exact for the router's own placement, and the block model
  says what each client policy would have reached on the same requests: how well the router kept prefixes
  together. With requests in flight together the placement cannot be observed; the per-replica counters stand,
  the per-replica prediction is null with that reason.

Each replica's hit rate comes from its own counter deltas; the cluster's is their sum (``metrics.diff`` sums
the endpoints). Nothing here guesses a placement from latency.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Callable, Iterator, Mapping, Sequence

from .. import evidence
from ..cache.blocks import BlockKeys, max_hit_blocks
from ..core.bounds import REPLICAS
from ..core.errors import InputError
from ..core.group_records import GroupRunManifest, GroupRecord, percentile
from ..core.live_records import CLUSTER, CLUSTER_NONE, CounterDelta, Evidence, Prediction
from ..core.replica_records import (GROUP, LIVE, ClientRouting, ClusterMeasurement, LoadBalance, Placement,
                                    PolicyPredictions, PolicyRun, PrefixSpread, ReplicaRow, RouterRecord,
                                    RoutingComparison)
from ..core.request_rows import RequestRow
from ..measure import client, metrics as prom
from ..measure.endpoints import base_url_of, check_url
from ..measure.memory import MemorySampler, NotSampled, sampler_for
from ..serve.router import ROUTER_POLICIES, RouterConfig, RouterError, VllmRouter
from ..simulate.placement import observed_requests, yardstick
from ..simulate.plan import requests_from_prompts
from ..simulate.routing import ROUTINGS, Cluster, check_routing
from ..workload.hitrate import HitrateWorkload
from .router_watch import (KvPlacementWatch, kv_placement, kv_record, replica_request_counts, router_view)
from .group import (Counted, GroupRun, MeasuredPhase, failed_before_measuring, finish, history_known, measure_servers,
                    new_manifest, predict_group, warm_up)

OBSERVE_TIMEOUT_S = 5.0
"""How long to wait, after a request ended, for one replica's finished-request counter to count it."""

@dataclass
class RouterSetup:
    """What router mode knows beyond the counters: the ``vllm-router`` policy this run starts in front of the
    replicas (``None``: the user's router at ``--endpoint``), the router's ``/metrics``, each replica's KV-event
    publisher, and what was read from them."""

    policy: str | None = None
    args: list[str] = field(default_factory=list)
    metrics_url: str | None = None
    kv_events: list[str | None] = field(default_factory=list)
    process: VllmRouter | None = None
    watch: KvPlacementWatch | None = None
    prompts: list[list[int]] = field(default_factory=list)
    prefill_prompts: list[list[int]] = field(default_factory=list)
    metrics_before: object = None
    kv: dict | None = None
    placement_source: str = "counters"


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
    router: RouterSetup | None = None
    """Router mode: the ``vllm-router`` this run starts (``--router``), its metrics, the replicas' KV events."""

    @property
    def count(self) -> int:
        return len(self.labels)

    def metrics(self) -> list[dict]:
        return [{"label": label, "url": url} for label, url in zip(self.labels, self.metrics_urls, strict=True)]


def check_replica_flags(endpoints: Sequence[str], replica_metrics: Sequence[str] | None, routing: str | None, *,
                        metrics_endpoints: Sequence[str] | None, kv_events: str | None, router: str | None = None,
                        router_args: Sequence[str] | None = None, replica_kv_events: Sequence[str] | None = None,
                        router_metrics: str | None = None) -> Replicas | None:
    """The replicas the flags name, or ``None`` for one server; every conflict is one ``InputError``.

    ``router``: start ``vllm-router --policy ROUTER`` in front of the ``endpoints`` (the replicas); ``router_args``
    are more of its flags; ``replica_kv_events``, each replica's KV-event publisher (``kv_aware`` reads them, and
    the placement is confirmed from them); ``router_metrics``, the ``/metrics`` of a router the user started."""
    endpoints = list(endpoints)
    if router is None and router_args:
        raise InputError("--router-arg", "passes flags to the vllm-router that --router POLICY starts")
    if router is not None:
        replicas = _started_router(endpoints, replica_metrics, routing, router, list(router_args or []))
    elif len(endpoints) == 1 and not replica_metrics:
        if routing is not None:
            raise InputError("--routing", "needs several --endpoint (the client places requests on them) or a "
                                          "router --endpoint with --replica-metrics")
        replicas = None
    elif len(endpoints) > 1:
        replicas = _client_replicas(endpoints, replica_metrics, routing)
    elif routing is not None:
        raise InputError("--routing", "the router behind --endpoint places the requests; --routing is for several "
                                      "--endpoint placed by the client")
    else:
        replicas = _router_replicas(endpoints[0], list(replica_metrics or ()))
    for flag, value in (("--replica-kv-events", replica_kv_events), ("--router-metrics", router_metrics)):
        if value and (replicas is None or replicas.mode != "router"):
            raise InputError(flag, "is for replicas behind a router (--router POLICY, or --endpoint ROUTER with "
                                   "--replica-metrics)")
    if replicas is None:
        return None
    for flag, value in (("--metrics-endpoint", metrics_endpoints), ("--kv-events", kv_events)):
        if value:
            raise InputError(flag, "applies to one server; with replicas each replica's counters are read at its "
                                   "own /metrics (or --replica-metrics)")
    if replicas.router is not None:
        _router_extras(replicas, replica_kv_events, router_metrics)
    return replicas


def _started_router(endpoints: Sequence[str], replica_metrics: Sequence[str] | None, routing: str | None, policy: str,
                    args: list[str]) -> Replicas:
    """``--router POLICY``: the ``--endpoint`` flags are the replicas, and this run starts the router."""
    if policy not in ROUTER_POLICIES:
        raise InputError("--router", f"unknown vllm-router policy {policy!r}; choose one of "
                                     f"{', '.join(ROUTER_POLICIES)}")
    for flag, value in (("--routing", routing), ("--replica-metrics", replica_metrics)):
        if value:
            raise InputError(flag, "cannot be combined with --router: the router places the requests and the "
                                   "--endpoint replicas are read at their own /metrics")
    if len(endpoints) < 2:
        raise InputError("--router", "needs the replicas as two or more --endpoint")
    bases = [base_url_of(e) for e in endpoints]
    if len(set(bases)) != len(bases):
        raise InputError("--endpoint", "names the same server twice")
    return Replicas("router", [f"replica{i}" for i in range(len(bases))], [b + "/metrics" for b in bases],
                    list(bases), router=RouterSetup(policy=policy, args=args))


def _router_extras(replicas: Replicas, kv_events: Sequence[str] | None, metrics: str | None) -> None:
    setup = replicas.router
    assert setup is not None
    if kv_events:
        if len(kv_events) != replicas.count:
            raise InputError("--replica-kv-events", f"give one per replica ({replicas.count}), in replica order")
        for address in kv_events:
            if not address.startswith("tcp://") or not address.rpartition(":")[2].isdigit():
                raise InputError("--replica-kv-events", f"must be tcp://HOST:PORT (the replica's publisher "
                                                        f"endpoint), got {address!r}")
        setup.kv_events = list(kv_events)
    if setup.policy == "kv_aware" and not setup.kv_events:
        raise InputError("--router", "kv_aware reads each replica's KV events: give one --replica-kv-events "
                                     "tcp://HOST:PORT per replica (its publisher binds tcp://*:PORT)")
    if metrics:
        if setup.policy is not None:
            raise InputError("--router-metrics", "the router --router starts publishes its own; this flag is for "
                                                 "a router you started")
        check_url("--router-metrics", metrics)
        setup.metrics_url = metrics


def _client_replicas(endpoints: Sequence[str], replica_metrics: Sequence[str] | None, routing: str | None) -> Replicas:
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
    """``--endpoint ROUTER --replica-metrics [LABEL=]URL ...``: a replica's ``/metrics`` URL, or its base URL
    (``/metrics`` is appended)."""
    labels, urls = [], []
    for i, value in enumerate(replica_metrics):
        label, sep, url = value.partition("=")
        if not sep or label.startswith(("http://", "https://")):
            label, url = f"replica{i}", value
        check_url("--replica-metrics", url)
        url = url.rstrip("/")
        url = url if url.endswith("/metrics") else base_url_of(url) + "/metrics"
        if label in labels or url in urls:
            raise InputError("--replica-metrics", f"names {label if label in labels else url} twice")
        labels.append(label)
        urls.append(url)
    bases = [u[: -len("/metrics")] for u in urls]
    return Replicas("router", labels, urls, list(bases), router_url=base_url_of(router), router=RouterSetup())


@contextmanager
def router_session(replicas: Replicas | None, workload: HitrateWorkload, model: str, *,
                   startup_timeout_s: float | None = None) -> Iterator[Replicas | None]:
    """Router mode, around the whole run: start the ``vllm-router`` that ``--router`` asks for (one
    ``InputError`` line when it cannot start: nothing has been sent then), subscribe to the replicas' KV events,
    and stop both at the end."""
    setup = replicas.router if replicas is not None else None
    if replicas is None or setup is None:
        yield replicas
        return
    setup.prompts = [list(r["prompt_token_ids"]) for r in workload.requests]
    setup.prefill_prompts = [list(p) for p in workload.prefixes]
    try:
        if setup.policy is not None:
            setup.process = _start_router(replicas, setup, model, startup_timeout_s)
            replicas.router_url, setup.metrics_url = setup.process.base_url, setup.process.metrics_url
        if setup.kv_events:
            setup.watch = KvPlacementWatch(setup.kv_events).start()
        yield replicas
    finally:
        if setup.watch is not None:
            setup.watch.stop()
        if setup.process is not None:
            setup.process.stop()


def _start_router(replicas: Replicas, setup: RouterSetup, model: str, timeout_s: float | None) -> VllmRouter:
    reads_events = setup.policy == "kv_aware"  # vllm-router refuses --kv-event-source with any other policy
    info = prom.cache_config(prom.snapshot(replicas.metrics_urls[:1])) if reads_events else None
    workers = [b for b in replicas.base_urls if b]
    # each replica's own publisher (kv_aware has one per replica: _router_extras checks the count)
    events = ({b: e for b, e in zip(replicas.base_urls, setup.kv_events, strict=True) if b and e} if reads_events
              else {})
    config = RouterConfig(workers=workers, policy=setup.policy or "round_robin", kv_events=events,
                          block_size=info.get("block_size") if info else None, model=model, extra_args=setup.args)
    if timeout_s is not None:
        config.startup_timeout_s = timeout_s
    try:
        return VllmRouter(config).start()
    except RouterError as exc:
        raise InputError("--router", str(exc)) from None


def replica_cache_configs(replicas: Replicas, probe: Sequence, warnings: list[str]) -> dict | None:
    """Each replica's cache config; they must share a block size (one block model places and predicts). The
    first replica's config stands for the server section, with the pool of the smallest replica; a replica that
    publishes none is named in ``warnings``."""
    replicas.infos = [prom.cache_config([snap]) for snap in probe]
    sizes = {i["block_size"] for i in replicas.infos if i and i.get("block_size")}
    if len(sizes) > 1:
        raise InputError("--endpoint", f"the replicas publish different block sizes ({sorted(sizes)}): start them "
                                       "with the same --block-size")
    known = [i for i in replicas.infos if i]
    if not known:
        return None
    pools = [i["num_blocks"] for i in known if i.get("num_blocks")]
    warnings.extend(f"replica {replicas.labels[i]} publishes no vllm:cache_config_info: its prediction is unknown"
                    for i, info in enumerate(replicas.infos) if info is None)
    return {**known[0], "num_blocks": min(pools) if len(pools) == len(known) else None,
            "replicas": len(replicas.infos)}


def reset_replicas(replicas: Replicas, reset: Callable[[str], dict]) -> dict:
    """Empty every replica's cache; ``ok`` only when each one was emptied."""
    replicas.resets = [reset(base) if base else {"status": "unavailable", "detail": f"{url} does not end in "
                                                 "/metrics, so the replica's server is unknown"}
                       for base, url in zip(replicas.base_urls, replicas.metrics_urls, strict=True)]
    bad = [(label, r) for label, r in zip(replicas.labels, replicas.resets, strict=True) if r["status"] != "ok"]
    if not bad:
        return {**replicas.resets[0], "replicas": replicas.resets}
    label, first = bad[0]
    return {"status": first["status"], "detail": f"{len(bad)} of {replicas.count} replicas not reset (first: "
                                                 f"{label}: {first['detail']})", "replicas": replicas.resets}


def placement_known(replicas: Replicas, requests: int) -> bool:
    return len(replicas.placement) == requests and None not in replicas.placement and \
        None not in replicas.prefill_placement


def replica_rows(replicas: Replicas, before: Sequence | None, after: Sequence | None,
                 ordered: Sequence) -> list[ReplicaRow]:
    """Each replica's counters and hit rate (its own deltas); ``prediction`` is filled in by the caller (here
    only where the replica publishes no cache config). The per-request usage joins a replica's evidence only when
    every finished request's replica is known."""
    if replicas.router is not None and replicas.router.watch is not None and replicas.router.kv is None:
        resolve_kv_placement(replicas)
    placement = replicas.placement
    known = all(r.index < len(placement) and placement[r.index] is not None for r in ordered)
    rows = []
    for i, label in enumerate(replicas.labels):
        info = replicas.infos[i] if i < len(replicas.infos) else None
        delta = prom.diff([before[i]], [after[i]]) if before is not None and after is not None else None
        mine = [r for r in ordered if known and replicas.placement[r.index] == i]
        found = evidence.replica_evidence(delta, mine, info.get("enable_prefix_caching") if info else None,
                                          served=len(mine) if known else None)
        rows.append(ReplicaRow(
            LIVE, i, replicas.base_urls[i], len(mine) if known else None, found, evidence.usage_check(found, delta),
            info, delta, None if info else Prediction.unpredicted("the replica publishes no cache config"),
            label=label, metrics_url=replicas.metrics_urls[i],
            reset=replicas.resets[i] if i < len(replicas.resets) else {"status": "skipped"}))
    return rows


def resolve_kv_placement(replicas: Replicas) -> None:
    """Read where every request went from the replicas' KV events; where the counters could not tell (requests
    in flight together) and the events tell every request, that placement is the run's (``placement_source``
    ``kv_events``)."""
    setup = replicas.router
    assert setup is not None and setup.watch is not None
    sizes = [i["block_size"] for i in replicas.infos if i and i.get("block_size")]
    if not sizes:
        setup.kv = {"placement": None, "reason": "no replica publishes its block size", **setup.watch.status()}
        return
    keys = BlockKeys()
    stored = setup.watch.stored_keys(keys)
    prefill = setup.prefill_prompts[:len(replicas.prefill_placement)]
    placement, reasons = kv_placement([*prefill, *setup.prompts], stored, sizes[0], keys)
    counted = [*replicas.prefill_placement, *replicas.placement] if len(replicas.placement) == len(setup.prompts) \
        else None
    setup.kv = kv_record(placement, reasons, counted, setup.watch.status())
    setup.kv["prefill_requests"] = len(prefill)
    measured = placement[len(prefill):]
    if counted is None and measured and None not in measured:
        replicas.placement[:] = measured
        replicas.placement_reason = None
        setup.placement_source = "kv_events"


def with_replicas(replicas: Replicas, rows: Sequence[RequestRow], requests: int) -> list[RequestRow]:
    """Each row with the replica that served it (``None`` for all when the placement is not known in full)."""
    known = len(replicas.placement) == requests
    return [row.with_columns(replica=replicas.placement[row.index] if known else None) for row in rows]


def placement_of(replicas: Replicas, server: Mapping, rows: Sequence[RequestRow], prefill: Sequence[dict],
                 requests: Sequence[dict], measured_rate: float | None,
                 rows_by_replica: Sequence[ReplicaRow]) -> Placement:
    """The result's ``routing`` record: the placement, the prefix spread, what every policy would reach, the
    router's record in router mode, and the yardstick; ``rows_by_replica``: each replica's row (``run.live``: none
    when nothing was predicted); ``server``: the result's server section (block and pool size)."""
    placement = placement_record(replicas, prefill, requests, server.get("block_size"), server.get("num_blocks"),
                                 measured_rate)
    setup = replicas.router
    if setup is not None:
        placement = replace(placement, policy=setup.policy or replicas.routing,
                            router_record=router_record(replicas, rows_by_replica, rows))
    return replace(placement, yardstick=placement_yardstick(replicas, prefill, requests, server, rows,
                                                            measured_rate))


def router_record(replicas: Replicas, rows: Sequence[ReplicaRow], requests: Sequence[RequestRow]) -> RouterRecord:
    """Router mode: the router this run started, where the placement was read, the KV events' placement, the
    router's own view beside the replicas' counters, and the load each replica took."""
    setup = replicas.router
    assert setup is not None
    view = None
    if setup.metrics_url:
        after = prom.scrape(setup.metrics_url, timeout_s=5.0, attempts=1)
        counted = replica_request_counts([r.counters for r in rows])
        before = setup.metrics_before if isinstance(setup.metrics_before, prom.Snapshot) else None
        view = router_view(setup.metrics_url, before, after, replicas.base_urls, replicas.labels, counted)
        if view.get("prefix_tree"):  # the router's belief of a prefix hit beside the replicas' cached_tokens
            view["replica_requests_with_hits"] = sum(1 for r in requests if (r.cached_tokens or 0) > 0)
    known = len(replicas.placement) == len(requests) and None not in replicas.placement
    return RouterRecord(
        router_process=setup.process.describe() if setup.process is not None else None,
        placement_source=setup.placement_source if known else None,
        kv_events_placement=setup.kv if setup.watch is not None else {
            "placement": None, "reason": "no --replica-kv-events: the placement is read from the counters only "
                                         "(one request at a time)"},
        router_view=view if view is not None else {
            "status": "unavailable", "reason": "the router's /metrics is unknown (--router-metrics URL)",
            "per_replica": None},
        load=LoadBalance.of(rows))


def placement_yardstick(replicas: Replicas, prefill: Sequence[dict], requests: Sequence[dict], server: Mapping,
                        rows: Sequence[RequestRow], measured_rate: float | None) -> dict:
    """The engine model's best placement on the same requests and pools (``simulate.placement``), the placement
    that ran (``router``, or ``client`` for the client's) replayed beside it, and the points it lost against the
    model's best, from the measured hit rate."""
    size, pool = server.get("block_size"), server.get("num_blocks")
    if not size:
        return {"status": "unavailable", "policies": None, "reason": "no block size"}
    by_index = {r.index: r.output_token_ids for r in rows}
    outputs = [by_index.get(i) for i in range(len(requests))]
    prompts = [p["prompt_token_ids"] for p in prefill] + [r["prompt_token_ids"] for r in requests]
    if None in outputs:  # not vLLM (or ids not returned): stand-in outputs of each request's max_tokens
        engine = requests_from_prompts(prompts, [1] * len(prefill) + [r.get("max_tokens") or 1 for r in requests],
                                       size)
    else:
        engine = observed_requests(prompts, [[0]] * len(prefill) + [o for o in outputs if o is not None], size)
    observed: dict[str, Sequence[int]] | None = None
    if placement_known(replicas, len(requests)):
        observed = {replicas.mode: [i for i in (*replicas.prefill_placement, *replicas.placement)
                                    if i is not None]}  # all known: placement_known
    found = yardstick(engine, replicas.count, size, pool, counted_from=len(prefill), observed=observed)
    best = found["best_hit_rate"]
    found["measured_hit_rate"] = measured_rate
    found["measured_points_lost_to_best"] = None if None in (best, measured_rate) else (best - measured_rate) * 100
    found["status"] = "ok"
    found["outputs"] = ("the generated token ids" if None not in outputs else
                        "stand-ins (the server returned no generated token ids): an estimate")
    return found


def plan_client_placement(replicas: Replicas, prefill: Sequence[dict], requests: Sequence[dict], block_size: int,
                          capacity_blocks: int | None) -> None:
    """Client mode: place the prefill requests, then the measured ones, on one simulated cluster."""
    assert replicas.routing is not None  # client mode always has its routing
    placement, _ = place_requests([*prefill, *requests], replicas.routing, replicas.count, block_size,
                                  capacity_blocks)
    replicas.prefill_placement = [*placement[:len(prefill)]]
    replicas.placement = [*placement[len(prefill):]]


def phase_targets(replicas: Replicas, phase: str) -> str | list[str]:
    """The URL(s) a phase sends to: the router, or each request's replica."""
    if replicas.mode == "router":
        assert replicas.router_url is not None  # router mode always has its URL
        return replicas.router_url
    placement = replicas.prefill_placement if phase == "prefill" else replicas.placement
    urls = [replicas.base_urls[i] if i is not None else None for i in placement]
    assert None not in urls, "client mode places every request on a replica with a known URL"
    return [u for u in urls if u is not None]


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

    def __call__(self, result: client.RequestResult) -> None:
        deadline = time.monotonic() + (self.timeout_s if result.status == "ok" else 0.5)
        while True:
            counts = self._counts()
            steps = [(i, now - before) for i, (now, before) in enumerate(zip(counts, self.last, strict=True))
                     if now is not None and before is not None and now > before]
            grown, growth = [i for i, _ in steps], sum(step for _, step in steps)
            if (grown and growth >= 1) or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        self.last = counts
        chosen = grown[0] if len(grown) == 1 and growth == 1 else None
        if chosen is None:
            self.unobserved.append(f"{result.id}: {len(grown)} replicas counted a finished request")
        self.out.append(chosen)


def placement_observer(replicas: Replicas, phase: str, concurrent: bool) -> Callable | None:
    """The ``after_each`` hook that records a router's placement for ``phase``, or ``None`` (client mode, or
    requests in flight together: the placement is then unknown, and says why)."""
    if replicas.mode != "router":
        return None
    if phase != "prefill" and replicas.router is not None and replicas.router.metrics_url:
        replicas.router.metrics_before = prom.scrape(replicas.router.metrics_url, timeout_s=5.0, attempts=1)
    out = replicas.prefill_placement if phase == "prefill" else replicas.placement
    out.clear()
    if concurrent and phase != "prefill":
        replicas.placement_reason = ("requests were in flight together: which replica served each one cannot be "
                                     "read from the counters, so there is no per-replica prediction")
        return None
    return PlacementObserver(replicas, out)


ROUTER_PAUSE_NOTE = ("behind a router the client reads every replica's counters after each request to see where it "
                     "went: the phase's duration and throughput include those pauses (TTFT, TPOT and E2E do not)")


def _less(a: float | None, b: float | None) -> float | None:
    """``a - b``, ``None`` when either is unknown."""
    return a - b if a is not None and b is not None else None


def placement_record(replicas: Replicas, prefill: Sequence[dict], requests: Sequence[dict], block_size: int | None,
                     capacity_blocks: int | None, measured_rate: float | None) -> Placement:
    """Who placed the requests, where they went, and what every client policy would reach on them."""
    known = len(replicas.placement) == len(requests) and None not in replicas.placement
    policies = None
    if block_size:
        traffic = [*prefill, *requests]
        predicted = {name: place_requests(traffic, name, replicas.count, block_size, capacity_blocks,
                                          counted_from=len(prefill))[1] for name in ROUTINGS}
        single = place_requests(traffic, "round_robin", 1, block_size, capacity_blocks, counted_from=len(prefill))[1]
        best = max((v for v in predicted.values() if v is not None), default=None)
        reached = {k: v for k, v in predicted.items() if v is not None}
        policies = PolicyPredictions(predicted, single, max(reached, key=lambda k: reached[k], default=None),
                                     _less(best, measured_rate), _less(single, measured_rate))
    return Placement(replicas.mode, replicas.routing, replicas.count, replicas.router_url,
                     replicas.placement if known else None, replicas.prefill_placement,
                     None if known else (replicas.placement_reason
                                         or "some requests were not counted by exactly one replica"),
                     prefix_spread(requests, replicas.placement if known else None), policies)


def prefix_spread(requests: Sequence[Mapping], placement: Sequence[int | None] | None) -> PrefixSpread | None:
    """For each prefix group, on how many replicas its requests ran (1 everywhere: prefixes kept together)."""
    if placement is None or None in placement:
        return None
    groups: dict = {}
    for request, replica in zip(requests, placement, strict=True):
        if request.get("prefix_group") is not None:
            groups.setdefault(request["prefix_group"], set()).add(replica)
    if not groups:
        return None
    spread = {str(k): len(v) for k, v in sorted(groups.items(), key=lambda kv: str(kv[0]))}
    return PrefixSpread(spread, sum(spread.values()) / len(spread))


# ------------------------------------------------------------------ g0g1: one group on the client's replicas

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
                   capacity_blocks: int | None) -> ClientRouting:
    """Where ``routing`` places each request, and every client policy's cluster hit rate on them."""
    placement, _ = place_requests(requests, routing, replicas, block_size, capacity_blocks)
    predicted = {name: place_requests(requests, name, replicas, block_size, capacity_blocks)[1] for name in ROUTINGS}
    return ClientRouting(routing, replicas, placement, predicted)


def run_replica_group(run: GroupRun, servers: Sequence, routing: str) -> GroupRunManifest:
    """Benchmark one group (``run``) on ``servers`` (running ``VllmServer``-like objects with ``base_url``), each
    request placed on the replica the block model's ``routing`` picks; the manifest is returned, not written."""
    urls = [s.base_url for s in servers]
    manifest = new_manifest(run, urls[0], [u.rstrip("/") + "/metrics" for u in urls], servers[0], replicas=servers)
    try:
        known = [history_known(run, [s.base_url.rstrip("/") + "/metrics"]) for s in servers]
        measured = _measure_replicas(run, servers, routing, manifest.phases, known)
    except InputError:
        raise
    except Exception as exc:  # a replica died or answered nonsense: a result, not a crash
        failed_before_measuring(manifest, exc, *servers)
        return manifest
    _record_replicas(manifest, measured, run)
    finish(manifest, client.failure_summary(measured.sent.results), None)
    return manifest


@dataclass(frozen=True)
class ReplicaPhase:
    """One measured phase on every replica: what was sent (one ``SentPhase``, each request on its replica), where
    each request went (``routing_record``), and each replica's URL, reset, cache config and counter delta."""

    urls: Sequence[str]
    warm: Sequence[dict]
    sent: client.SentPhase
    routing: ClientRouting
    counted: Sequence[Counted]
    sampler: MemorySampler | NotSampled
    history_known: Sequence[bool]
    """Each replica's ``group.history_known`` answer."""

    @property
    def placement(self) -> Sequence[int]:
        return self.routing.placement


def _measure_replicas(run: GroupRun, servers: Sequence, routing: str, phases: dict,
                      known: Sequence[bool]) -> ReplicaPhase:
    """Warm up every replica, then one measured phase on all of them (``group.measure_servers``), each request
    placed by the block model on the replica ``routing`` picks."""
    urls, warm = [s.base_url for s in servers], []
    for url in urls:
        warm = warm_up(url, run.model, run.requests, run.warmup, phases, timeout_s=run.request_timeout_s)

    def traffic(infos: list[dict | None]) -> tuple[ClientRouting, client.SentPhase]:
        """Where each request goes (the block model, from replica 0's cache config), then the requests."""
        first = infos[0]
        if not first or not first.get("block_size"):
            raise RuntimeError("replica 0 does not report vllm:cache_config_info; the block model cannot place "
                               "requests")
        routed = routing_record(run.requests, routing, len(urls), first["block_size"], first.get("num_blocks"))
        return routed, client.send_phase([urls[i] for i in routed.placement], run.model, run.requests,
                                         concurrency=run.concurrency, request_rate=run.request_rate,
                                         progress=run.progress_label, timeout_s=run.request_timeout_s,
                                         deadline_s=run.deadline_s)

    def record_resets(resets: list[dict]) -> None:
        phases["reset_prefix_cache"] = resets[0] if all(r.get("status") == "ok" for r in resets) else {
            "status": "partial", "replicas": resets}

    sampler = sampler_for(servers)
    (routed, sent), counted = measure_servers(run, urls, [[url.rstrip("/") + "/metrics"] for url in urls], traffic,
                                              samplers=[sampler], on_reset=record_resets)
    return ReplicaPhase(urls, warm, sent, routed, counted, sampler, known)


def _record_replicas(manifest: GroupRunManifest, measured: ReplicaPhase, run: GroupRun) -> None:
    results, placement = measured.sent.results, measured.placement
    duration = measured.sent.aggregates.duration_s or 0.0  # the client always times the phase
    replicas: list[ReplicaRow] = []
    for i, counter in enumerate(measured.counted):
        info, delta, reset = counter.cache_info, counter.delta, counter.reset
        mine = [r for r in results if placement[r.index] == i]
        aggregates = client.aggregates(mine, duration)
        caching = info["enable_prefix_caching"] if info else bool(run.group.get("enabled"))
        found = evidence.replica_evidence(delta, mine, caching, served=len(mine))
        prediction = predict_group(run, measured.warm, MeasuredPhase(mine, reset, info, aggregates, delta, found,
                                                                     measured.history_known[i]))
        replicas.append(ReplicaRow(GROUP, i, measured.urls[i], len(mine), found, evidence.usage_check(found, delta),
                                   info, delta, prediction, aggregates=aggregates))
    cluster = _cluster_hit_rate(replicas)
    manifest.measured = ClusterMeasurement(
        replicas, measured.routing, cluster, measured.counted[0].cache_info,
        _pooled_timing([c.delta for c in measured.counted]), cluster_prediction(replicas, cluster.hit_tokens),
        measured.sampler.result(), measured.sent.aggregates,
        [row.with_columns(replica=placement[row.index]) for row in measured.sent.rows])


def _pooled_timing(deltas: Sequence[CounterDelta | Mapping | None]) -> dict:
    """Each server latency histogram's mean over all replicas (weighted by their observation counts); a replica
    without a delta adds nothing."""
    out: dict[str, dict] = {}
    for delta in deltas:
        for key, h in CounterDelta.of(delta).server_timing_ms.items():
            if h.get("mean_ms") is None or not h.get("count"):
                continue
            total = out.setdefault(key, {"name": h.get("name"), "count": 0, "sum_ms": 0.0})
            total["count"] += h["count"]
            total["sum_ms"] += h["mean_ms"] * h["count"]
    return {key: {"name": t["name"], "count": t["count"], "mean_ms": t["sum_ms"] / t["count"]}
            for key, t in out.items()}


def _cluster_hit_rate(replicas: Sequence[ReplicaRow]) -> Evidence:
    """Sum of the replicas' counter deltas; ``null`` with the first replica's reason unless every one has them."""
    missing = [r for r in replicas if r.evidence.hit_rate_evidence != "backend_metrics"]
    if missing:
        first = missing[0]
        return Evidence(None, first.evidence.hit_rate_evidence,
                        f"replica {first.replica}: {first.evidence.hit_rate_reason}", None, None)
    hits, queries = sum(r.hit_tokens or 0 for r in replicas), sum(r.query_tokens or 0 for r in replicas)
    return Evidence(hits / queries if queries else None, "backend_metrics", None, hits, queries)


def cluster_prediction(rows: Sequence[ReplicaRow], measured_hits: float | None) -> Prediction:
    """The replicas' predictions (one pool each) summed: exact only when every replica's is, matching only when
    every replica's matches its own counters; null with the first missing replica's reason. ``measured_hits``:
    the cluster's counted hit tokens (``None``: not every replica was counted)."""
    missing = [r for r in rows if r.prediction is None or r.prediction.predicted_hit_tokens is None]
    if missing:
        first = missing[0]
        why = first.prediction.reason if first.prediction is not None else None
        return Prediction(shape=CLUSTER_NONE, per_replica=True, reason=f"{first.name}: {why or 'no prediction'}")
    preds = [r.prediction for r in rows if r.prediction is not None]  # every one: none is missing
    hits = sum(p.predicted_hit_tokens or 0 for p in preds)
    queries = sum(p.predicted_query_tokens or 0 for p in preds)
    return Prediction(
        shape=CLUSTER, predicted_hit_tokens=hits, predicted_query_tokens=queries,
        predicted_hit_rate=hits / queries if queries else None, per_replica=True, block_size=preds[0].block_size,
        capacity_blocks=[_pool(p) for p in preds],
        policy=preds[0].policy, engine_model=preds[0].engine_model,
        predicted_evictions=sum(p.predicted_evictions or 0 for p in preds),
        in_phase_reuse_tokens=sum(p.in_phase_reuse_tokens or 0 for p in preds),
        simulated_warmup_prompts=sum(p.simulated_warmup_prompts or 0 for p in preds),
        judged=True, exact_expected=all(p.exact_expected for p in preds),
        caveats=[f"{r.name}: {c}" for r in rows if r.prediction is not None for c in r.prediction.caveats],
        measured_hit_tokens=measured_hits, difference_tokens=None if measured_hits is None else measured_hits - hits,
        matches_measured=None if measured_hits is None else all(p.matches_measured for p in preds),
        replicas_matching=sum(bool(p.matches_measured) for p in preds))


def _pool(prediction: Prediction) -> int | None:
    """One replica's pool (a pool's prediction has one number, never the cluster's list)."""
    capacity = prediction.capacity_blocks
    return None if isinstance(capacity, list) else capacity


def measure_routings(run: GroupRun, servers: Sequence, policies: Sequence[str] = ROUTINGS) -> RoutingComparison:
    """The same requests (``run``) on the same replicas once per routing policy (caches reset before each): each
    policy's measured cluster hit rate and TTFT p50, its prediction, and what it loses against the best measured
    one."""
    measured = {}
    for policy in policies:
        m = GroupRecord.from_json(run_replica_group(run, servers, check_routing(policy)).to_json())
        measured[policy] = PolicyRun(m.status or "failed", m.error, m.hit_rate, m.hit_rate_evidence,
                                     m.prediction.predicted_hit_rate, m.prediction.matches_measured,
                                     percentile(m.aggregates, "ttft_ms"), [r.get("hit_tokens") for r in m.replicas],
                                     m.routing.get("placement"))
    hits = {p: v.hit_rate for p, v in measured.items() if v.hit_rate is not None}
    ttfts = {p: v.ttft_p50_ms for p, v in measured.items() if v.ttft_p50_ms is not None}
    policies_run = {policy: replace(v, hit_rate_lost_to_best=max(hits.values()) - hits[policy] if policy in hits
                                    else None,
                                    ttft_p50_lost_to_best_ms=ttfts[policy] - min(ttfts.values()) if policy in ttfts
                                    else None)
                    for policy, v in measured.items()}
    return RoutingComparison(len(servers), policies_run, max(hits, key=lambda p: hits[p]) if hits else None,
                             min(ttfts, key=lambda p: ttfts[p]) if ttfts else None)
