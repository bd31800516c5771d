"""A server's Prometheus counters: snapshot them, wait for them to settle, diff them per engine.

Why: an OpenAI-compatible API does not report a hit rate and latency is no proof of reuse, so the only honest
hit rate is the server's own count of cached prompt tokens over queried prompt tokens, taken as the difference
between a snapshot before and one after the measured phase. This module works against any endpoint URL (or
several, e.g. the engines of a disaggregated deployment) and never turns "not measured" into 0:

- an endpoint that cannot be scraped, counters that are absent, a counter that went backwards (the server
  restarted) or zero queries (caching off: 0/0) all give ``hit_rate=None`` with the reason;
- turning the deltas into a hit rate, with the per-request ``usage`` fallback, is ``evidence``.

Parsing is ``prometheus_client``'s; HTTP is ``requests`` (a scrape is one small synchronous GET).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

import requests
from prometheus_client.parser import text_string_to_metric_families

from ..core import bounds
from ..core.auth import auth_headers
from ..core.live_records import Counter, CounterDelta

COUNTERS: dict[str, tuple[str, ...]] = {
    # key: metric names, current vLLM (v1, >= 0.10) first, older names as fallbacks
    "queries": ("vllm:prefix_cache_queries", "vllm:gpu_prefix_cache_queries", "sglang:prompt_tokens"),
    "hits": ("vllm:prefix_cache_hits", "vllm:gpu_prefix_cache_hits", "sglang:cached_tokens"),
    "external_queries": ("vllm:external_prefix_cache_queries",),
    "external_hits": ("vllm:external_prefix_cache_hits",),
    "prompt_tokens": ("vllm:prompt_tokens",),
    "generation_tokens": ("vllm:generation_tokens",),
    "preemptions": ("vllm:num_preemptions",),
    "request_success": ("vllm:request_success",),
}
"""Counters read from every snapshot. ``queries`` and ``hits`` are in tokens; both must be present for a rate.

SGLang has no query counter: every prompt token goes through its radix-tree match, so ``sglang:prompt_tokens``
(prompt tokens processed) is the query count and ``sglang:cached_tokens`` (summed over its ``cache_source``
label) the hit count. Its ``sglang:cache_hit_rate`` gauge is deliberately not read: it describes the most
recent batch only, not a run (see ``SGLANG_LAST_BATCH_GAUGE``)."""

SGLANG_LAST_BATCH_GAUGE = "sglang:cache_hit_rate"
"""SGLang's hit-rate gauge: the last scheduled batch only. Kept for display, never used as a run's hit rate."""

ENGINE_LABELS = ("engine", "dp_rank")
"""Labels that tell engines apart: vLLM's ``engine`` (data-parallel engines), SGLang's ``dp_rank``."""


def engine_of(labels: Mapping[str, str]) -> str:
    for label in ENGINE_LABELS:
        if label in labels:
            return labels[label]
    return ""

HISTOGRAMS: dict[str, tuple[str, ...]] = {
    # key: histogram names in seconds; the engine stamps these times itself, so they are immune to a
    # client or API process that reads the stream late (tokens then arrive in bursts on the client side)
    "ttft": ("vllm:time_to_first_token_seconds", "sglang:time_to_first_token_seconds"),
    "tpot": ("vllm:request_time_per_output_token_seconds", "vllm:time_per_output_token_seconds"),
    "itl": ("vllm:inter_token_latency_seconds",),
    "prefill_time": ("vllm:request_prefill_time_seconds",),
    "decode_time": ("vllm:request_decode_time_seconds",),
    "e2e": ("vllm:e2e_request_latency_seconds", "sglang:e2e_request_latency_seconds"),
}
"""Server-side latency histograms: their ``_sum`` and ``_count`` deltas give the mean over the phase."""

BY_SOURCE = "vllm:prompt_tokens_by_source"
"""Prompt tokens split by where they came from (``local_cache_hit``, ``local_compute``, ...)."""

CACHE_CONFIG_INFO = "vllm:cache_config_info"
"""An info gauge whose labels are the engine's cache config (``block_size``, ``enable_prefix_caching``, ...)."""

