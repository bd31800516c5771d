"""Token sequences in, cache counts out: the library version of the chapter's ``simulate_prefix_cache``.

The counts mean what a serving engine means by them: ``reused_tokens`` is vLLM's
``prefix_cache_hits`` counter and ``total_prompt_tokens`` its ``prefix_cache_queries`` counter, so a
prediction made here can be compared with a server's Prometheus deltas token for token.
"""

from __future__ import annotations

import operator
from array import array
from typing import Iterable, Sequence

import numpy as np

from .cache import PrefixCache, check_capacity, check_policy
from .errors import InputError, require_int


MAX_TOKEN_ID = 2**63 - 1
_TOKEN_BYTES = array("Q").itemsize


def _token_id(field: str, value: object) -> int:
    if isinstance(value, bool):
        raise InputError(field, f"token ids must be integers, got bool {value!r}")
    try:
        token = operator.index(value)  # accepts numpy integers, refuses floats and strings
    except TypeError:
        raise InputError(field, f"token ids must be integers, got {type(value).__name__} {value!r}") from None
    if not 0 <= token <= MAX_TOKEN_ID:
        raise InputError(field, f"token ids must be in [0, 2**63), got {token}")
    return token


def pack_tokens(tokens: Sequence[int], field: str = "tokens") -> bytes:
    """The prompt as native 8-byte ids: validated and packed at C speed on the common path.

    ``array('Q')`` already refuses floats, strings, ``None`` and negative ids; ``bool`` would slip through
    as 0 / 1, so a prompt whose smallest id is 0 or 1 takes the slow, element-by-element check.
    """
    try:
        packed = array("Q", tokens)
        fast = not packed or int(np.frombuffer(packed, dtype=np.uint64).min()) > 1
    except (TypeError, OverflowError):
        fast = False
    if not fast:
        packed = array("Q", [_token_id(f"{field}[{j}]", t) for j, t in enumerate(tokens)])
    return packed.tobytes()


def pack_sequences(token_sequences: object, field: str = "token_sequences") -> list[bytes]:
    """Validate and pack every prompt; errors name the element, e.g. ``token_sequences[3][17]``."""
    if isinstance(token_sequences, (str, bytes)) or not isinstance(token_sequences, Sequence):
        raise InputError(field, f"must be a list of token-id lists, got {type(token_sequences).__name__}")
    packed = []
    for i, tokens in enumerate(token_sequences):
        if isinstance(tokens, (str, bytes)) or not isinstance(tokens, Sequence):
            raise InputError(f"{field}[{i}]", f"must be a list of token ids, got {type(tokens).__name__}")
        packed.append(pack_tokens(tokens, f"{field}[{i}]"))
    return packed


def validate_token_sequences(token_sequences: object, field: str = "token_sequences") -> list[list[int]]:
    """The sequences as lists of plain ints, or an error naming the first bad element."""
    lists = []
    for packed in pack_sequences(token_sequences, field):
        ids = array("Q")
        ids.frombytes(packed)
        lists.append(ids.tolist())
    return lists


class BlockKeys:
    """Exact chained block keys: block i of a prompt is named by (key of block i-1, block i's tokens).

    Each pair is interned to a small int, so a key never collides and costs O(1) to compare however deep
    the block sits. The table is a tree of dicts (one per block, mapping a child's packed tokens to its
    key), which avoids building and hashing a tuple per block on the hot path.
    """

    def __init__(self):
        self._children: list[dict[bytes, int]] = [{}]  # index 0 is the root (ROOT's children)

    def __len__(self) -> int:
        return len(self._children) - 1

    def of_packed(self, packed: bytes, block_size: int) -> list[int]:
        children = self._children
        node = children[0]
        keys = []
        append = keys.append
        step = block_size * _TOKEN_BYTES
        for start in range(0, len(packed) - step + 1, step):
            key = node.get(packed[start:start + step])
            if key is None:
                key = node[packed[start:start + step]] = len(children)
                children.append({})
            append(key)
            node = children[key]
        return keys

    def of(self, tokens: Sequence[int], block_size: int) -> list[int]:
        """Keys of the full blocks of ``tokens``; a trailing partial block gets no key (it is never cached)."""
        return self.of_packed(pack_tokens(tokens), require_int("block_size", block_size, minimum=1))


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
    packed_prompts = pack_sequences(token_sequences)

    cache = PrefixCache(capacity, policy)
    block_keys = BlockKeys()
    requests = prompt_tokens = hit_blocks = full_blocks = hit_requests = skipped = 0
    per_request_hits = []
    for packed in packed_prompts:
        num_tokens = len(packed) // _TOKEN_BYTES
        if not num_tokens:
            skipped += 1
            continue
        keys = block_keys.of_packed(packed, block_size)
        hits = cache.process(keys, max_hit_blocks(num_tokens, block_size, last_token_rule))
        requests += 1
        prompt_tokens += num_tokens
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
