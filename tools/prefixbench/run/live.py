"""The one live-run engine: every command against a running server runs its phases here.

``hitrate`` (one server, several engines, or replicas placed by the client or a router), ``sessions``,
``replay`` and ``isolation`` share the phases and their error handling:

1. **start**: the run's context (``Live``) and the result's common sections;
2. **probe**: the model is served (on every replica the client places on), the metrics answer, block size,
   pool size (``--kv-blocks`` must agree with what the server publishes: refused otherwise), context length,
   vLLM version; with ``kv_events`` the publisher connects;
3. **reset**: the prefix cache emptied where the server allows it (every replica's);
4. **prefill** (optional): one request per distinct prefix;
5. **measure**: counters before, the command's traffic (``send`` for a planned batch, ``send_async`` /
   ``send_one`` one request at a time), counters after once they settle (and the KV events);
6. **finish**, then **evidence** (``measured``: counters first, per-request usage second), **prediction**
   (``predict``: ``simulate.predict`` on the exact token ids in server order, the prefill first; one pool per
   replica with replicas) and **attribution** (``attribution``: why each request hit what it did).

``guarded`` runs a command's phases: Ctrl-C or a server problem becomes the run's status and error (after one
last scrape of what the measured phase did), never a crash; bad input still raises ``InputError`` (exit 1).
A command adds only its workload and its report section. vLLM is asked to stream each request's generated
token ids (``"return_token_ids": true``) so the engine model can replay them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Mapping, Sequence

import requests

from .. import evidence
from ..cache.engine_pool import rules_for
from ..core.attribution_records import Attribution
from ..core.auth import auth_headers
from ..core.bounds import DEFAULT_REQUEST_TIMEOUT_S
from ..core.errors import InputError
from ..core.kv_event_records import KvEventCheck, KvEventSection
from ..core.live_records import CounterDelta, Evidence, HitRates, Prediction
from ..core.live_results import LiveRunResult
from ..core.provenance import environment_snapshot, now
from ..core.replica_records import ReplicaRow
from ..core.request_rows import RequestRow, rows_of
from ..core.sections import section
from ..core.termination import check_terminated, forget_arrivals
from ..core.timeline_records import TimelineSection
from ..measure import client, metrics as prom
from ..measure.endpoints import base_url_of, check_model, server_version
from ..measure.kv_events import REPORT_HITS_BODY, KvEventRecorder
from ..serve.control import reset_any_prefix_cache
from ..simulate.attribution import attribute
from ..simulate.block_events import compare_block_events
from ..simulate.overlap import MAX_REQUESTS, Reference, SentRequest, timeline_section
from ..simulate.pool_size import check_pool_fits, check_published_pool
from ..simulate.block_events import EngineReplay
from ..simulate.predict import RunConditions, judged, predict_pool
from ..workload.salts import salted_prompts
from .replicas import (Replicas, cluster_prediction, phase_targets, placement_known, placement_observer,
                       plan_client_placement, replica_cache_configs, replica_rows, reset_replicas)

TOKEN_IDS_BODY = client.TOKEN_IDS_BODY
PREFILL_MAX_TOKENS = 1
"""A prefill request generates one token: its prompt's full blocks are cached, its output never is."""
CUT = "not finished when the deadline of"
"""How ``measure.client`` begins the error of a request the deadline cut."""


