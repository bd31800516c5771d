"""Mooncake trace requests as token ids, at a server's own block scale.

Each ``hash_id`` becomes a deterministic block of ``block_tokens`` token ids (seeded by the id), so two requests
share their first k blocks of tokens exactly when they share their first k hash ids, as in the trace. A trace
block is 512 tokens; a request's last id names a partial block when its ``input_length`` is not a multiple of
512, and stays partial here: ``floor(rest * block_tokens / 512)`` tokens, at least 1 and at most
``block_tokens - 1``. Output lengths come from the trace, capped.
"""

from __future__ import annotations

import random
from typing import Sequence

from ..core.errors import require_int
from .traces import TRACE_BLOCK_TOKENS, TraceRequest

VOCAB = (10, 1000)


class TraceTokens:
    """Token ids of trace blocks, made once per hash id."""

    def __init__(self, block_tokens: int, seed: int = 0):
        self.block_tokens = require_int("block_tokens", block_tokens, minimum=1)
        self.seed = seed
        self._blocks: dict[int, list[int]] = {}

    def block(self, hash_id: int) -> list[int]:
        found = self._blocks.get(hash_id)
        if found is None:
            rng = random.Random(f"{self.seed}:{hash_id}")
            found = self._blocks[hash_id] = [rng.randrange(*VOCAB) for _ in range(self.block_tokens)]
        return found

    def last_block_len(self, request: TraceRequest) -> int:
        rest = request.input_length - (len(request.hash_ids) - 1) * TRACE_BLOCK_TOKENS
        if rest >= TRACE_BLOCK_TOKENS or self.block_tokens == 1:
            return self.block_tokens
        return min(max(rest * self.block_tokens // TRACE_BLOCK_TOKENS, 1), self.block_tokens - 1)

    def prompt(self, request: TraceRequest) -> list[int]:
        tokens: list[int] = []
        for hash_id in request.hash_ids[:-1]:
            tokens += self.block(hash_id)
        return tokens + self.block(request.hash_ids[-1])[:self.last_block_len(request)]

    def length(self, request: TraceRequest) -> int:
        return (len(request.hash_ids) - 1) * self.block_tokens + self.last_block_len(request)


def output_lengths(lines: Sequence[dict], cap: int | None) -> list[int]:
    """Each line's ``output_length`` (at least 1), capped at ``cap``."""
    out = []
    for line in lines:
        n = line.get("output_length")
        n = n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 1
        out.append(min(n, cap) if cap else n)
    return out