@dataclass
class Snapshot:
    """Every sample of one scrape, by sample name (``..._total`` included), or the reason there are none."""

    url: str
    taken_at: float
    samples: dict[str, list[tuple[dict[str, str], float]]] = field(default_factory=dict)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def counter(self, names: Sequence[str]) -> tuple[str, dict[str, float]] | None:
        """``(name found, {engine: value})`` for the first of ``names`` present; other labels are summed."""
        for name in names:
            for sample_name in (f"{name}_total", name):
                rows = self.samples.get(sample_name)
                if rows is not None:
                    per_engine: dict[str, float] = {}
                    for labels, value in rows:
                        engine = engine_of(labels)
                        per_engine[engine] = per_engine.get(engine, 0.0) + value
                    return name, per_engine
        return None

    def histogram(self, names: Sequence[str]) -> tuple[str, float, float] | None:
        """``(name found, sum, count)`` over all engines for the first of ``names`` present."""
        for name in names:
            sums, counts = self.samples.get(f"{name}_sum"), self.samples.get(f"{name}_count")
            if sums is not None and counts is not None:
                return name, sum(v for _, v in sums), sum(v for _, v in counts)
        return None

    def created(self, name: str) -> dict[str, float]:
        """Creation time of each engine's counter: it changes when the server restarts."""
        return {engine_of(labels): value for labels, value in self.samples.get(f"{name}_created", [])}

    def by_label(self, name: str, label: str) -> dict[str, float]:
        """A counter summed over engines, split by one label (e.g. ``source``)."""
        out: dict[str, float] = {}
        for labels, value in self.samples.get(f"{name}_total", self.samples.get(name, [])):
            key = labels.get(label, "")
            out[key] = out.get(key, 0.0) + value
        return out

    def info(self, name: str) -> list[dict[str, str]]:
        """Label sets of an info gauge, one per engine."""
        return [labels for labels, _ in self.samples.get(name, [])]


def parse(url: str, text: str, taken_at: float | None = None) -> Snapshot:
    snapshot = Snapshot(url=url, taken_at=time.time() if taken_at is None else taken_at)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            snapshot.samples.setdefault(sample.name, []).append((dict(sample.labels), float(sample.value)))
    return snapshot


SCRAPE_TIMEOUT_S = 10.0
"""How long one scrape may wait for an answer by default (a run caps it at its request timeout)."""
SETTLE_INTERVAL_S = 0.1
"""Between two scrapes that must agree before the counters count as settled, in every command, for one engine
behind one endpoint. vLLM's API server records a step's stats before its event loop can send that step's tokens
(``AsyncLLM``'s output handler: no ``await`` between queueing the outputs and ``record``, unless a step has more
than ``VLLM_V1_OUTPUT_PROC_CHUNK_SIZE`` outputs), so its counters are final when a response ends; the second scrape
is a margin for that case and for a server that publishes later."""
SETTLE_INTERVAL_MANY_S = 0.5
"""The same for several endpoints or engines: vLLM's scheduler hands its stats to one front-end, which need not be
the API server that answered the request, and nothing orders the two (a loaded machine stalls an event loop for a
few hundred milliseconds). Not detected: ``--api-server-count`` above 1 in front of one engine (one endpoint, one
engine label), which gets the short interval."""


def time_left(cap_s: float, ends_at: float | None) -> float:
    """``cap_s``, or less when ``ends_at`` (a ``time.monotonic()`` time) comes first; <= 0 when it has passed."""
    return cap_s if ends_at is None else min(cap_s, ends_at - time.monotonic())


def scrape_limits(request_timeout_s: float, deadline_s: float | None) -> dict:
    """``settled_snapshot`` keywords for a phase that starts now: each scrape waits at most one request timeout,
    and none runs past the deadline plus one request timeout (so a hanging ``/metrics`` cannot hold a run)."""
    return {"scrape_timeout_s": min(SCRAPE_TIMEOUT_S, request_timeout_s),
            "ends_at": None if deadline_s is None else time.monotonic() + deadline_s + request_timeout_s}