@dataclass
class Live:
    """One live run: where the server is, the result being built, and what was sent and measured so far."""

    base_url: str
    model: str
    urls: list[str]
    """The Prometheus endpoints (one per engine, or per replica)."""
    result: LiveRunResult
    on_update: Callable[[dict], None] | None = None
    """Called with the result as JSON whenever a phase begins (the CLI writes it)."""
    timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S
    kv_blocks: int | None = None
    """``--kv-blocks``: the pool the server was started with; refused when the server publishes another."""
    replicas: Replicas | None = None
    """Several replicas (``run.replicas``): where each request goes, and each one's counters."""
    untouched: bool = False
    """The probe's scrape said every server had served nothing yet (``measure.metrics.untouched``): without a
    cache reset, its cache still holds only what this run sends, which the prediction simulates."""
    recorder: KvEventRecorder | None = None
    collected: list = field(default_factory=list)
    """The measured phase's results, each appended as it ends (an interrupted run keeps the finished ones)."""
    prefill_requests: list = field(default_factory=list)
    prefill_results: list = field(default_factory=list)
    replica_rows: list[ReplicaRow] = field(default_factory=list)
    """With replicas, each one's row once the run predicted it (``_predict_replicas``)."""
    twin: str | None = None
    """``vllm``: the overlap timeline is replayed through vLLM's own scheduler too (``twin.vllm_core``)."""
    before: list | None = None
    after: list | None = None
    phase_started: float | None = None
    requests_end: float | None = None
    """``time.monotonic()`` when the deadline cuts the requests still running (None: no deadline)."""
    ends_at: float | None = None
    """The deadline plus one request timeout: nothing (no scrape, no wait) runs past it."""
    scrape_s: float = prom.SCRAPE_TIMEOUT_S
    started: float = field(default_factory=time.perf_counter)

    def enter(self, phase: str) -> None:
        self.result.phase = phase
        self.update()

    def update(self) -> None:
        if self.on_update is not None:
            self.on_update(self.result.to_json())

    @property
    def server(self) -> dict:
        return self.result.server

    def warn(self, text: str) -> None:
        self.result.warnings.append(text)

    def limit(self, deadline_s: float | None) -> None:
        """Start the clock: a deadline bounds the whole run (probe, prefill, measured phase, every scrape); the
        last scrape after the requests were cut gets one request timeout more. A scrape waits at most one
        request timeout, so a silent ``/metrics`` cannot hold the run."""
        limits = prom.scrape_limits(self.timeout_s, deadline_s)
        self.scrape_s, self.ends_at = limits["scrape_timeout_s"], limits["ends_at"]
        self.requests_end = None if self.ends_at is None else self.ends_at - self.timeout_s

    def left(self, cap_s: float | None = None) -> float | None:
        """Seconds until the requests' deadline (>= 0, at most ``cap_s``); None without a deadline or cap."""
        if self.requests_end is None:
            return cap_s
        return max(0.0, prom.time_left(cap_s if cap_s is not None else float("inf"), self.requests_end))

    def scrape(self, settle: bool = False) -> list:
        """The counters now (``settle``: once two scrapes agree), each scrape within the run's limits."""
        if settle:
            return prom.settled_snapshot(self.urls, scrape_timeout_s=self.scrape_s, ends_at=self.ends_at)
        return prom.snapshot(self.urls, self.scrape_s, self.ends_at)


def start(schema: str, *, endpoint: str, model: str, metrics: Sequence[dict], config: Mapping,
          on_update: Callable[[dict], None] | None = None, timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S,
          deadline_s: float | None = None, kv_blocks: int | None = None, replicas: Replicas | None = None,
          kv_events: str | None = None) -> Live:
    """A new run's context with the result's common sections; ``config`` is the command's own part."""
    base_url = base_url_of(endpoint)
    result = LiveRunResult(schema, now(), {"endpoint": endpoint, "base_url": base_url, "model": model,
                                           "metrics_endpoints": list(metrics), "request_timeout_s": timeout_s,
                                           **config})
    live = Live(base_url, model, [m["url"] for m in metrics], result, on_update, timeout_s, kv_blocks, replicas)
    live.limit(deadline_s)
    live.recorder = KvEventRecorder(kv_events).start() if kv_events else None
    return live


