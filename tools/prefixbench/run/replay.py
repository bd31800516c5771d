"""A Mooncake trace replayed against a running server, at the server's own block scale, timestamps honoured.

Each ``hash_id`` becomes a deterministic block of ``block_tokens`` token ids (``workload.trace_tokens``; default
the server's block size), so the server sees the trace's reuse pattern. Request ``i`` is sent ``(timestamp_i -
timestamp_0) / speed`` seconds after the start (not earlier; with ``concurrency`` at most that many in flight),
with the trace's output length capped at ``max_output_len``. A request whose prompt and output exceed the
server's context is skipped, counted and named, never truncated.

Measured against the block-model prediction of the same scaled requests in server order; beside them the trace's
own hit rate at the paper's 512-token blocks (``simulate.replay``, unbounded cache). The prediction is exact
when nothing the model leaves out can matter: the pool evicts nothing (or the requests ran one at a time, which
the engine model replays exactly) and no predicted hit depends on the order the server saw the requests in
(``order_dependent_tokens``, see ``order_dependent``).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence, cast

from ..cache.blocks import BlockKeys
from ..core.errors import InputError, require_int
from ..core.files import read_jsonl
from ..core.live_records import Prediction
from ..core.live_results import LiveRunResult
from ..core.records import SCHEMA_REPLAY
from ..core.replay_records import Skipped, SkippedLine, TraceHitRate
from ..measure import client
from ..simulate.replay import replay_trace
from ..workload.trace_tokens import TraceTokens, output_lengths
from ..workload.traces import parse_trace_line, resolve_trace
from . import live as lv

OVERLAP_CAVEAT = "concurrent requests overlap in time"


def load_lines(trace: str, num_requests: int | None) -> tuple[str, list[dict]]:
    """The first ``num_requests`` lines of a trace (name or file), each with a valid ``timestamp``."""
    path = resolve_trace(trace)
    lines = []
    for where, obj in read_jsonl(path):
        request = parse_trace_line(where, obj)
        stamp = obj.get("timestamp", 0)
        if isinstance(stamp, bool) or not isinstance(stamp, (int, float)) or not 0 <= stamp < 1e15:
            raise InputError(f"{where}.timestamp", f"must be a number of milliseconds >= 0, got {stamp!r}")
        lines.append({"where": where, "request": request, "timestamp": stamp, "output_length": obj.get("output_length")})
        if num_requests is not None and len(lines) >= num_requests:
            break
    if not lines:
        raise InputError(str(path), "trace has no requests")
    return str(path), lines


def run_replay(*, endpoint: str, model: str, metrics: Sequence[dict], trace: str, num_requests: int | None = None,
               speed: float = 1.0, block_tokens: int | None = None, max_output_len: int | None = 64,
               concurrency: int | None = None, block_size: int | None = None, kv_blocks: int | None = None,
               reset_cache: bool = True, progress: bool = False, timeout_s: float = 300.0,
               on_update: Callable[[dict], None] | None = None,
               log: Callable[[str], None] = lambda _: None) -> LiveRunResult:
    """Replay, read the counters, predict; never raises for a server problem (bad input: ``InputError``)."""
    path, lines = load_lines(trace, num_requests)
    config = {"trace": trace, "trace_path": path, "num_requests": len(lines), "speed": speed,
              "block_tokens_flag": block_tokens, "max_output_len": max_output_len, "concurrency": concurrency,
              "reset_cache": reset_cache, "api": "/v1/completions with token-id prompts"}
    run = lv.start(SCHEMA_REPLAY, endpoint=endpoint, model=model, metrics=metrics, config=config,
                   on_update=on_update, timeout_s=timeout_s, kv_blocks=kv_blocks)
    state: dict = {"plan": None}

    def phases() -> None:
        lv.probe(run, block_size)
        plan = state["plan"] = _plan(run, lines, block_tokens, max_output_len, speed)
        lv.reset(run, reset_cache, log)
        lv.measure(run, lambda: lv.send(run, plan["specs"], concurrency=concurrency or max(len(plan["specs"]), 1),
                                        offsets=plan["offsets"], progress="replay" if progress else None)[1])

    lv.finish(run, lv.guarded(run, phases))
    if state["plan"] is not None:
        sent = lv.Sent(client.server_order(run.collected), state["plan"]["prompts"], concurrency == 1)
        _assemble(run, sent, lines)
    return run.result


def _plan(run: lv.Live, lines: list[dict], block_tokens: int | None, max_output_len: int | None,
          speed: float) -> dict:
    """Specs and send offsets of the requests that fit the server's context; the rest skipped, by trace line."""
    size = block_tokens or run.server.get("block_size")
    if not size:
        raise InputError("--block-tokens", "the server publishes no block size: pass --block-tokens")
    size = require_int("--block-tokens", size, minimum=1)
    run.result.config["block_tokens"] = size
    tokens, limit = TraceTokens(size), run.server.get("max_model_len")
    outputs = output_lengths(lines, max_output_len)
    specs, offsets, skipped, prompts = [], [], [], {}
    for i, (line, out) in enumerate(zip(lines, outputs, strict=True)):
        length = tokens.length(line["request"])
        if limit is not None and length + out > limit:
            skipped.append(SkippedLine(line["where"], i, length, out))
            continue
        spec = client.RequestSpec(f"r{i}", tokens.prompt(line["request"]), out)
        specs.append(spec)
        prompts[spec.id] = spec.prompt_token_ids
        offsets.append((line["timestamp"] - lines[0]["timestamp"]) / 1000 / speed)
    run.result.put(skipped=Skipped(skipped, limit))
    if not specs:
        raise InputError("--trace", f"every request is longer than the server's context ({limit} tokens)")
    return {"specs": specs, "offsets": offsets, "prompts": prompts, "block_tokens": size}