def scrape(url: str, timeout_s: float = SCRAPE_TIMEOUT_S, attempts: int = 3, ends_at: float | None = None) -> Snapshot:
    """One GET of a Prometheus endpoint (retried on network errors: a busy server can miss one).

    Failures are recorded in ``error``, never raised; an HTTP error status is final (a 404 stays a 404), and so is
    a server that accepted the request but did not answer within ``timeout_s`` (a retry would cost as much
    again). Nothing runs past ``ends_at`` (``time.monotonic()``; a run's deadline bounds its scrapes too).
    """
    for attempt in range(1, attempts + 1):
        taken_at, wait = time.time(), time_left(timeout_s, ends_at)
        if wait <= 0:
            return Snapshot(url, taken_at, error=f"{url} was not scraped: the run's deadline had passed")
        try:
            response = requests.get(url, timeout=wait, headers=auth_headers())
        except requests.ReadTimeout:
            return Snapshot(url, taken_at, error=f"cannot reach {url}: no answer within {wait:.3g} s")
        except requests.RequestException as exc:
            if attempt == attempts or time_left(timeout_s, ends_at) <= 0.5 * attempt:
                return Snapshot(url, taken_at, error=f"cannot reach {url}: {type(exc).__name__}")
            time.sleep(0.5 * attempt)
            continue
        if response.status_code != 200:
            return Snapshot(url, taken_at, error=f"{url} answered HTTP {response.status_code}")
        try:
            return parse(url, response.text, taken_at)
        except ValueError as exc:
            return Snapshot(url, taken_at, error=f"{url} is not Prometheus text: {exc}")
    raise AssertionError("unreachable")


def snapshot(urls: str | Iterable[str], timeout_s: float = SCRAPE_TIMEOUT_S,
             ends_at: float | None = None) -> list[Snapshot]:
    """Scrape one URL or several (one per engine or instance), none past ``ends_at``."""
    return [scrape(u, timeout_s, ends_at=ends_at) for u in ([urls] if isinstance(urls, str) else urls)]


def _tracked(snapshots: Sequence[Snapshot]) -> list:
    """The tracked counters of each snapshot, as text: ``NaN`` equals ``NaN`` here, so a server that keeps
    publishing one settles at once instead of after the whole timeout."""
    return [(s.url, key, repr(s.counter(names))) for s in snapshots for key, names in COUNTERS.items()]


def settled_snapshot(urls: str | Iterable[str], *, timeout_s: float = 10.0, interval_s: float | None = None,
                     scrape_timeout_s: float = SCRAPE_TIMEOUT_S, ends_at: float | None = None) -> list[Snapshot]:
    """Scrape until two consecutive snapshots agree on every tracked counter (or ``timeout_s`` passes, or
    ``ends_at``: the run's deadline); each scrape waits at most ``scrape_timeout_s``, and ``interval_s`` apart
    (by default ``SETTLE_INTERVAL_S``, or ``SETTLE_INTERVAL_MANY_S`` when the first scrape shows several
    endpoints or engines).

    Why: a server may publish the stats of the last request a moment after its response ended.
    """
    urls = [urls] if isinstance(urls, str) else list(urls)
    deadline = time.monotonic() + timeout_s
    deadline = deadline if ends_at is None else min(deadline, ends_at)
    previous = snapshot(urls, scrape_timeout_s, ends_at)
    if interval_s is None:
        interval_s = SETTLE_INTERVAL_MANY_S if len(urls) > 1 or _engines(previous) > 1 else SETTLE_INTERVAL_S
    while time.monotonic() < deadline:
        time.sleep(interval_s)
        current = snapshot(urls, scrape_timeout_s, ends_at)
        if not all(s.ok for s in current) and all(s.ok for s in previous):
            continue  # keep the last good scrape rather than a failed one
        if _tracked(current) == _tracked(previous):
            return current
        previous = current
    return previous


def _engines(snapshots: Sequence[Snapshot]) -> int:
    """The most engines any tracked counter of these snapshots is published for."""
    found = [s.counter(names) for s in snapshots if s.ok for names in COUNTERS.values()]
    return max((len(values) for _, values in filter(None, found)), default=0)


def _engine_key(index: int, engine: str, many: bool) -> str:
    return f"{index}:{engine}" if many else engine