def guarded(live: Live, phases: Callable[[], None]) -> str:
    """Run ``phases``; Ctrl-C or a server problem becomes the run's status and error, never a crash (bad input
    still raises ``InputError``: exit 1). The KV-event receiver stops either way."""
    try:
        phases()
        check_terminated()  # a SIGTERM a finalizer swallowed on the way is still an interruption
        return "ok"
    except KeyboardInterrupt:
        forget_arrivals()  # this interruption is handled here: no later step raises it again
        live.result.error = f"interrupted during {live.result.phase or 'setup'}"
        _stop_measuring(live)
        return "interrupted"
    except InputError:
        raise
    except Exception as exc:  # the server refused, died or answered nonsense: a result, not a crash
        live.result.error = f"{type(exc).__name__}: {exc}"
        _stop_measuring(live, timed=False)
        return "failed"
    finally:
        if live.recorder is not None:
            live.recorder.stop()


def _stop_measuring(live: Live, timed: bool = True) -> None:
    """After an interrupt or a failure: one last snapshot of what the measured phase did, if it began."""
    if live.phase_started is None or live.after is not None:
        return
    live.after = live.scrape()
    if timed:
        live.result.timing["bench_s"] = time.perf_counter() - live.phase_started


# ------------------------------------------------------------------------------------------------- probe

def probe(live: Live, block_size: int | None = None, fits: Sequence[tuple[int, int, str]] = ()) -> None:
    """The model is served; the metrics answer; block size, pool size, context length and vLLM version are known
    (or why not). ``fits``: ``(prompt tokens, output tokens, id)`` of every request known before any is sent,
    each checked against the pool."""
    for url in _served_urls(live):
        preflight = check_model(url, live.model, timeout_s=live.left(live.scrape_s) or 0.001)
        live.result.phases["preflight"] = preflight
        if not preflight["reachable"]:
            raise ConnectionError(preflight["detail"])
    snapshots = live.scrape()
    live.untouched = prom.untouched(snapshots)
    info = prom.cache_config(snapshots)
    if live.replicas is not None:
        info = replica_cache_configs(live.replicas, snapshots, live.result.warnings)
    size, source, warning = prom.block_size_of(info, block_size)
    backend = prom.detect_backend(snapshots)
    live.result.server = {
        "backend": backend, "cache_config": info or None, "block_size": size, "block_size_source": source,
        "caching_enabled": info.get("enable_prefix_caching") if info else None,
        "max_model_len": max_model_len(live.base_url, live.model, live.scrape_s),
        "vllm_version": server_version(live.base_url, live.left(min(5.0, live.scrape_s)) or 0.001)
        if backend == "vllm" else None, "metrics_errors": [s.error for s in snapshots if not s.ok]}
    if warning:
        live.warn(warning)
    for s in snapshots:
        if not s.ok:
            live.warn(f"metrics: {s.error}; counters are unavailable, per-request cached_tokens are the evidence")
    _check_pool(live, size, fits)
    _connect_events(live)


def _served_urls(live: Live) -> list[str]:
    """Where the model must be served: the endpoint, or every replica the client places requests on."""
    if live.replicas is not None and live.replicas.mode == "client":
        return [url for url in live.replicas.base_urls if url is not None]  # client placement: all known
    return [live.base_url]


def max_model_len(base_url: str, model: str, timeout_s: float = 10.0) -> int | None:
    """The served context length from vLLM's ``/v1/models`` (``max_model_len``), ``None`` when not published."""
    try:
        data = requests.get(base_url + "/v1/models", timeout=timeout_s, headers=auth_headers()).json().get("data") or []
    except (requests.RequestException, ValueError, AttributeError):
        return None
    for entry in data if isinstance(data, list) else []:
        if isinstance(entry, dict) and entry.get("id") == model:
            value = entry.get("max_model_len")
            return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
    return None