def _assemble(run: lv.Live, sent: lv.Sent, lines: list[dict]) -> None:
    result, ordered = run.result, sent.ordered
    found, delta = lv.measured(run, ordered)
    prediction, per_id, _ = lv.predict(run, sent, found, delta)
    rows = lv.request_rows(ordered, per_id)
    if prediction.available:
        prediction.order_dependent_tokens = order_dependent(ordered, sent.prompts, per_id, run.server["block_size"])
        _settle_overlap(prediction, sent.sequential)
    prediction.requests_matching_cached_tokens = sum(r.cached_tokens == r.predicted_hit_tokens for r in rows)
    rates, summary = lv.hit_rates(prediction, found), client.aggregates(ordered, result.timing.get("bench_s") or 0.0)
    sent_lines = sorted({int(r.id[1:]) for r in ordered})
    own = replay_trace([lines[i]["request"] for i in sent_lines], None)
    from ..decision.verdict import verdict
    result.put(prediction=prediction, hit_rates=rates, requests=rows, measured=found, backend_counters=delta,
               summary=summary, attribution=lv.attribution(run, sent, rows, delta),
               trace_hit_rate=TraceHitRate(512, cast(float, own["token_hit_rate"]), cast(int, own["requests"])),
               verdict=verdict(rates, summary))


def order_dependent(ordered: Sequence, prompts: Mapping[str, Sequence[int]], per_id: Mapping[str, int],
                    block_size: int) -> int:
    """Predicted hit tokens whose count could depend on the order the server saw the requests in.

    vLLM v1 hashes a block when it allocates it (at scheduling, before computing it) and admits waiting requests
    first come first served, so without eviction or preemption a request finds every prompt block of every
    request that reached the server before it, finished or not. A request surely reached it before another when
    its response had begun (``answered_at_s``) before the other was started: the start times alone do not say
    it, since under load a request can wait for its connection while one started later goes out at once. What
    remains: blocks of a request whose response had not begun when this one was started, and blocks no earlier
    prompt holds (generated tokens, cached only as decoding reaches them, or earlier traffic)."""
    keys, total = BlockKeys(), 0
    producer: dict[int, Any] = {}  # block key -> the first request (a RequestResult) whose prompt holds it
    for r in ordered:
        own = keys.of(prompts[r.id], block_size)
        for key in own[:(per_id.get(r.id) or 0) // block_size]:
            source = producer.get(key)
            if source is None or not _surely_before(source, r):
                total += block_size
        for key in own:
            producer.setdefault(key, r)
    return total


def _surely_before(source: client.RequestResult, later: client.RequestResult) -> bool:
    """``source``'s response had begun before ``later`` was started."""
    return (source.answered_at_s is not None and later.sent_at_s is not None
            and source.answered_at_s <= later.sent_at_s)


def _settle_overlap(prediction: Prediction, sequential: bool) -> None:
    """The overlap caveat is moot when no predicted hit depended on timing and the pool evicted nothing."""
    if sequential or prediction.order_dependent_tokens or prediction.predicted_evictions:
        return
    kept = [c for c in prediction.caveats if not c.startswith(OVERLAP_CAVEAT)]
    if len(kept) < len(prediction.caveats):
        prediction.overlap_note = ("requests overlapped, but the pool evicted nothing and every predicted hit is "
                                   "a prompt block of a request whose response had begun before this one was "
                                   "sent: vLLM caches a block when it allocates it and admits requests first "
                                   "come first served, so timing cannot change the count")
    prediction.caveats, prediction.exact_expected = kept, not kept