def diff(before: Sequence[Snapshot], after: Sequence[Snapshot]) -> CounterDelta:
    """Counter deltas per engine and summed, for every tracked counter found in both snapshots.

    ``problems`` lists what makes the deltas unusable: an endpoint that failed, a counter that went backwards
    or was recreated (a restart between the snapshots). ``counters[key]`` is absent when a counter is missing.
    """
    if len(before) != len(after):
        raise ValueError("before and after must scrape the same endpoints")
    many = len(before) > 1
    problems: list[str] = []
    counters: dict[str, dict] = {}
    by_source: dict[str, float] = {}
    for index, (b, a) in enumerate(zip(before, after, strict=True)):
        if not b.ok or not a.ok:
            problems.append(b.error or a.error or "scrape failed")
            continue
        for key, names in COUNTERS.items():
            found_b, found_a = b.counter(names), a.counter(names)
            if found_b is None or found_a is None:
                continue
            name, values_b = found_b
            _, values_a = found_a
            entry = counters.setdefault(key, {"name": name, "total": 0.0, "per_engine": {}})
            created_b, created_a = b.created(name), a.created(name)
            for engine in sorted(set(values_a) | set(values_b)):
                delta = values_a.get(engine, 0.0) - values_b.get(engine, 0.0)
                where = _engine_key(index, engine, many)
                if not math.isfinite(delta):
                    problems.append(f"{name} is not a finite number on engine {where} (the server sent NaN or Inf)")
                    entry["per_engine"][where] = None
                    entry["total"] = None
                    continue
                if delta < 0:
                    problems.append(f"{name} went backwards on engine {where} ({delta:+g}): counter reset")
                elif engine in created_b and created_b.get(engine) != created_a.get(engine):
                    problems.append(f"{name} was recreated on engine {where}: counter reset")
                entry["per_engine"][where] = delta
                if entry["total"] is not None:
                    entry["total"] += delta
        sources_b, sources_a = b.by_label(BY_SOURCE, "source"), a.by_label(BY_SOURCE, "source")
        for source in sources_a:
            by_source[source] = by_source.get(source, 0.0) + sources_a[source] - sources_b.get(source, 0.0)
    by_source = {k: v for k, v in by_source.items() if math.isfinite(v)}
    timing = _histogram_means(before, after)
    for entry in counters.values():
        entry["total"] = _as_int(entry["total"])
        entry["per_engine"] = {k: _as_int(v) for k, v in entry["per_engine"].items()}
    problems += _impossible(counters)
    return CounterDelta(
        problems=tuple(problems),
        counters={key: Counter(entry["name"], entry["total"], entry["per_engine"]) for key, entry in counters.items()},
        endpoints=tuple(s.url for s in after),
        interval_s=round(max(s.taken_at for s in after) - min(s.taken_at for s in before), 3),
        prompt_tokens_by_source={k: _as_int(v) for k, v in by_source.items()},
        server_timing_ms=timing)


def _histogram_means(before: Sequence[Snapshot], after: Sequence[Snapshot]) -> dict:
    """Mean of each server latency histogram over the phase, in ms (``None`` when nothing was observed)."""
    out = {}
    for key, names in HISTOGRAMS.items():
        total = count = 0.0
        name = None
        for b, a in zip(before, after, strict=True):
            if not (b.ok and a.ok):
                continue
            hb, ha = b.histogram(names), a.histogram(names)
            if hb is None or ha is None:
                continue
            name = ha[0]
            total += ha[1] - hb[1]
            count += ha[2] - hb[2]
        if name is not None:
            out[key] = {"name": name, "count": _as_int(count) if math.isfinite(count) else None,
                        "mean_ms": total / count * 1000 if count > 0 and math.isfinite(total / count) else None}
    return out


def _as_int(value: float | None) -> int | float | None:
    return int(value) if value is not None and float(value).is_integer() else value


def _impossible(counters: Mapping) -> list[str]:
    """Deltas no real cache can produce: more hit tokens than queried tokens."""
    hits, queries = counters.get("hits"), counters.get("queries")
    if not hits or not queries or hits["total"] is None or queries["total"] is None:
        return []
    if hits["total"] > queries["total"]:
        return [f"the server counted more prefix-cache hits ({hits['total']}) than queries ({queries['total']}), "
                "which no cache can do"]
    return []


