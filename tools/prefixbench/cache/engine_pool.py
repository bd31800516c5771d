"""An engine model of vLLM v1's KV block pool: which prompt blocks hit when the pool is small enough to evict.

``PrefixCache`` (policies ``lru`` / ``seed``) teaches the idea; this module copies the engine's bookkeeping so a
prediction stays exact under eviction. The rules, each read from the installed vLLM (``VLLM_VERSION_MODELLED``),
``vllm/v1/core/``:

- The pool has ``num_blocks`` blocks including the null block: ``BlockPool.__init__`` (block_pool.py) builds
  ``blocks`` in block-id order, the ``FreeKVCacheBlockQueue`` (kv_cache_utils.py) over them, then pops block 0
  as ``null_block``, which is never freed. So ``num_blocks - 1`` blocks are usable and the free queue starts
  in block-id order from block 1.
- A lookup walks the request's chained block hashes from block 0 and stops at the first miss
  (``FullAttentionManager.find_longest_cache_hit``, single_type_kv_cache_manager.py); it may cover at most
  ``num_tokens - 1`` tokens (``KVCacheManager.get_computed_blocks``, kv_cache_manager.py: the last prompt
  token is always recomputed to get logits). Of several blocks with one hash, the first inserted still
  cached is used (``BlockHashToBlockMap.get_one_block``).
- A hit takes a free block out of the queue (``BlockPool.touch``: ``ref_cnt == 0`` -> ``free_block_queue.remove``),
  before new blocks are allocated (``SingleTypeKVCacheManager.add_local_computed_blocks``, called by
  ``KVCacheManager.allocate_slots`` before ``allocate_new_blocks``).
- Allocation gives a request ``cdiv(num_tokens_need_slot, block_size)`` blocks in all
  (``SingleTypeKVCacheManager.allocate_new_blocks``), popping the queue's head (``BlockPool.get_new_blocks`` ->
  ``popleft_n``); a popped block's hash is dropped only then (``_maybe_evict_cached_block``: lazy eviction,
  counted in ``evictions``).
- Prefill needs slots for the whole prompt; each decode step for one more token. After ``k`` generated tokens the
  sequence has ``prompt + k`` tokens, and the step that computes the KV of the ``k``-th token needs
  ``prompt + k`` slots; the last sampled token is never computed (the request finishes on it). So a request of
  ``P`` prompt and ``O`` output tokens holds ``cdiv(P + O - 1, block_size)`` blocks at the end, allocated as it
  runs: prompt first, then one block each time decode crosses a block boundary.
- Full blocks are hashed and cached as they fill, generated tokens included: ``allocate_slots`` caches
  ``min(total_computed_tokens + num_new_tokens, request.num_tokens)`` tokens (``SingleTypeKVCacheManager.
  cache_blocks`` -> ``BlockPool.cache_full_blocks``: ``num_tokens // block_size`` full blocks). A recomputed
  block whose hash is already cached is cached again as a second block (``BlockHashToBlockMap.insert``).
- A finished request's blocks are freed in reverse order (``SingleTypeKVCacheManager.free``:
  ``free_blocks(reversed(...))``); ``BlockPool.free_blocks`` puts blocks with a hash at the queue's tail
  (``append_n``, in that order) and blocks without one at its head (``prepend_n``, in that order).
- ``BlockPool.reset_prefix_cache`` drops every hash and leaves the queue order as it is; a queue of blocks that
  all lack a hash behaves the same in any order, so a pool model after a reset starts from block-id order.

Not modelled (absent in the configurations this is used for): hash block sizes finer than the block size
(partial-block entries, copy-on-write partial hits), sliding-window / Mamba groups, speculative decoding,
KV connectors, chunked prefill (it changes when blocks are popped, not which or in what order, while no request
is freed in between), and, so far, several requests running at once: ``admit`` / ``step`` / ``finish`` are the
steps concurrent admission would interleave; ``serve`` runs them for one request at a time.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Sequence

from ..core.errors import require_int
from .blocks import BlockKeys

VLLM_VERSION_MODELLED = "0.32.0"
"""The vLLM release whose ``vllm/v1/core/`` rules this module implements."""

NULL_BLOCK = 0


class PoolExhausted(ValueError):
    """More blocks were needed than the pool has free (vLLM would preempt or hold the request back)."""


@dataclass
class Running:
    """One admitted request: its block ids in allocation order and how far it has been computed and cached."""

    keys: list[int]
    """Chained keys of every full block of the tokens that get KV (prompt plus all but the last output token)."""
    num_tokens: int
    """Tokens that get KV in all: prompt + output - 1."""
    hit_tokens: int
    blocks: list[int] = field(default_factory=list)
    computed: int = 0
    cached_blocks: int = 0


class VllmBlockPool:
    """vLLM v1's block pool, free queue and hash map, for token-id requests (see the module docstring)."""

    def __init__(self, num_blocks: int, block_size: int, keys: BlockKeys | None = None):
        self.num_blocks = require_int("num_blocks", num_blocks, minimum=2)
        self.block_size = require_int("block_size", block_size, minimum=1)
        self.keys = keys if keys is not None else BlockKeys()
        self.evictions = 0
        # head first; block 0 is the null block, popped at start and never freed
        self._free: OrderedDict[int, None] = OrderedDict((b, None) for b in range(1, self.num_blocks))
        self._ref = [0] * self.num_blocks
        self._hash_of: dict[int, int] = {}
        self._cached: dict[int, dict[int, None]] = {}  # key -> block ids holding it, first inserted first

    @property
    def free_queue(self) -> list[int]:
        """Block ids of the free queue, next to be allocated first."""
        return list(self._free)

    def cached_keys(self) -> set[int]:
        return set(self._cached)

    def lookup(self, keys: Sequence[int], max_tokens: int) -> list[int]:
        """Block ids of the longest cached run of ``keys`` from block 0 covering at most ``max_tokens``."""
        found = []
        for key in keys[:max(max_tokens, 0) // self.block_size]:
            holders = self._cached.get(key)
            if not holders:
                break
            found.append(next(iter(holders)))
        return found

    def admit(self, prompt_ids: Sequence[int], output_ids: Sequence[int]) -> Running:
        """Look the prompt up, touch the hits, allocate and cache the prompt's blocks (its prefill)."""
        tokens = list(prompt_ids) + list(output_ids[:-1])
        running = Running(self.keys.of(tokens, self.block_size), len(tokens), 0)
        hits = self.lookup(running.keys, len(prompt_ids) - 1)
        for block in hits:
            if self._ref[block] == 0:
                del self._free[block]
            self._ref[block] += 1
        running.blocks.extend(hits)
        running.hit_tokens = running.computed = len(hits) * self.block_size
        running.cached_blocks = len(hits)
        self.step(running, len(prompt_ids) - running.computed)
        return running

    def step(self, running: Running, new_tokens: int) -> None:
        """Compute ``new_tokens`` more tokens of ``running``: allocate their slots, cache the blocks that filled."""
        running.computed += new_tokens
        need = -(-running.computed // self.block_size) - len(running.blocks)
        if need > len(self._free):
            raise PoolExhausted(f"{need} blocks needed, {len(self._free)} free of {self.num_blocks}")
        for _ in range(max(need, 0)):
            block, _ = self._free.popitem(last=False)
            self._drop_hash(block)
            self._ref[block] = 1
            running.blocks.append(block)
        full = min(running.computed, running.num_tokens) // self.block_size
        for index in range(running.cached_blocks, full):
            block, key = running.blocks[index], running.keys[index]
            self._hash_of[block] = key
            self._cached.setdefault(key, {})[block] = None
        running.cached_blocks = max(running.cached_blocks, full)

    def finish(self, running: Running) -> None:
        """Free the request's blocks in reverse order: hashed ones to the queue's tail, the rest to its head."""
        first, last = [], []
        for block in reversed(running.blocks):
            self._ref[block] -= 1
            if self._ref[block] == 0:
                (last if block in self._hash_of else first).append(block)
        for block in reversed(first):
            self._free[block] = None
            self._free.move_to_end(block, last=False)
        for block in last:
            self._free[block] = None

    def serve(self, prompt_ids: Sequence[int], output_ids: Sequence[int]) -> int:
        """Run one request to its end alone (prefill, then one decode step per generated token but the last);
        return its prompt hit tokens, what vLLM reports as ``cached_tokens`` and counts as prefix-cache hits."""
        running = self.admit(prompt_ids, output_ids)
        while running.computed < running.num_tokens:
            self.step(running, 1)
        self.finish(running)
        return running.hit_tokens

    def _drop_hash(self, block: int) -> None:
        key = self._hash_of.pop(block, None)
        if key is None:
            return
        holders = self._cached[key]
        del holders[block]
        if not holders:
            del self._cached[key]
        self.evictions += 1