def _check_pool(live: Live, block_size: int | None, fits: Sequence[tuple[int, int, str]]) -> None:
    """``--kv-blocks`` against what the server publishes (a contradiction is refused: the prediction would model
    another pool), and every known request against the pool, before any request: a request that cannot fit
    would be refused or preempted forever."""
    server = live.server
    info = server["cache_config"]  # what the server published (None: no vllm:cache_config_info)
    published = info.get("num_blocks") if info else None
    check_published_pool(live.kv_blocks, published)
    server["num_blocks"] = published if published is not None else live.kv_blocks
    server["num_blocks_source"] = ("server (vllm:cache_config_info num_gpu_blocks)" if published is not None
                                   else "--kv-blocks (the server does not publish its pool size)"
                                   if live.kv_blocks is not None else None)
    if block_size and server["num_blocks"] and fits:
        check_pool_fits(list(fits), block_size, server["num_blocks"],
                        flag="--kv-blocks" if live.kv_blocks is not None else "the server's num_gpu_blocks")


def _connect_events(live: Live) -> None:
    wait = live.left(10.0)
    if live.recorder is not None and not live.recorder.wait_connected(10.0 if wait is None else wait):
        live.warn(f"no KV-event publisher connected to {live.recorder.endpoint} within 10 s: start vLLM with "
                  "--kv-events-config pointing at it")


# ------------------------------------------------------------------------------------------ reset, prefill

def reset(live: Live, wanted: bool, log: Callable[[str], None] = lambda _: None) -> bool:
    """Empty the server's (every replica's) prefix cache when ``wanted``; ``True`` when it is known to be empty."""
    if not wanted:
        live.result.phases["reset"] = {"status": "skipped"}
        return False
    live.result.phases["reset"] = outcome = (
        reset_any_prefix_cache(live.base_url, ends_at=live.ends_at) if live.replicas is None
        else reset_replicas(live.replicas, lambda url: reset_any_prefix_cache(url, ends_at=live.ends_at)))
    if outcome["status"] != "ok":
        live.warn(f"cache reset {outcome['status']} ({outcome['detail']}): the baseline may not be clean; earlier "
                  "traffic still in the cache can raise the measured hit rate")
        log(f"warning: {live.result.warnings[-1]}")
    return outcome["status"] == "ok"


def reset_ok(live: Live) -> bool:
    return section(live.result.phases, "reset").get("status") == "ok"


def prefill(live: Live, prefixes: Sequence[Sequence[int]], placed_later: Sequence[dict] = ()) -> None:
    """One request per distinct prefix, so the measured phase starts with every prefix cached. With client
    placement the prefill and the measured requests (``placed_later``) are placed first, on one cluster."""
    phases = live.result.phases
    live.prefill_requests = [{"id": f"prefill{i}", "prompt_token_ids": p, "max_tokens": PREFILL_MAX_TOKENS}
                             for i, p in enumerate(prefixes)]
    if live.replicas is not None and live.replicas.mode == "client":
        plan_client_placement(live.replicas, live.prefill_requests, placed_later, live.server["block_size"] or 16,
                              live.server.get("num_blocks"))
    if not live.prefill_requests:
        return
    live.enter("prefill")
    started = time.perf_counter()
    results, _ = send(live, client.request_specs(live.prefill_requests), phase="prefill")
    live.prefill_results = client.server_order(results)
    failed = [r for r in results if r.status != "ok"]
    phases["prefill"] = {"requests": len(live.prefill_requests), "errors": len(failed),
                         "prefix_tokens": [len(p["prompt_token_ids"]) for p in live.prefill_requests]}
    live.result.timing["prefill_s"] = time.perf_counter() - started
    if failed:
        if len(failed) == len(results):
            raise ConnectionError(f"every prefill request failed (first: {failed[0].error})")
        live.warn(f"{len(failed)} prefill requests failed: their prefixes start cold")


# ---------------------------------------------------------------------------------------- measured phase

def measure(live: Live, traffic: Callable[[], float | None]) -> None:
    """The measured phase: counters before, ``traffic`` (the command's requests; returns the phase's duration,
    or None to time it here), counters after once they settle, and the last KV events."""
    live.before = live.scrape()
    live.enter("measure")
    live.phase_started = time.perf_counter()
    duration = traffic()
    live.result.timing["bench_s"] = time.perf_counter() - live.phase_started if duration is None else duration
    live.after = live.scrape(settle=True)
    if live.recorder is not None:
        live.recorder.settle(timeout_s=max(0.0, prom.time_left(5.0, live.ends_at)))