def cache_config(snapshots: Sequence[Snapshot]) -> dict | None:
    """The engine's cache config from ``vllm:cache_config_info`` (first engine), or ``None`` when absent.

    Returns ``block_size`` and ``num_blocks`` as ints, ``enable_prefix_caching`` as a bool, plus all labels.
    """
    for s in snapshots:
        rows = s.info(CACHE_CONFIG_INFO) if s.ok else []
        if rows:
            labels = rows[0]
            dropped: dict[str, str] = {}
            return {
                "block_size": _maybe_int(labels.get("block_size"), bounds.BLOCK_SIZE, "block_size", dropped),
                "num_blocks": _maybe_int(labels.get("num_gpu_blocks"), bounds.KV_BLOCKS, "num_gpu_blocks", dropped),
                "enable_prefix_caching": _maybe_bool(labels.get("enable_prefix_caching")),
                "engines": len(rows),
                "labels": labels,
                **({"dropped": dropped} if dropped else {}),
            }
    return None


def _maybe_int(text: str | None, bound: bounds.Bound, name: str, dropped: dict[str, str]) -> int | None:
    """A positive integer label (block size, block count) within ``bound``; anything else (absent, ``-16``, ``x``,
    a count no server has) is ``None``, and a number out of bounds is named in ``dropped``."""
    try:
        value = int(text) if text is not None and len(text) <= 40 else None
    except ValueError:
        return None
    if value is None and text is not None and len(text) > 40:
        dropped[name] = f"published a {len(text)}-character number, beyond {bound.describe()}"
    if value is None or value <= 0:
        return None
    if value > bound.high:
        dropped[name] = f"published {value}, beyond {bound.describe()}: not used"
        return None
    return value


def _maybe_bool(text: str | None) -> bool | None:
    return {"True": True, "true": True, "False": False, "false": False}.get(text or "")


def detect_backend(snapshots: Sequence[Snapshot]) -> str | None:
    """``vllm`` or ``sglang`` from the metric names a server exposes, ``None`` when neither shows."""
    names = [name for s in snapshots if s.ok for name in s.samples]
    if any(n.startswith("vllm:") for n in names):
        return "vllm"
    if any(n.startswith("sglang:") for n in names):
        return "sglang"
    return None


IN_FLIGHT_GAUGES = ("vllm:num_requests_running", "vllm:num_requests_waiting")
"""A request someone else has queued or is running has not been counted yet."""


def untouched(snapshots: Sequence[Snapshot]) -> bool:
    """Whether every server scraped has served nothing since it started: no prefix-cache query and no finished
    request (``vllm:prefix_cache_queries``, ``vllm:request_success``), none running or waiting. Its cache then
    holds only what a run sends it after this scrape. A failed scrape, or a server without the queries counter,
    is not known to be untouched. What counters cannot see stays unseen: a KV store shared with other servers (an
    offloading connector) can hold blocks from elsewhere while every counter here reads 0."""
    for snap in snapshots:
        if not snap.ok:
            return False
        for key in ("queries", "request_success"):
            found = snap.counter(COUNTERS[key])
            if found is None and key == "queries":
                return False
            if found is not None and sum(found[1].values()) != 0:
                return False
        if any(value != 0 for gauge in IN_FLIGHT_GAUGES for value in gauge_values([snap], gauge)):
            return False
    return bool(snapshots)


def gauge_values(snapshots: Sequence[Snapshot], name: str) -> list[float | None]:
    """Every value of a gauge over all scraped endpoints (e.g. SGLang's last-batch hit rate); a non-finite one
    as ``None`` (strict JSON has no NaN)."""
    return [value if math.isfinite(value) else None for s in snapshots if s.ok for _, value in s.samples.get(name, [])]


def block_size_of(cache_info: Mapping | None, flag: int | None) -> tuple[int | None, str | None, str | None]:
    """``(block size, where it came from, warning)``: the server's own metrics win over ``--block-size``."""
    published = cache_info.get("block_size") if cache_info else None
    if published:
        warning = None
        if flag and flag != published:
            warning = f"--block-size {flag} ignored: the server publishes block_size {published}"
        return published, "server metrics (vllm:cache_config_info)", warning
    if flag:
        return flag, "--block-size", None
    return None, None, None
