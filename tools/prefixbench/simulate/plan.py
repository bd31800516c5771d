"""Capacity planning on the engine model: the hit rate a pool of N blocks gives, and the smallest N for a target.

The workload is replayed on ``cache.engine_pool.VllmBlockPool`` (vLLM's own pool rules) one request at a time,
once per pool size, from the smallest pool that fits every request alone up to one where nothing is ever
evicted. Requests are turned into block keys once (``EngineRequest``) and reused for every size:

- token-id prompts: the prompt's blocks, then its generated tokens, which are not known before the server runs:
  stand-ins unique to the prompt take their place (they only ever fill blocks; a repeated prompt gets the same
  stand-ins, as greedy decoding would give it the same output);
- Mooncake traces: the trace's ``hash_ids`` for the prompt's full blocks (the trace's own 512-token blocks),
  fresh keys for the partial last block and the ones decode fills.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import pairwise
from typing import Callable, Iterable, Iterator, Sequence

from ..cache.blocks import BlockKeys
from ..core import bounds
from ..cache.engine_pool import VllmBlockPool
from ..workload.traces import TRACE_BLOCK_TOKENS, TraceRequest
from .pool_size import blocks_needed

STAND_IN_BASE = 2**31
"""Stand-in generated token ids start here, above any vocabulary."""


@dataclass(frozen=True)
class EngineRequest:
    """One request as the pool sees it: block keys of every full block with KV, prompt and KV token counts."""

    keys: tuple
    prompt_tokens: int
    num_tokens: int


def check_memory(kv_tokens: Iterable[int], block_size: int, field: str, hint: str = "") -> int:
    """The block keys requests of ``kv_tokens`` tokens with KV will hold, refused (``InputError`` naming ``field``)
    before one is made when they and a pool holding them all would not fit the memory budget."""
    blocks = sum(n // block_size for n in kv_tokens)
    bounds.check_memory(field, blocks * (bounds.BLOCK_KEY_BYTES + bounds.POOL_BLOCK_BYTES),
                        f"the engine model of {blocks:,} KV blocks", hint)
    return blocks


def requests_from_prompts(prompts: Sequence[Sequence[int]], output_lens: Sequence[int],
                          block_size: int, *, field: str = "prompts") -> list[EngineRequest]:
    check_memory((len(p) + max(o, 1) - 1 for p, o in zip(prompts, output_lens, strict=True)), block_size, field,
                 "use fewer requests or shorter outputs")
    keys = BlockKeys()
    stand_ins: dict[tuple[int, ...], int] = {}
    out: list[EngineRequest] = []
    for prompt, output_len in zip(prompts, output_lens, strict=True):
        base = stand_ins.setdefault(tuple(prompt), STAND_IN_BASE + len(stand_ins) * 1_000_000)
        tokens = list(prompt) + list(range(base, base + max(output_len, 1) - 1))
        out.append(EngineRequest(tuple(keys.of(tokens, block_size)), len(prompt), len(tokens)))
    return out


def requests_from_trace(trace: Sequence[TraceRequest], *, default_output: int = 1,
                        max_output: int | None = None, field: str = "trace") -> list[EngineRequest]:
    """Trace requests on the trace's own block size (``TRACE_BLOCK_TOKENS``)."""
    def kv_tokens(request: TraceRequest) -> int:
        output = request.output_length if request.output_length is not None else default_output
        output = min(output, max_output) if max_output is not None else output
        return request.input_length + max(output, 1) - 1

    check_memory(map(kv_tokens, trace), TRACE_BLOCK_TOKENS, field, "use fewer requests or a lower --max-output-len")
    out, fresh = [], -1
    for request in trace:
        num_tokens = kv_tokens(request)
        full = request.input_length // TRACE_BLOCK_TOKENS
        extra = num_tokens // TRACE_BLOCK_TOKENS - full
        keys = tuple(request.hash_ids[:full]) + tuple(range(fresh, fresh - extra, -1))
        fresh -= extra
        out.append(EngineRequest(keys, request.input_length, num_tokens))
    return out


