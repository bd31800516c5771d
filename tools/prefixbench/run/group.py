"""The G0 / G1 experiment's phases, for one group on one server (``run_group``), on replicas
(``run.replicas``) or for both groups interleaved (``run.interleave``): warm up, reset, measure, judge, record.

1. warm-up requests that share no prefix with the workload (compilation and allocator warm-up are paid here:
   ``warm_up``);
2. reset the prefix cache (empty cache for the measured phase), record whether the server allowed it;
3. snapshot the backend counters (a ``kv_blocks`` the server contradicts is refused here, before the measured
   requests, as every live command refuses it), run the measured phase (token-id prompts, fixed concurrency or
   rate) while sampling the server's memory, snapshot the counters again once they settle (``measure_servers``:
   steps 2-3 on every server of the step);
4. the hit rate from the counter deltas (``evidence``), and the prediction (``simulate.predict``) for the exact
   token ids in the order the server received them, with its exactness verdict (``record``, ``predict_group``);
5. one manifest (schema ``prefixbench.backend_group/1``), returned; the caller writes it.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, replace
from typing import Callable, Mapping, Sequence, TypeVar

from .. import evidence
from ..core.bounds import DEFAULT_DEADLINE_S, DEFAULT_REQUEST_TIMEOUT_S, TIMEOUT_S
from ..core.errors import InputError, require_int
from ..core.group_records import Aggregates, GroupRunManifest, GroupMeasurement
from ..core.live_records import CounterDelta, Evidence, Prediction
from ..core.provenance import environment_snapshot, now
from ..measure import client, metrics
from ..measure.memory import MemorySampler, NotSampled, sampler_for
from ..serve.control import reset_prefix_cache
from ..serve.server import ServerHandle
from ..simulate.pool_size import check_published_pool
from ..simulate.predict import RunConditions, judged, predict_pool
from ..workload.generate import Workload, generate_shared_prefix_workload

@dataclass(frozen=True)
class GroupRun:
    """What one group is asked to run, on one server or on replicas: the parameter object every step of the
    group reads (as SGLang's ``CacheInitParams`` are), instead of a relay of positional parameters."""

    model: str
    requests: Sequence[dict]
    group: Mapping
    warmup: int = 1
    concurrency: int = 1
    request_rate: float | None = None
    progress: bool = True
    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S
    deadline_s: float | None = DEFAULT_DEADLINE_S
    block_size: int | None = None
    """Overrides what ``vllm:cache_config_info`` reports (for servers without it)."""
    config: Mapping | None = None
    label: str | None = None
    environment: Mapping | None = None

    def __post_init__(self) -> None:
        """Every group run is checked where it is made, whoever makes it (``InputError`` names the field)."""
        check_group_settings(warmup=self.warmup, concurrency=self.concurrency,
                             request_timeout_s=self.request_timeout_s, deadline_s=self.deadline_s)

    @property
    def sequential(self) -> bool:
        return self.concurrency == 1 and self.request_rate is None

    @property
    def progress_label(self) -> str | bool:
        return self.progress and self.group["name"]

    @property
    def kv_blocks(self) -> int | None:
        """The pool the experiment asked every server for (``--kv-blocks``), ``None`` when it did not."""
        return self.config.get("kv_blocks") if self.config else None


def check_group_settings(*, warmup: int, concurrency: int | None, request_timeout_s: float,
                         deadline_s: float | None) -> None:
    """What every ``GroupRun`` is checked against, for a caller that checks before it starts any server
    (``concurrency=None``: a sweep, whose load points ``sweep.load_points`` checks)."""
    require_int("warmup", warmup, minimum=0)
    if concurrency is not None:
        require_int("concurrency", concurrency, minimum=1)
    TIMEOUT_S.check("request_timeout_s", request_timeout_s)
    if deadline_s is not None:
        TIMEOUT_S.check("deadline_s", deadline_s)


@dataclass(frozen=True)
class MeasuredPhase:
    """What the prediction reads of one server's measured phase: its rows, its reset, its cache config, the
    failed requests (``aggregates``), counters and evidence (``run.replicas`` builds one per replica)."""

    results: Sequence[client.RequestResult]
    reset: Mapping
    cache_info: Mapping | None
    aggregates: Aggregates
    delta: CounterDelta | None
    found: Evidence
    history_known: bool
    """The server held only what this run sent it (``history_known``): with a failed reset, its warm-up is
    simulated and the prediction stays exact; otherwise earlier traffic is unknown (a caveat)."""

    @property
    def failed_requests(self) -> int:
        return self.aggregates.error_count


@dataclass(frozen=True)
class ServerPhase:
    """What one server's measured phase gave before it is judged: what was sent (results, rows, aggregates),
    the reset, the cache config and counter delta (``measure.metrics``, from the server), the memory sampler."""

    sent: client.SentPhase
    reset: Mapping
    cache_info: Mapping | None
    delta: CounterDelta
    sampler: MemorySampler | NotSampled
    history_known: bool
    """``history_known``'s answer for the server, before its warm-up."""

    @property
    def results(self) -> Sequence[client.RequestResult]:
        return self.sent.results
WARMUP_SEED = 1_000_003
"""Seed of the warm-up prompts: random ids that share no full block with any workload (checked at run time)."""


def select_requests(workload: Workload, num_prompts: int | None, max_tokens: int | None) -> list[dict]:
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


def run_group(run: GroupRun, base_url: str, *, metrics_urls: Sequence[str] | None = None,
              server: ServerHandle | None = None) -> GroupRunManifest:
    """Benchmark one group (``run``: what it sends and how) against a running server and return its manifest
    (not written here: the caller writes ``to_json()``).

    ``server`` (a ``VllmServer``) is optional: with it, memory is sampled and a crash is reported with the
    server's exit code. ``metrics_urls``: the server's Prometheus endpoints (default: ``base_url/metrics``). A
    failure anywhere gives ``status: failed`` and ``error``; what was measured before it is kept.
    """
    metrics_urls = list(metrics_urls or [base_url.rstrip("/") + "/metrics"])
    manifest = new_manifest(run, base_url, metrics_urls, server)
    try:
        known = history_known(run, metrics_urls)
        warm = warm_up(base_url, run.model, run.requests, run.warmup, manifest.phases,
                       timeout_s=run.request_timeout_s)
        measured = _measure(run, base_url, metrics_urls, server, manifest.phases, known)
    except InputError:
        raise
    except Exception as exc:  # the server died, refused, or answered nonsense: a result, not a crash
        failed_before_measuring(manifest, exc, server)
        return manifest
    record(manifest, measured, run, warm)
    finish(manifest, client.failure_summary(measured.results), server)
    return manifest


def new_manifest(run: GroupRun, base_url: str, metrics_urls: Sequence[str], server: ServerHandle | None,
                 replicas: Sequence[ServerHandle] | None = None) -> GroupRunManifest:
    """The manifest a group's run begins with (``replicas``: every replica's server, on replica runs)."""
    config = {**(run.config or {}), "base_url": base_url, "model": run.model, "num_prompts": len(run.requests),
              "concurrency": run.concurrency, "request_rate": run.request_rate, "warmup": run.warmup,
              "metrics_urls": list(metrics_urls)}
    return GroupRunManifest(
        label=run.label or run.group["name"], group=run.group, config=config,
        server=server.describe() if server is not None else None,
        environment=run.environment if run.environment is not None else environment_snapshot(), started_at=now(),
        replica_servers=[s.describe() for s in replicas] if replicas is not None else None)


def failed_before_measuring(manifest: GroupRunManifest, exc: Exception, *servers: ServerHandle | None) -> None:
    """A run that stopped before its measurement ended: failed with the exception, the hit rate null with the
    reason, and the first of ``servers`` that exited named with its log tail."""
    manifest.fail(f"{type(exc).__name__}: {exc}",
                  evidence.unmeasured_hit_rate("the group failed before its measurement ended"), now())
    for server in servers:
        if manifest.server_log_tail is None:
            note_server_exit(manifest, server)


def finish(manifest: GroupRunManifest, failure: str | None, server: ServerHandle | None) -> None:
    """The measured phase ended: ok, or failed naming the failed requests (and the server, if it exited)."""
    manifest.finish(failure, now())
    if failure:
        note_server_exit(manifest, server)


def warm_up(base_url: str, model: str, requests: Sequence[dict], warmup: int, phases: dict, *,
            timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S) -> list[dict]:
    """``warmup`` requests that share no block with the workload, recorded in ``phases``; refused on any error.
    ``timeout_s``: what one request may take (the run's ``--request-timeout``)."""
    warm = warmup_requests(warmup, requests)
    if warm:
        sent = client.send_phase(base_url, model, warm, concurrency=1, progress=False, timeout_s=timeout_s)
        phases["warmup"] = {"requests": len(warm), "errors": sent.aggregates.error_count,
                            "duration_s": sent.aggregates.duration_s}
        if sent.aggregates.error_count:
            raise RuntimeError(f"warm-up failed: {sent.results[0].error or 'see rows'}")
    return warm


@dataclass(frozen=True)
class Counted:
    """One server's side of a measured phase: its cache reset, its cache config (scraped before the phase) and
    its counter delta (``measure.metrics.diff``: a failed scrape is one of its ``problems``)."""

    reset: dict
    cache_info: dict | None
    delta: CounterDelta


Sent = TypeVar("Sent")


def measure_servers(run: GroupRun, base_urls: Sequence[str], metrics_urls: Sequence[Sequence[str]],
                    traffic: Callable[[list[dict | None]], Sent], *,
                    samplers: Sequence[AbstractContextManager] = (),
                    on_reset: Callable[[list[dict]], None] = lambda _: None) -> tuple[Sent, list[Counted]]:
    """The measured phase on every server of one step: reset each cache (``on_reset`` records the outcomes at
    once, so a failure later keeps them), snapshot each server's counters, refuse a ``kv_blocks`` a server
    contradicts, send ``traffic`` (given each server's cache config) while ``samplers`` sample memory, snapshot
    each again once its counters settle. Returns what ``traffic`` sent and each server's ``Counted``."""
    resets = [reset_prefix_cache(url) for url in base_urls]
    on_reset(resets)
    limits = metrics.scrape_limits(run.request_timeout_s, run.deadline_s)  # a scrape never holds it
    before = [metrics.snapshot(list(urls), limits["scrape_timeout_s"]) for urls in metrics_urls]
    infos = [metrics.cache_config(snapshots) for snapshots in before]
    for url, info in zip(base_urls, infos, strict=True):
        check_published_pool(run.kv_blocks, info.get("num_blocks") if info else None, where=f"the server at {url}")
    with ExitStack() as stack:
        for sampler in samplers:
            stack.enter_context(sampler)
        sent = traffic(infos)
    after = [metrics.settled_snapshot(list(urls), timeout_s=10.0, **limits) for urls in metrics_urls]
    return sent, [Counted(reset, info, metrics.diff(b, a))
                  for reset, info, b, a in zip(resets, infos, before, after, strict=True)]


def history_known(run: GroupRun, metrics_urls: Sequence[str]) -> bool:
    """Whether the server's cache holds only what this run is about to send it: its metrics before the warm-up
    say it served nothing yet (``measure.metrics.untouched``). With a failed cache reset, such a server's warm-up
    is simulated and the prediction stays exact; any other one held traffic the simulator never saw (a caveat)."""
    timeout_s = metrics.scrape_limits(run.request_timeout_s, run.deadline_s)["scrape_timeout_s"]
    return metrics.untouched(metrics.snapshot(list(metrics_urls), timeout_s))


def _measure(run: GroupRun, base_url: str, metrics_urls: Sequence[str], server: ServerHandle | None,
             phases: dict, known: bool) -> ServerPhase:
    """One server's measured phase (``measure_servers``), its memory sampled when the server is known."""
    sampler = sampler_for([server] if server is not None else [])

    def record_reset(resets: list[dict]) -> None:
        phases["reset_prefix_cache"] = resets[0]

    sent, (counted,) = measure_servers(
        run, [base_url], [metrics_urls], lambda _: client.send_phase(
            base_url, run.model, run.requests, concurrency=run.concurrency, request_rate=run.request_rate,
            progress=run.progress_label, timeout_s=run.request_timeout_s, deadline_s=run.deadline_s,
            extra_body=client.TOKEN_IDS_BODY),
        samplers=[sampler], on_reset=record_reset)
    return ServerPhase(sent=sent, reset=counted.reset, cache_info=counted.cache_info, delta=counted.delta,
                       sampler=sampler, history_known=known)


def record(manifest: GroupRunManifest, phase: ServerPhase, run: GroupRun, warm: Sequence[dict]) -> None:
    """Evidence, prediction, memory and rows of a measured phase, into the manifest (``GroupMeasurement``)."""
    cache_info, delta = phase.cache_info, phase.delta
    caching_enabled = cache_info["enable_prefix_caching"] if cache_info else bool(run.group.get("enabled"))
    found = evidence.evidence_of(delta, phase.results, caching_enabled)
    aggregates = phase.sent.aggregates
    prediction = predict_group(run, warm, MeasuredPhase(phase.results, phase.reset, cache_info, aggregates, delta,
                                                        found, phase.history_known))
    manifest.measured = GroupMeasurement(cache_info, delta, found, evidence.usage_check(found, delta), prediction,
                                         phase.sampler.result(), aggregates, phase.sent.rows)


def predict_group(run: GroupRun, warm: Sequence[dict], phase: MeasuredPhase) -> Prediction:
    """The judged prediction of one server's measured phase (the warm-up simulated first when the reset failed;
    then exact only for a server whose history is known: ``history_known``), in the pool the server publishes
    (``measure_servers`` refused a ``kv_blocks`` that contradicts it), or the one ``kv_blocks`` asked for when
    the server publishes none."""
    cache_info = phase.cache_info or {}
    size = run.block_size or cache_info.get("block_size")
    if not size:
        return Prediction.unpredicted("the server's block size is unknown (no vllm:cache_config_info); pass "
                                      "block_size")
    in_order = client.server_order(phase.results)
    ordered = [run.requests[r.index]["prompt_token_ids"] for r in in_order]
    # the warm-up prompts are known traffic: when the reset failed they are simulated, not a caveat
    reset_failed = phase.reset.get("status") != "ok"
    kept_warm = [w["prompt_token_ids"] for w in warm] if reset_failed else []
    published = cache_info.get("num_blocks")
    prediction, _ = predict_pool(ordered, size, published if published is not None else run.kv_blocks, kept_warm,
                                 outputs=[r.output_token_ids for r in in_order], sequential=run.sequential)
    conditions = RunConditions(
        overlapping=not run.sequential, failed_requests=phase.failed_requests,
        unknown_earlier_traffic=reset_failed and not phase.history_known,
        caching_enabled=cache_info.get("enable_prefix_caching"), engines=cache_info.get("engines") or 1,
        preemptions=CounterDelta.of(phase.delta).preemptions)
    return judged(prediction, conditions, phase.found.hit_tokens)


def combine_repeats(runs: Sequence[GroupRunManifest], planned: int) -> GroupRunManifest:
    """``planned`` runs of one group (on one server, its replicas, or interleaved with the other group) as one
    manifest: the top level is the first run (as with one run), ``repeats`` holds every run (written without the
    sections they share), and the group is ``ok`` only when all ``planned`` runs were. With one planned run the
    manifest is that run itself."""
    if planned == 1 and len(runs) == 1:
        return runs[0]
    first = runs[0]
    failed = next(((i, run) for i, run in enumerate(runs) if run.status != "ok"), None)
    status, error, tail = "ok", first.error, None
    if failed is not None:
        status, error, tail = "failed", f"repeat {failed[0]}: {failed[1].error}", failed[1].server_log_tail
    elif len(runs) < planned:
        status, error = "failed", f"only {len(runs)} of {planned} repeats ran"
    return replace(first, status=status, error=error, server_log_tail=tail, finished_at=runs[-1].finished_at,
                   repeats=list(runs))


def note_server_exit(manifest: GroupRunManifest, server: ServerHandle | None) -> None:
    """Name the server's exit code (and keep its log tail) when a failure was the server dying."""
    if server is not None and server.process is not None and server.process.poll() is not None:
        code = server.process.returncode
        exited = f"the server exited with code {code} (log: {server.log_path})"
        manifest.error = f"{manifest.error}; {exited}" if manifest.error else exited
        manifest.server_log_tail = server.log_tail(20)