def send(live: Live, specs: Sequence[client.RequestSpec], *, phase: str = "measure", concurrency: int = 1,
         request_rate: float | None = None, offsets: Sequence[float] | None = None,
         progress: str | None = None) -> tuple[list, float]:
    """A batch of requests to the endpoint (or each one's replica, or the router), within the deadline; the
    measured phase's results are collected as they end."""
    concurrent = request_rate is not None or concurrency > 1
    results, duration = client.send(
        _targets(live, phase), live.model, specs, concurrency=concurrency, request_rate=request_rate,
        offsets=offsets, progress=progress, collected=live.collected if phase == "measure" else None,
        timeout_s=live.timeout_s, deadline_s=live.left(), extra_body=extra_body(live),
        after_each=None if live.replicas is None else placement_observer(live.replicas, phase, concurrent))
    deadline_s = live.result.config.get("deadline_s")
    for r in results:
        if deadline_s is not None and (r.error or "").startswith(CUT):
            r.error = f"{CUT} {deadline_s:g} s passed (--deadline counts from the start of the run)"
    return results, duration


def _targets(live: Live, phase: str) -> str | list[str]:
    """The endpoint, or (replicas) the router or each request's replica."""
    return live.base_url if live.replicas is None else phase_targets(live.replicas, phase)


def extra_body(live: Live) -> dict | None:
    """vLLM streams the generated token ids when asked (and, with KV events on, publishes its hits); other
    servers get the plain OpenAI body."""
    if live.server.get("backend") != "vllm":
        return None
    return {**TOKEN_IDS_BODY, **REPORT_HITS_BODY} if live.recorder is not None else TOKEN_IDS_BODY


async def send_async(live: Live, spec: client.RequestSpec, t0: float) -> client.RequestResult:
    """One streamed request; its times are on the run's clock (seconds after ``t0``)."""
    results, _ = await client.send_requests_async(live.base_url, live.model, [spec], timeout_s=live.timeout_s,
                                                  extra_body=extra_body(live), origin=t0)
    return results[0]


def send_one(live: Live, spec: client.RequestSpec, t0: float) -> client.RequestResult:
    return client.run_loop(send_async(live, spec, t0))


def counter_pair(before: list | None, after: list | None,
                 sent_prompt_tokens: int | None = None) -> tuple[int | None, int | None]:
    """``(hit tokens, query tokens)`` between two snapshots, ``(None, None)`` when the counters are unusable,
    or when they count more hits than the ``sent_prompt_tokens`` sent in between could hold."""
    if before is None or after is None:
        return None, None
    delta = prom.diff(before, after)
    found = evidence.measure_hit_rate(delta, caching_enabled=None, sent_prompt_tokens=sent_prompt_tokens)
    counters = CounterDelta.of(delta)
    zero_queries = counters.usable and counters.queries == 0
    if found.hit_rate_evidence != evidence.EVIDENCE_METRICS and not zero_queries:
        return None, None
    assert counters.hits is not None and counters.queries is not None  # counted: metrics evidence or 0 queries
    return int(counters.hits), int(counters.queries)


def known_total(values: Iterable[int | None]) -> int | None:
    """The sum of per-request figures, or ``None`` when there are none or one is missing (missing is not zero)."""
    listed = list(values)
    present = [v for v in listed if v is not None]
    return sum(present) if listed and len(present) == len(listed) else None


# ---------------------------------------------------------------------------------------------- finish

def finish(live: Live, status: str) -> None:
    """Status (a finished run with failed requests is ``partial``, with none left ``failed``), environment, times."""
    result = live.result
    result.environment = environment_snapshot()
    result.timing["total_s"] = time.perf_counter() - live.started
    result.finished_at = now()
    failure = client.failure_summary(live.collected)
    if status == "ok" and failure:
        ok = sum(r.status == "ok" for r in live.collected)
        status = "failed" if not ok else "partial"
        result.error = failure
    result.status, result.phase = status, None


