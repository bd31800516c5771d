"""Steps shared by the live-traffic commands (``sessions``, ``replay``, ``isolation``) against a running server.

Each command probes the server (model, metrics, block size, pool size, context length), empties its cache when
it can, sends token-id requests (vLLM streams their generated ids back, ``"return_token_ids": true``), reads the
counters, and predicts the hits with the block model: vLLM 0.32's block pool (``cache.engine_pool``) when the
pool size is known, the requests ran one at a time and every output was recorded, the teaching simulator's
``lru`` otherwise; ``prediction.policy`` and ``prediction.engine_model`` say which, and why.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import requests

from .. import evidence
from ..core.errors import InputError
from ..core.provenance import environment_snapshot, now
from ..measure import client, metrics as prom
from ..measure.endpoints import base_url_of, check_model
from ..serve.control import reset_any_prefix_cache
from ..simulate.attribution import attribute
from ..simulate.predict import RunConditions, judge, predict_hits, unpredicted
from ..workload.salts import salted_prompts

TOKEN_IDS_BODY = {"return_token_ids": True}


@dataclass
class Live:
    """One live run: where the server is, the result being built, and the rows collected so far."""

    base_url: str
    model: str
    urls: list[str]
    result: dict
    on_update: Callable[[dict], None] | None = None
    timeout_s: float = 300.0
    collected: list = field(default_factory=list)
    first_counters: list | None = None
    last_counters: list | None = None

    def enter(self, phase: str) -> None:
        self.result["phase"] = phase
        self.update()

    def update(self) -> None:
        if self.on_update is not None:
            self.on_update(self.result)

    @property
    def server(self) -> dict:
        return self.result["server"]

    def warn(self, text: str) -> None:
        self.result["warnings"].append(text)

    @property
    def scrape_s(self) -> float:
        """A probe or scrape waits at most one request timeout, so a silent ``/metrics`` cannot hold the run."""
        return min(prom.SCRAPE_TIMEOUT_S, self.timeout_s)


def start(schema: str, endpoint: str, model: str, metrics: Sequence[dict], config: dict,
          on_update: Callable[[dict], None] | None, timeout_s: float) -> Live:
    """A new run's state with the result's common sections."""
    base_url = base_url_of(endpoint)
    result = {"schema": schema, "status": "running", "error": None, "started_at": now(),
              "config": {"endpoint": endpoint, "base_url": base_url, "model": model,
                         "metrics_endpoints": list(metrics), "request_timeout_s": timeout_s, **config},
              "warnings": [], "phases": {}, "timing": {}, "server": {}}
    return Live(base_url, model, [m["url"] for m in metrics], result, on_update, timeout_s)


def guarded(live: Live, phases: Callable[[], None]) -> str:
    """Run ``phases``; Ctrl-C or a server problem becomes the run's status and error, never a crash (bad input
    still raises ``InputError``: exit 1)."""
    try:
        phases()
        return "ok"
    except KeyboardInterrupt:
        live.result["error"] = f"interrupted during {live.result.get('phase', 'setup')}"
        return "interrupted"
    except InputError:
        raise
    except Exception as exc:  # the server refused, died or answered nonsense: a result, not a crash
        live.result["error"] = f"{type(exc).__name__}: {exc}"
        return "failed"


def probe(live: Live, block_size: int | None = None, kv_blocks: int | None = None) -> None:
    """The model is served; the metrics answer; block size, pool size and context length are known (or why not)."""
    preflight = check_model(live.base_url, live.model, timeout_s=live.scrape_s)
    live.result["phases"]["preflight"] = preflight
    if not preflight["reachable"]:
        raise ConnectionError(preflight["detail"])
    snapshots = prom.snapshot(live.urls, live.scrape_s)
    info = prom.cache_config(snapshots) or {}
    size, source, warning = prom.block_size_of(info, block_size)
    blocks, blocks_source = info.get("num_blocks"), "server metrics (vllm:cache_config_info num_gpu_blocks)"
    if blocks and kv_blocks and kv_blocks != blocks:
        live.warn(f"--kv-blocks {kv_blocks} ignored: the server publishes num_gpu_blocks {blocks}")
    if not blocks:
        blocks, blocks_source = kv_blocks, "--kv-blocks" if kv_blocks else None
    live.result["server"] = {
        "backend": prom.detect_backend(snapshots), "cache_config": info or None, "block_size": size,
        "block_size_source": source, "num_blocks": blocks, "num_blocks_source": blocks_source,
        "caching_enabled": info.get("enable_prefix_caching"),
        "max_model_len": max_model_len(live.base_url, live.model, live.scrape_s),
        "metrics_errors": [s.error for s in snapshots if not s.ok]}
    if warning:
        live.warn(warning)
    for s in snapshots:
        if not s.ok:
            live.warn(f"metrics: {s.error}; counters are unavailable, per-request cached_tokens are the evidence")


def max_model_len(base_url: str, model: str, timeout_s: float = 10.0) -> int | None:
    """The served context length from vLLM's ``/v1/models`` (``max_model_len``), ``None`` when not published."""
    try:
        data = requests.get(base_url + "/v1/models", timeout=timeout_s).json().get("data") or []
    except (requests.RequestException, ValueError, AttributeError):
        return None
    for entry in data if isinstance(data, list) else []:
        if isinstance(entry, dict) and entry.get("id") == model:
            value = entry.get("max_model_len")
            return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
    return None