def min_blocks(requests: Sequence[EngineRequest], block_size: int) -> int:
    """The smallest pool (null block included) that serves every request alone."""
    return max((-(-r.num_tokens // block_size) for r in requests), default=1) + 1


def no_eviction_blocks(requests: Sequence[EngineRequest], block_size: int) -> int:
    """A pool in which no cached block is ever evicted: every block ever cached, plus the largest request."""
    cached = sum(r.num_tokens // block_size for r in requests)
    return cached + min_blocks(requests, block_size)


def hit_rate_at(requests: Sequence[EngineRequest], block_size: int, num_blocks: int) -> dict:
    pool = VllmBlockPool(num_blocks, block_size)
    hits = sum(pool.serve_keys(r.keys, r.prompt_tokens, r.num_tokens) for r in requests)
    queries = sum(r.prompt_tokens for r in requests)
    return {"num_blocks": num_blocks, "hit_tokens": hits, "query_tokens": queries,
            "hit_rate": hits / queries if queries else None, "evictions": pool.evictions}


Evaluate = Callable[[Sequence[int]], list[dict]]
"""Pool sizes -> their ``hit_rate_at`` points, in the same order."""

_WORKER_REQUESTS: tuple = ()


def _worker_init(requests: Sequence[EngineRequest], block_size: int) -> None:
    global _WORKER_REQUESTS
    _WORKER_REQUESTS = (requests, block_size)


def _worker_point(num_blocks: int) -> dict:
    requests, block_size = _WORKER_REQUESTS
    return hit_rate_at(requests, block_size, num_blocks)


def workers_of(workers: int | None, blocks: int = 0) -> int:
    """Processes for independent replays: ``workers``, or the CPUs (at most 8); no more than the memory budget
    holds pools of up to ``blocks`` allocated blocks for (each worker replays on its own pool)."""
    count = workers if workers is not None else min(os.cpu_count() or 1, 8)
    return min(count, max(1, bounds.MEMORY_BUDGET_BYTES // max(blocks * bounds.POOL_BLOCK_BYTES, 1)))


def sequential(requests: Sequence[EngineRequest], block_size: int) -> Evaluate:
    """Pool sizes replayed one after the other in this process: what ``evaluator`` yields with one worker, and what
    ``curve`` and ``smallest_pool_for`` use when given no evaluator."""
    return lambda sizes: [hit_rate_at(requests, block_size, n) for n in sizes]


@contextmanager
def evaluator(requests: Sequence[EngineRequest], block_size: int, workers: int | None = None) -> Iterator[Evaluate]:
    """Pool sizes are independent replays: with ``workers`` > 1 (default: the CPUs, at most 8) they run in
    forked processes that inherit the requests once."""
    workers = workers_of(workers)
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        yield sequential(requests, block_size)
        return
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_worker_init,
                             initargs=(requests, block_size)) as pool:
        yield lambda sizes: list(pool.map(_worker_point, sizes))


def curve_sizes(low: int, high: int, points: int) -> list[int]:
    """``points`` pool sizes spread evenly on a log scale from ``low`` to ``high``, both included."""
    high = max(high, low)
    return sorted({round(low * (high / low) ** (i / max(points - 1, 1))) for i in range(points)} | {low, high})


def curve(requests: Sequence[EngineRequest], block_size: int, points: int = 20,
          low: int | None = None, high: int | None = None, evaluate: Evaluate | None = None) -> list[dict]:
    """The hit rate at ``curve_sizes`` (defaults: the smallest pool that fits, and one that never evicts)."""
    low = low or min_blocks(requests, block_size)
    high = high or no_eviction_blocks(requests, block_size)
    sizes = curve_sizes(low, high, points)
    return (evaluate or sequential(requests, block_size))(sizes)


def smallest_pool_for(requests: Sequence[EngineRequest], block_size: int, target: float,
                      points: Sequence[dict], evaluate: Evaluate | None = None, width: int = 1) -> dict | None:
    """The smallest pool whose hit rate reaches ``target``, searched between the curve's points that bracket it
    (``None`` when even the largest point does not reach it): each round replays ``width`` sizes spread inside
    the bracket (side by side with an ``evaluator``), so the bracket shrinks ``width + 1``-fold per round. (The
    hit rate is jagged at the scale of single blocks, so guessing by interpolation saves nothing.) Assumes more
    blocks never lose hits, which the result checks for the sizes it evaluated."""
    evaluate = evaluate or sequential(requests, block_size)
    reaching = [p for p in points if p["hit_rate"] is not None and p["hit_rate"] >= target]
    if not reaching:
        return None
    evaluated = {p["num_blocks"]: p for p in points}
    smallest = min_blocks(requests, block_size)
    hi = reaching[0]["num_blocks"]
    below = [p["num_blocks"] for p in points if p["num_blocks"] < hi]
    lo = below[-1] if below else max(hi - 1, smallest - 1)
    while hi - lo > 1:  # rate(lo) < target <= rate(hi)
        probes = min(width, hi - lo - 1)
        sizes = sorted({lo + max(1, round((hi - lo) * (i + 1) / (probes + 1))) for i in range(probes)} - {hi})
        for point in evaluate(sizes):
            evaluated[point["num_blocks"]] = point
        for n in sizes:
            if evaluated[n]["hit_rate"] >= target:
                hi = n
                break
            lo = n
    if hi - 1 not in evaluated and hi - 1 >= smallest:
        evaluated[hi - 1] = evaluate([hi - 1])[0]
    rates = [evaluated[n]["hit_rate"] for n in sorted(evaluated)]
    less = evaluated.get(hi - 1) or {"num_blocks": hi - 1, "hit_tokens": None, "hit_rate": None, "evictions": None,
                                     "reason": "cannot serve the largest request alone"}
    return {"planned": evaluated[hi], "one_block_less": less,
            "monotone_where_evaluated": all(a <= b for a, b in pairwise(rates)),
            "evaluated": len(evaluated)}


def cliff(points: Sequence[dict]) -> dict | None:
    """Where the curve falls fastest: the pair of neighbouring sizes with the largest hit-rate drop per block
    (as the pool shrinks), named by the larger size."""
    best = None
    for small, large in pairwise(points):
        if small["hit_rate"] is None or large["hit_rate"] is None:
            continue
        drop = (large["hit_rate"] - small["hit_rate"]) / max(large["num_blocks"] - small["num_blocks"], 1)
        if drop > 0 and (best is None or drop > best["drop_per_block"]):
            best = {"num_blocks": large["num_blocks"], "below": small["num_blocks"], "drop_per_block": drop,
                    "hit_rate_above": large["hit_rate"], "hit_rate_below": small["hit_rate"]}
    return best


__all__ = ["EngineRequest", "blocks_needed", "curve", "curve_sizes", "evaluator", "cliff", "hit_rate_at", "min_blocks",
           "no_eviction_blocks", "requests_from_prompts", "requests_from_trace", "sequential", "smallest_pool_for"]