# -------------------------------------------------------------------------------------------- evidence

def measured(live: Live, results: Sequence) -> tuple[Evidence, CounterDelta | None]:
    """The measured hit rate of the phase (counters first, per-request usage second) and the counter delta.
    After an interrupt with no finished request the counters saw only cancelled work: the rate is null."""
    delta = prom.diff(live.before, live.after) if live.before is not None and live.after is not None else None
    found = evidence.evidence_of(delta, results, live.server.get("caching_enabled"), fit_sent=True)
    if live.result.status == "interrupted":
        found = _interrupted_evidence(found, results)
    return found, delta


def _interrupted_evidence(found: Evidence, results: Sequence) -> Evidence:
    """After an interrupt the counters may include work of cancelled requests: with no finished request they
    describe nothing the rows show, so the measured rate is null; otherwise it stands, with the warning."""
    if not any(r.status == "ok" for r in results):
        return replace(found, hit_rate=None, hit_rate_evidence=evidence.EVIDENCE_REQUIRED, hit_tokens=None,
                       query_tokens=None,
                       hit_rate_reason="interrupted before any request finished: the counters only saw cancelled work")
    return replace(found, hit_rate_reason=("interrupted: requests still in flight were cancelled, so the counters "
                                           "may include work the rows do not show; " + (found.hit_rate_reason or "")))


def hit_rates(prediction: Prediction | None, found: Evidence | None) -> HitRates:
    """Predicted and measured side by side, in the ``hitrate`` result's shape (no target for live traffic)."""
    return HitRates.of(prediction, found)


def request_rows(ordered: Sequence, per_id: Mapping, extra: Mapping[str, Mapping] | None = None) -> list[RequestRow]:
    """Result rows: the client's row, the predicted hit tokens and whatever ``extra[id]`` adds."""
    extra = extra or {}
    return [r.as_row().with_columns(**{"predicted_hit_tokens": per_id.get(r.id), **extra.get(r.id, {})})
            for r in ordered]


# ------------------------------------------------------------------------------------------ prediction

@dataclass(frozen=True)
class Sent:
    """What the measured phase sent, in server order, for the prediction and the attribution."""

    ordered: Sequence
    """The phase's ``RequestResult`` rows in the order the server received them."""
    prompts: Mapping[str, Sequence[int]]
    """Each request's prompt token ids, by id."""
    sequential: bool
    """One request at a time (the engine model's replay is then exact)."""
    salts: Mapping[str, str | None] | None = None
    """Each request's ``cache_salt``, by id (folded into the first block's key)."""

    def prompts_in_order(self, rows: Sequence[RequestRow] | None = None) -> list[list[int]]:
        ids = [r.id for r in (self.ordered if rows is None else rows)]
        salts = self.salts or {}
        return salted_prompts([self.prompts[i] for i in ids], [salts.get(i) for i in ids])


def predict(live: Live, sent: Sent, found: Evidence,
            delta: CounterDelta | None) -> tuple[Prediction, dict[str, int], EngineReplay | None]:
    """The judged prediction, each request's predicted hit tokens (by id), and the engine model's replay (for
    the KV events). With replicas, one pool per replica, each judged against that replica's own counters."""
    if not live.server.get("block_size"):
        return Prediction.unpredicted("the server's block size is unknown (it publishes no vllm:cache_config_info): "
                                      "pass --block-size (SGLang: its page size, default 1)"), {}, None
    if live.replicas is not None:
        return _predict_replicas(live, sent, found.hit_tokens)
    info = live.server.get("cache_config") or {}
    conditions = _conditions(live, failed=sum(r.status != "ok" for r in sent.ordered), sequential=sent.sequential,
                             cache_info=info, delta=delta, engines=max(len(live.urls), info.get("engines") or 1),
                             history_known=reset_ok(live) or live.untouched)
    prediction, per_id, replay = _predict_pool(live, sent, sent.ordered, range(len(live.prefill_requests)),
                                               live.server.get("num_blocks"))
    return judged(prediction, conditions, found.hit_tokens, found.query_tokens), per_id, replay