def reset(live: Live, wanted: bool, log: Callable[[str], None] = lambda _: None) -> bool:
    """Empty the server's prefix cache when ``wanted``; ``True`` when it is known to be empty."""
    if not wanted:
        live.result["phases"]["reset"] = {"status": "skipped"}
        return False
    live.result["phases"]["reset"] = outcome = reset_any_prefix_cache(live.base_url)
    if outcome["status"] != "ok":
        live.warn(f"cache reset {outcome['status']} ({outcome['detail']}): earlier traffic still in the cache "
                  "can add hits the prediction does not know of")
        log(f"warning: {live.result['warnings'][-1]}")
    return outcome["status"] == "ok"


def extra_body(live: Live) -> dict | None:
    """vLLM streams the generated token ids when asked; other servers get the plain OpenAI body."""
    return TOKEN_IDS_BODY if live.server.get("backend") == "vllm" else None


async def send_async(live: Live, spec: client.RequestSpec, t0: float) -> client.RequestResult:
    """One streamed request; its ``sent_at_s`` is on the run's clock (seconds after ``t0``)."""
    sent = time.perf_counter()
    results, _ = await client.send_requests_async(live.base_url, live.model, [spec], timeout_s=live.timeout_s,
                                                  extra_body=extra_body(live))
    result = results[0]
    result.sent_at_s = sent - t0
    return result


def send_one(live: Live, spec: client.RequestSpec, t0: float) -> client.RequestResult:
    return asyncio.run(send_async(live, spec, t0))


def counters(live: Live, settle: bool = True) -> list:
    """The counters now; ``settle``: scraped until two scrapes agree (a server may publish a moment late)."""
    if settle:
        return prom.settled_snapshot(live.urls, timeout_s=10.0, interval_s=0.1, scrape_timeout_s=live.scrape_s)
    return prom.snapshot(live.urls, live.scrape_s)


def counter_pair(before: list | None, after: list | None) -> tuple[int | None, int | None]:
    """``(hit tokens, query tokens)`` between two snapshots, ``(None, None)`` when the counters are unusable."""
    if before is None or after is None:
        return None, None
    delta = prom.diff(before, after)
    found = evidence.hit_rate_evidence(delta, caching_enabled=None)
    if found["hit_rate_evidence"] != evidence.EVIDENCE_METRICS and not _zero_queries(delta):
        return None, None
    hits, queries = delta["counters"]["hits"]["total"], delta["counters"]["queries"]["total"]
    return int(hits), int(queries)


def _zero_queries(delta: dict) -> bool:
    counters_ = delta.get("counters") or {}
    return not delta.get("problems") and "hits" in counters_ and "queries" in counters_ and \
        counters_["queries"]["total"] == 0


