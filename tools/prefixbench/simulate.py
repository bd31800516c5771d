"""Token sequences in, cache counts out: the library version of the chapter's ``simulate_prefix_cache``.

The counts mean what a serving engine means by them: ``reused_tokens`` is vLLM's
``prefix_cache_hits`` counter and ``total_prompt_tokens`` its ``prefix_cache_queries`` counter, so a
prediction made here can be compared with a server's Prometheus deltas token for token.
"""

from __future__ import annotations

import operator
from typing import Hashable, Iterable, Sequence

from .cache import ROOT, PrefixCache, check_capacity, check_policy
from .errors import InputError, require_int


def validate_token_sequences(token_sequences: object, field: str = "token_sequences") -> list[list[int]]:
    """Return the sequences as lists of plain ints, or raise naming the first bad element."""
    if isinstance(token_sequences, (str, bytes)) or not isinstance(token_sequences, Sequence):
        raise InputError(field, f"must be a list of token-id lists, got {type(token_sequences).__name__}")
    checked = []
    for i, tokens in enumerate(token_sequences):
        if isinstance(tokens, (str, bytes)) or not isinstance(tokens, Sequence):
            raise InputError(f"{field}[{i}]", f"must be a list of token ids, got {type(tokens).__name__}")
        if not all(type(t) is int for t in tokens):
            tokens = [_token_id(f"{field}[{i}][{j}]", t) for j, t in enumerate(tokens)]
        elif tokens and min(tokens) < 0:
            j = next(j for j, t in enumerate(tokens) if t < 0)
            raise InputError(f"{field}[{i}][{j}]", f"token ids must be >= 0, got {tokens[j]}")
        checked.append(list(tokens))
    return checked


def _token_id(field: str, value: object) -> int:
    if isinstance(value, bool):
        raise InputError(field, f"token ids must be integers, got bool {value!r}")
    try:
        token = operator.index(value)  # accepts numpy integers, refuses floats and strings
    except TypeError:
        raise InputError(field, f"token ids must be integers, got {type(value).__name__} {value!r}") from None
    if token < 0:
        raise InputError(field, f"token ids must be >= 0, got {token}")
    return token


def chain_block_keys(tokens: Sequence[int], block_size: int, table: dict) -> list[int]:
    """Keys of the full blocks of ``tokens``; a trailing partial block gets no key (it is never cached).

    Each key names ``(parent key, this block's tokens)``. ``table`` interns those pairs to small ints, so
    keys are exact (no hash collisions) and comparing one costs O(1) however deep the block sits.
    """
    keys = []
    parent: Hashable = ROOT
    for start in range(0, len(tokens) - block_size + 1, block_size):
        pair = (parent, tuple(tokens[start:start + block_size]))
        parent = table.setdefault(pair, len(table))
        keys.append(parent)
    return keys


def max_hit_blocks(num_tokens: int, block_size: int, last_token_rule: bool) -> int:
    """How many blocks of an ``num_tokens`` prompt may hit: all full blocks, or with vLLM's rule that the
    last prompt token is always recomputed, ``(num_tokens - 1) // block_size``."""
    if last_token_rule:
        return max(num_tokens - 1, 0) // block_size
    return num_tokens // block_size


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
    sequences = validate_token_sequences(token_sequences)

    cache = PrefixCache(capacity, policy)
    table: dict = {}
    requests = prompt_tokens = hit_blocks = full_blocks = hit_requests = skipped = 0
    per_request_hits = []
    for tokens in sequences:
        if not tokens:
            skipped += 1
            continue
        keys = chain_block_keys(tokens, block_size, table)
        hits = cache.process(keys, max_hit_blocks(len(tokens), block_size, last_token_rule))
        requests += 1
        prompt_tokens += len(tokens)
        full_blocks += len(keys)
        hit_blocks += hits
        hit_requests += hits > 0
        per_request_hits.append(hits * block_size)

    reused = hit_blocks * block_size
    result: dict[str, object] = {
        "total_requests": requests,
        "total_prompt_tokens": prompt_tokens,
        "reused_tokens": reused,
        "miss_tokens": prompt_tokens - reused,
        "cache_hit_rate": ratio(hit_requests, requests),
        "token_reuse_rate": ratio(reused, prompt_tokens),
        "prefill_work_reduction": ratio(reused, prompt_tokens),
        "eviction_count": cache.evictions,
        "cache_size_blocks": len(cache),
        "hit_requests": hit_requests,
        "hit_blocks": hit_blocks,
        "lookup_blocks": full_blocks,
        "block_hit_rate": ratio(hit_blocks, full_blocks),
        "orphan_blocks": cache.orphan_blocks(),
        "skipped_empty_requests": skipped,
        "policy": policy,
        "block_size": block_size,
        "capacity_blocks": capacity,
        "last_token_rule": last_token_rule,
    }
    if per_request:
        result["per_request_hit_tokens"] = per_request_hits
    return result
