"""The block model: a pool of cached KV blocks with the eviction policies of a real engine.

A block is identified by a *chained key*: the key of its parent block plus its own tokens (see
``cache.blocks.BlockKeys``; Mooncake traces ship such keys as ``hash_ids``). So the same tokens after a
different prefix are a different block, exactly as in vLLM v1's block hashes and SGLang's radix tree.

Every operation below is O(1) per block: the eviction order lives in an ``OrderedDict`` whose first entry is
always the next victim, instead of scanning the whole cache for the oldest timestamp.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Hashable, Sequence

from ..core.errors import InputError, require_int

ROOT: Hashable = -1
"""Parent key of a request's first block."""

POLICIES = {
    "lru": (
        "What vLLM v1 and SGLang do: blocks in use by the running request are pinned, and when it finishes "
        "its blocks are released tail first, so among equally recent blocks the deepest goes first. "
        "Equivalent to evicting the least recently used leaf of the prefix tree; never strands a block."
    ),
    "seed": (
        "Plain LRU that touches a request's blocks in prefix order, as the chapter's reference code does. "
        "The head of a request becomes older than its tail, so the head can be evicted first and leave "
        "cached tail blocks that no lookup can reach (orphans)."
    ),
}


def check_policy(policy: object) -> str:
    if not isinstance(policy, str) or policy not in POLICIES:
        raise InputError("policy", f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}")
    return policy


def check_capacity(capacity_blocks: object) -> int | None:
    """``None`` (or ``float('inf')``) means unlimited; otherwise a positive integer number of blocks."""
    if capacity_blocks is None or capacity_blocks == float("inf"):
        return None
    return require_int("capacity_blocks", capacity_blocks, minimum=1)


class PrefixCache:
    """Cached blocks, their parents (to count orphans) and the order in which they will be evicted."""

    def __init__(self, capacity_blocks: int | None = None, policy: str = "lru"):
        self.capacity_blocks = check_capacity(capacity_blocks)
        self.policy = check_policy(policy)
        self.evictions = 0
        self._parent: dict[Hashable, Hashable] = {}
        # Evictable blocks, next victim first. Under "lru" a running request's blocks are taken out of it
        # (pinned); under "seed" it holds every cached block.
        self._order: OrderedDict[Hashable, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._parent)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._parent

    def match(self, keys: Sequence[Hashable], max_hit: int | None = None) -> int:
        """Number of leading blocks found in the cache: walk from block 0 and stop at the first miss."""
        limit = len(keys) if max_hit is None else min(max_hit, len(keys))
        cached = self._parent
        hits = 0
        while hits < limit and keys[hits] in cached:
            hits += 1
        return hits

    def process(self, keys: Sequence[Hashable], max_hit: int | None = None) -> int:
        """Serve one request whose full blocks have ``keys``; return how many blocks hit.

        ``max_hit`` caps the hits (vLLM always recomputes the last prompt token, so an n-token prompt can
        hit at most ``(n - 1) // block_size`` blocks). Blocks past the cap are still computed and cached.
        """
        if self.policy == "lru":
            return self._admit_lru(keys, max_hit)
        hits = self.match(keys, max_hit)
        self._admit_seed(keys)
        return hits

    def _admit_lru(self, keys: Sequence[Hashable], max_hit: int | None = None) -> int:
        """Pin the request's cached blocks, add the rest (evicting the least recent unpinned), release all tail
        first; return the leading hits (one walk: the leading run is counted before anything is evicted)."""
        parents, order, capacity = self._parent, self._order, self.capacity_blocks
        pop = order.pop
        count, n = 0, len(keys)
        while count < n and keys[count] in parents:
            pop(keys[count], None)  # pinned while the request runs
            count += 1
        hits = count if max_hit is None else min(count, max_hit)
        parent = keys[count - 1] if count else ROOT
        for key in keys[count:]:
            if key in parents:
                pop(key, None)
            else:
                if capacity is not None and len(parents) >= capacity:
                    if not order:
                        break  # every cached block is this request's: the rest is computed but not kept
                    victim, _ = order.popitem(last=False)
                    del parents[victim]
                    self.evictions += 1
                parents[key] = parent
            count += 1
            parent = key
        # release tail first: the deepest block becomes the next victim
        order.update(dict.fromkeys(reversed(keys[:count])))
        return hits

    def _admit_seed(self, keys: Sequence[Hashable]) -> None:
        parents, order, capacity = self._parent, self._order, self.capacity_blocks
        parent = ROOT
        for key in keys:
            if key in parents:
                order.move_to_end(key)
            else:
                parents[key] = parent
                order[key] = None
                if capacity is not None and len(parents) > capacity:
                    victim, _ = order.popitem(last=False)
                    del parents[victim]
                    self.evictions += 1
            parent = key

    def orphan_blocks(self) -> int:
        """Cached blocks that no lookup can reach, because some block on their prefix path is not cached."""
        parents = self._parent
        reachable: dict[Hashable, bool] = {ROOT: True}
        for start in parents:
            path = []
            key = start
            while key not in reachable:
                if key not in parents:
                    reachable[key] = False
                    break
                path.append(key)
                key = parents[key]
            verdict = reachable[key]
            for node in path:
                reachable[node] = verdict
        return sum(1 for key in parents if not reachable[key])
