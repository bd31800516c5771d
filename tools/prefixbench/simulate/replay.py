"""Replay a Mooncake trace through the block model: its ``hash_ids`` are the chained block keys already."""

from __future__ import annotations

from typing import Sequence

from ..cache.blocks import max_hit_blocks
from ..cache.prefix_cache import PrefixCache, check_capacity, check_policy
from ..core.errors import InputError, require_int
from ..core.progress import track
from ..workload.traces import TRACE_BLOCK_TOKENS, TraceRequest
from .sequences import ratio


def replay_trace(
    requests: Sequence[TraceRequest],
    capacity_blocks: int | None = None,
    policy: str = "lru",
    *,
    last_token_rule: bool = False,
    block_tokens: int = TRACE_BLOCK_TOKENS,
    progress: bool = False,
) -> dict[str, object]:
    """Serve the trace's requests in order through one cache; hits count full 512-token blocks only.

    ``token_hit_rate`` = hit blocks * 512 / sum(input_length), the paper's "cache ratio" when the cache is
    unlimited. ``capacity_blocks=None`` means unlimited.
    """
    capacity = check_capacity(capacity_blocks)
    check_policy(policy)
    block_tokens = require_int("block_tokens", block_tokens, minimum=1)
    _check_requests(requests)
    cache = PrefixCache(capacity, policy)
    hit_blocks = full_blocks = input_tokens = hit_requests = 0
    label = f"replay {policy} cap={capacity or 'inf'}" if progress else None
    for request in track(requests, label):
        full = request.input_length // block_tokens
        keys = request.hash_ids[:full]
        hits = cache.process(keys, max_hit_blocks(request.input_length, block_tokens, last_token_rule))
        hit_blocks += hits
        hit_requests += hits > 0
        full_blocks += full
        input_tokens += request.input_length
    hit_tokens = hit_blocks * block_tokens
    return {
        "requests": len(requests),
        "input_tokens": input_tokens,
        "hit_tokens": hit_tokens,
        "hit_blocks": hit_blocks,
        "lookup_blocks": full_blocks,
        "token_hit_rate": ratio(hit_tokens, input_tokens),
        "block_hit_rate": ratio(hit_blocks, full_blocks),
        "request_hit_rate": ratio(hit_requests, len(requests)),
        "eviction_count": cache.evictions,
        "cache_size_blocks": len(cache),
        "orphan_blocks": cache.orphan_blocks(),
        "capacity_blocks": capacity,
        "capacity_tokens": capacity * block_tokens if capacity else None,
        "policy": policy,
        "last_token_rule": last_token_rule,
        "block_tokens": block_tokens,
    }


def _check_requests(requests: object) -> None:
    if not isinstance(requests, Sequence) or not all(isinstance(r, TraceRequest) for r in requests):
        raise InputError("requests", "must be a list of TraceRequest (use load_trace or parse_trace_line)")
    for i, request in enumerate(requests):
        if type(request.input_length) is not int or request.input_length < 1:
            raise InputError(f"requests[{i}].input_length", f"must be a positive integer, got {request.input_length!r}")