def _conditions(live: Live, *, failed: int, sequential: bool, cache_info: Mapping,
                delta: CounterDelta | Mapping | None,
                engines: int, history_known: bool) -> RunConditions:
    return RunConditions(
        overlapping=not sequential, failed_requests=failed, unknown_earlier_traffic=not history_known,
        caching_enabled=cache_info.get("enable_prefix_caching"), engines=engines,
        preemptions=CounterDelta.of(delta).preemptions,
        backend=live.server.get("backend"), interrupted=live.result.status == "interrupted")


def _predict_pool(live: Live, sent: Sent, ordered: Sequence, earlier: Sequence[int],
                  num_blocks: int | None) -> tuple[Prediction, dict[str, int], EngineReplay | None]:
    """One pool's prediction (not judged yet) for the ``ordered`` results after the ``earlier`` prefill
    requests (their indexes), with the vLLM release's rules noted."""
    mine = Sent(ordered, sent.prompts, sent.sequential, sent.salts)
    prediction, replay = predict_pool(
        mine.prompts_in_order(), live.server["block_size"], num_blocks,
        [live.prefill_requests[i]["prompt_token_ids"] for i in earlier],
        outputs=[r.output_token_ids for r in ordered],
        warmup_outputs=[live.prefill_results[i].output_token_ids for i in earlier],
        sequential=sent.sequential, record_events=live.recorder is not None, report_hits=live.recorder is not None)
    hits = prediction.per_request_hit_tokens
    per_id = {} if hits is None else dict(zip((r.id for r in ordered), hits, strict=True))
    prediction.per_request_hit_tokens = None  # moved to the rows
    engine = prediction.engine_model
    if live.server.get("backend") == "vllm" and engine is not None:
        rules = rules_for(live.server.get("vllm_version"))
        prediction.engine_model = engine = replace(engine, rules=rules)
        if rules["note"] and engine.used and rules["note"] not in live.result.warnings:
            live.warn(rules["note"])
    return prediction, per_id, replay


def _predict_replicas(live: Live, sent: Sent,
                      measured_hits: float | None) -> tuple[Prediction, dict[str, int], None]:
    """One pool per replica, each fed the requests the placement sent it (prefill first), judged against that
    replica's own counters; the cluster's prediction is their sum."""
    replicas, per_id = live.replicas, {}
    assert replicas is not None
    rows = []
    for row in replica_rows(replicas, live.before, live.after, sent.ordered):
        if row.prediction is None and not placement_known(replicas, len(sent.prompts)):
            row = replace(row, prediction=Prediction.unpredicted(replicas.placement_reason
                                                                 or "the placement was not observed"))
        elif row.prediction is None:
            info = row.cache_config or {}
            mine = [r for r in sent.ordered if replicas.placement[r.index] == row.replica]
            earlier = [i for i, where in enumerate(replicas.prefill_placement) if where == row.replica]
            prediction, mine_ids, _ = _predict_pool(live, sent, mine, earlier, info.get("num_blocks"))
            per_id.update(mine_ids)
            conditions = _conditions(live, failed=sum(r.status != "ok" for r in mine), sequential=sent.sequential,
                                     cache_info=info, delta=row.counters, engines=info.get("engines") or 1,
                                     history_known=live.untouched or (row.reset is not None
                                                                      and row.reset.get("status") == "ok"))
            row = replace(row, prediction=judged(prediction, conditions, row.hit_tokens, row.query_tokens))
        rows.append(row)
    live.replica_rows = rows
    live.result.put(replicas=rows)
    return cluster_prediction(rows, measured_hits), per_id, None


