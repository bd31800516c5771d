"""Token sequences in, cache counts out: the library version of the chapter's ``simulate_prefix_cache``.

The counts mean what a serving engine means by them: ``reused_tokens`` is vLLM's
``prefix_cache_hits`` counter and ``total_prompt_tokens`` its ``prefix_cache_queries`` counter, so a
prediction made here can be compared with a server's Prometheus deltas token for token.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

from ..cache.blocks import BlockKeys, max_hit_blocks
from ..cache.prefix_cache import PrefixCache, check_capacity, check_policy
from ..core.errors import InputError, require_int
from ..workload.tokens import TOKEN_BYTES, pack_sequences


def ratio(numerator: int, denominator: int) -> float | None:
    """A rate, or ``None`` when nothing was counted (an undefined rate is not 0%)."""
    return numerator / denominator if denominator else None


def simulate_prefix_cache(
    token_sequences: Iterable[Sequence[int]],
    block_size: int = 4,
    capacity_blocks: int | None = 8,
    *,
    policy: str = "lru",
    last_token_rule: bool = False,
    per_request: bool = False,
) -> dict[str, object]:
    """Serve ``token_sequences`` one after another through a prefix cache and count the reuse.

    ``cache_hit_rate`` is request-level (share of requests that hit at least one block), as in the
    chapter; ``token_reuse_rate`` is token-level (what vLLM's hit-rate counters measure); ``block_hit_rate``
    is hit blocks over full blocks looked up. ``capacity_blocks=None`` means unlimited. Empty prompts are
    skipped and counted in ``skipped_empty_requests``.
    """
    block_size = require_int("block_size", block_size, minimum=1)
    capacity = check_capacity(capacity_blocks)
    check_policy(policy)
    if not isinstance(last_token_rule, bool):
        raise InputError("last_token_rule", f"must be True or False, got {last_token_rule!r}")
    packed_prompts = pack_sequences(token_sequences)
    cache = PrefixCache(capacity, policy)
    counts = _serve(cache, packed_prompts, block_size, last_token_rule)
    reused = counts.hit_blocks * block_size
    result: dict[str, object] = {
        "total_requests": counts.requests,
        "total_prompt_tokens": counts.prompt_tokens,
        "reused_tokens": reused,
        "miss_tokens": counts.prompt_tokens - reused,
        "cache_hit_rate": ratio(counts.hit_requests, counts.requests),
        "token_reuse_rate": ratio(reused, counts.prompt_tokens),
        "prefill_work_reduction": ratio(reused, counts.prompt_tokens),
        "eviction_count": cache.evictions,
        "cache_size_blocks": len(cache),
        "hit_requests": counts.hit_requests,
        "hit_blocks": counts.hit_blocks,
        "lookup_blocks": counts.full_blocks,
        "block_hit_rate": ratio(counts.hit_blocks, counts.full_blocks),
        "orphan_blocks": cache.orphan_blocks(),
        "skipped_empty_requests": counts.skipped,
        "policy": policy,
        "block_size": block_size,
        "capacity_blocks": capacity,
        "last_token_rule": last_token_rule,
    }
    if per_request:
        result["per_request_hit_tokens"] = counts.per_request_hit_tokens
    return result


@dataclass
class _Counts:
    requests: int = 0
    prompt_tokens: int = 0
    hit_blocks: int = 0
    full_blocks: int = 0
    hit_requests: int = 0
    skipped: int = 0
    per_request_hit_tokens: list[int] = field(default_factory=list)


def _serve(cache: PrefixCache, packed_prompts: Sequence[bytes], block_size: int, last_token_rule: bool) -> _Counts:
    """The hot loop: each prompt's block keys through the cache, in order."""
    counts = _Counts()
    block_keys = BlockKeys()
    for packed in packed_prompts:
        num_tokens = len(packed) // TOKEN_BYTES
        if not num_tokens:
            counts.skipped += 1
            continue
        keys = block_keys.of_packed(packed, block_size)
        hits = cache.process(keys, max_hit_blocks(num_tokens, block_size, last_token_rule))
        counts.requests += 1
        counts.prompt_tokens += num_tokens
        counts.full_blocks += len(keys)
        counts.hit_blocks += hits
        counts.hit_requests += hits > 0
        counts.per_request_hit_tokens.append(hits * block_size)
    return counts
