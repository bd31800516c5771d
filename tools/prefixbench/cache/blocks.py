"""Token ids -> block keys: the identity of a cached KV block, and how many blocks a prompt may hit.

A block is named by its whole prefix: the key of its parent block plus its own tokens. So the same tokens after a
different prefix are a different block, exactly as in vLLM v1's chained block hashes and SGLang's radix tree;
Mooncake traces ship such keys ready-made as ``hash_ids``.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..core.errors import require_int
from ..workload.tokens import TOKEN_BYTES, pack_tokens


class BlockKeys:
    """Exact chained block keys: block i of a prompt is named by (key of block i-1, block i's tokens).

    Each pair is interned to a small int, so a key never collides and costs O(1) to compare however deep
    the block sits. The table is a tree of dicts (one per block, mapping a child's packed tokens to its
    key), which avoids building and hashing a tuple per block on the hot path.
    """

    def __init__(self) -> None:
        self._children: list[dict[bytes, int]] = [{}]  # index 0 is the root (ROOT's children)

    def __len__(self) -> int:
        return len(self._children) - 1

    def of_packed(self, packed: bytes, block_size: int) -> list[int]:
        children = self._children
        node = children[0]
        keys: list[int] = []
        append = keys.append
        step = block_size * TOKEN_BYTES
        full = len(packed) // step
        if not full:
            return keys
        # one C-level split into per-block bytes (a numpy view of fixed-width records), then dict walks only
        for block in np.frombuffer(packed, dtype=f"V{step}", count=full).tolist():
            key = node.get(block)
            if key is None:
                key = node[block] = len(children)
                children.append({})
            append(key)
            node = children[key]
        return keys

    def child(self, parent: int | None, block_tokens: Sequence[int]) -> int:
        """The key of the block of ``block_tokens`` after block ``parent`` (``None``: the first block): how a
        block a server names by (parent hash, token ids), as vLLM's KV events do, becomes one of these keys."""
        node = self._children[0 if parent is None else parent]
        packed = pack_tokens(block_tokens)
        key = node.get(packed)
        if key is None:
            key = node[packed] = len(self._children)
            self._children.append({})
        return key

    def of(self, tokens: Sequence[int], block_size: int) -> list[int]:
        """Keys of the full blocks of ``tokens``; a trailing partial block gets no key (it is never cached)."""
        return self.of_packed(pack_tokens(tokens), require_int("block_size", block_size, minimum=1))


def max_hit_blocks(num_tokens: int, block_size: int, last_token_rule: bool) -> int:
    """How many blocks of an ``num_tokens`` prompt may hit: all full blocks, or with vLLM's rule that the
    last prompt token is always recomputed, ``(num_tokens - 1) // block_size``."""
    if last_token_rule:
        return max(num_tokens - 1, 0) // block_size
    return num_tokens // block_size