def kv_events(live: Live, replay: EngineReplay | None, ordered: Sequence,
              prediction: Prediction) -> KvEventSection | None:
    """The KV-event replay against the engine model, or why there is none (null: no events were asked for)."""
    recorder = live.recorder
    if recorder is None:
        return None
    if replay is None:
        engine = prediction.engine_model
        reason = (engine.reason if engine is not None else None) or "no prediction"
        check = KvEventCheck("not_comparable", f"the engine model did not run: {reason}")
    else:
        names = [r["id"] for r in live.prefill_requests] + [r.id for r in ordered]
        check = compare_block_events(recorder.batches, replay, names, gaps=recorder.gaps, reset=reset_ok(live))
    return KvEventSection(recorder.endpoint, recorder.errors[:5], check)


def timeline(live: Live, sent: Sent) -> TimelineSection | None:
    """Requests that overlapped, replayed on the engine's timeline from what the client observed (``None``
    for a one-at-a-time run, whose send-order prediction is already exact; ``not_run`` with the reason)."""
    if sent.sequential or live.replicas is not None:
        return None
    reason = _timeline_blocked(live, sent)
    if reason:
        return TimelineSection.not_run(reason)
    earlier = [SentRequest(p["prompt_token_ids"], r.output_token_ids or [], 0.0, [], alone=True)
               for p, r in zip(live.prefill_requests, live.prefill_results, strict=True)]
    mine = [SentRequest(prompt, r.output_token_ids, r.sent_at_s or 0.0, r.stream_chunks)
            for prompt, r in zip(sent.prompts_in_order(), sent.ordered, strict=True)]
    recorder = live.recorder
    events_reason = None if recorder is None else (
        "the cache was not reset: the events cannot be aligned" if not reset_ok(live) else
        f"{len(recorder.gaps)} event batches were lost" if recorder.gaps else None)
    return timeline_section([r.id for r in sent.ordered], mine, [r.cached_tokens for r in sent.ordered],
                            live.server["block_size"], live.server["num_blocks"], earlier=earlier,
                            earlier_ids=[p["id"] for p in live.prefill_requests],
                            batches=recorder.batches if recorder is not None and events_reason is None else None,
                            events_reason=events_reason or "no KV events recorded (pass --kv-events)",
                            reference=_vllm_reference() if live.twin == "vllm" else None)


def _vllm_reference() -> Reference:
    """vLLM's own scheduler, driven in-process, as the overlap timeline's reference (imported only when asked)."""
    from ..twin.vllm_core import replay_requests

    return replay_requests


def _timeline_blocked(live: Live, sent: Sent) -> str | None:
    if live.server.get("backend") != "vllm":
        return "the timeline follows vLLM's scheduler; this server is not vLLM"
    if not live.server.get("block_size") or not live.server.get("num_blocks"):
        return "the server's block size or pool size is unknown (pass --kv-blocks)"
    if any(r.status != "ok" for r in [*sent.ordered, *live.prefill_results]):
        return "some requests failed: the server ran what the client cannot replay"
    if any(r.output_token_ids is None for r in [*sent.ordered, *live.prefill_results]):
        return "the server did not stream the generated token ids (return_token_ids)"
    if len(sent.ordered) + len(live.prefill_results) > MAX_REQUESTS:
        return f"more than {MAX_REQUESTS} requests: the arrival search is quadratic"
    return None


# ----------------------------------------------------------------------------------------- attribution

def attribution(live: Live, sent: Sent, rows: Sequence[RequestRow | Mapping],
                delta: CounterDelta | None) -> Attribution | None:
    """Per request: what no cache could reuse and why, and the cause of each difference from the prediction."""
    size = live.server.get("block_size")
    if not size:
        return None
    preemptions = CounterDelta.of(delta).preemptions
    rows = rows_of(rows)
    return attribute(sent.prompts_in_order(rows), rows, size, preemptions=preemptions,
                     earlier=[p["prompt_token_ids"] for p in live.prefill_requests])
