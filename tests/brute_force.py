"""A deliberately naive prefix-cache model to check the fast simulator against.

It shares no code and no data structure with tools/prefixbench/cache.py: a block is identified by the
tuple of *all* tokens up to its end (its whole prefix, spelled out), eviction scans everything, and the
``lru`` policy is stated the way a prefix tree states it: evict the least recently used leaf.
"""

from __future__ import annotations


class BruteForceCache:
    def __init__(self, block_size: int, capacity: int | None, policy: str, last_token_rule: bool):
        self.bs, self.capacity, self.policy, self.last_token_rule = block_size, capacity, policy, last_token_rule
        self.stamp: dict[tuple, int] = {}  # whole-prefix path -> last use (request index or clock)
        self.clock = 0
        self.evictions = 0
        self.reused = self.prompt_tokens = self.requests = self.hit_requests = 0

    def _paths(self, tokens):
        return [tuple(tokens[:end]) for end in range(self.bs, len(tokens) + 1, self.bs)]

    def _is_leaf(self, path):
        return not any(len(q) == len(path) + self.bs and q[:len(path)] == path for q in self.stamp)

    def serve(self, tokens):
        if not tokens:
            return
        paths = self._paths(tokens)
        limit = (len(tokens) - 1) // self.bs if self.last_token_rule else len(paths)
        hits = 0
        while hits < min(limit, len(paths)) and paths[hits] in self.stamp:
            hits += 1
        self.requests += 1
        self.prompt_tokens += len(tokens)
        self.reused += hits * self.bs
        self.hit_requests += hits > 0
        self.clock += 1
        if self.policy == "lru":
            self._admit_lru(paths)
        else:
            self._admit_seed(paths)

    def _admit_lru(self, paths):
        now = self.clock
        for path in paths:
            if path not in self.stamp and self.capacity is not None and len(self.stamp) >= self.capacity:
                leaves = [p for p in self.stamp if self.stamp[p] < now and self._is_leaf(p)]
                if not leaves:
                    return
                del self.stamp[min(leaves, key=self.stamp.__getitem__)]
                self.evictions += 1
            self.stamp[path] = now

    def _admit_seed(self, paths):
        for path in paths:
            self.clock += 1
            self.stamp[path] = self.clock
            while self.capacity is not None and len(self.stamp) > self.capacity:
                del self.stamp[min(self.stamp, key=self.stamp.__getitem__)]
                self.evictions += 1

    def orphans(self):
        return sum(1 for p in self.stamp
                   if any(p[:end] not in self.stamp for end in range(self.bs, len(p), self.bs)))


def brute_force_simulate(sequences, block_size, capacity, policy, last_token_rule):
    model = BruteForceCache(block_size, capacity, policy, last_token_rule)
    for tokens in sequences:
        model.serve(list(tokens))
    return {
        "total_requests": model.requests,
        "total_prompt_tokens": model.prompt_tokens,
        "reused_tokens": model.reused,
        "hit_requests": model.hit_requests,
        "eviction_count": model.evictions,
        "cache_size_blocks": len(model.stamp),
        "orphan_blocks": model.orphans(),
    }