def measured(live: Live, before: list | None, after: list | None, results: Sequence) -> tuple[dict, dict | None]:
    """The measured hit rate of a phase (counters first, per-request usage second) and the counter delta."""
    delta = prom.diff(before, after) if before is not None and after is not None else None
    found = evidence.from_results(delta, results, live.server.get("caching_enabled"))
    keys = ("hit_rate", "hit_rate_evidence", "hit_rate_reason", "hit_tokens", "query_tokens", "usage")
    return {k: found[k] for k in keys}, delta


def predict(live: Live, ordered: Sequence, prompts_by_id: dict, salts_by_id: dict | None, *, sequential: bool,
            reset_ok: bool, delta: dict | None, found: dict) -> tuple[dict, dict]:
    """The judged prediction for the rows in server order, and each request's predicted hit tokens by id."""
    size = live.server.get("block_size")
    if not size:
        return unpredicted("the server's block size is unknown: pass --block-size"), {}
    salts = [(salts_by_id or {}).get(r.id) for r in ordered]
    prompts = salted_prompts([prompts_by_id[r.id] for r in ordered], salts)
    prediction = predict_hits(prompts, size, live.server.get("num_blocks"),
                              outputs=[r.output_token_ids for r in ordered], sequential=sequential)
    per_id = dict(zip((r.id for r in ordered), prediction.pop("per_request_hit_tokens")))
    info = live.server.get("cache_config") or {}
    conditions = RunConditions(
        overlapping=not sequential, failed_requests=sum(r.status != "ok" for r in ordered),
        unknown_earlier_traffic=not reset_ok, caching_enabled=info.get("enable_prefix_caching"),
        engines=max(len(live.urls), info.get("engines") or 1),
        preemptions=((delta or {}).get("counters", {}).get("preemptions") or {}).get("total"),
        backend=live.server.get("backend"), interrupted=live.result["status"] == "interrupted")
    return judge(prediction, conditions, found["hit_tokens"], found["query_tokens"]), per_id


def attribution(live: Live, ordered: Sequence, prompts_by_id: dict, salts_by_id: dict | None, rows: Sequence[dict],
                delta: dict | None) -> dict | None:
    """Per request: what no cache could reuse and why, and the cause of each difference from the prediction."""
    size = live.server.get("block_size")
    if not size:
        return None
    salts = [(salts_by_id or {}).get(r.id) for r in ordered]
    prompts = salted_prompts([prompts_by_id[r.id] for r in ordered], salts)
    preemptions = ((delta or {}).get("counters", {}).get("preemptions") or {}).get("total")
    return attribute(prompts, rows, size, preemptions=preemptions)


def hit_rates(prediction: dict | None, found: dict | None) -> dict:
    """Predicted and measured side by side, in the ``hitrate`` result's shape (no target for live traffic)."""
    predicted = (prediction or {}).get("predicted_hit_rate")
    value = (found or {}).get("hit_rate")
    return {"unit": "token (hit tokens / prompt tokens)", "target": None, "target_basis": "none (live traffic)",
            "block_aligned_target": None, "predicted": predicted, "measured": value,
            "measured_evidence": (found or {}).get("hit_rate_evidence"),
            "measured_reason": (found or {}).get("hit_rate_reason") if found else "nothing was measured",
            "measured_minus_predicted_points": (value - predicted) * 100 if None not in (value, predicted) else None}


def request_rows(ordered: Sequence, per_id: dict, extra: dict | None = None) -> list[dict]:
    """Result rows: the client's row, the predicted hit tokens and whatever ``extra[id]`` adds."""
    return [{**r.row(), "predicted_hit_tokens": per_id.get(r.id), **((extra or {}).get(r.id) or {})}
            for r in ordered]


def finish(live: Live, status: str, started: float) -> None:
    """Status (a finished run with failed requests is ``partial``, with none left ``failed``), environment, times."""
    result = live.result
    result["environment"] = environment_snapshot()
    result["timing"]["total_s"] = time.perf_counter() - started
    result["finished_at"] = now()
    failure = client.failure_summary(live.collected)
    if status == "ok" and failure:
        ok = sum(r.status == "ok" for r in live.collected)
        status = "failed" if not ok else "partial"
        result["error"] = failure
    result["status"] = status
    result.pop("phase", None)
