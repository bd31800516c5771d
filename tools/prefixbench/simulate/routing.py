"""Several replicas, one prefix cache each: where a request goes decides what it can hit.

A cluster of ``N`` replicas has ``N`` independent block pools (one ``PrefixCache`` each, same capacity and
policy). A routing policy places every request on one replica before it runs:

- ``round_robin``: request i goes to replica i mod N, whatever it shares with earlier requests; a prefix used
  by many requests ends up cached (and computed) on every replica.
- ``least_loaded``: the replica with the least work so far. Work is the prefill the block model says each
  replica computed (prompt tokens minus hit tokens); the simulator has no clock, so load is cumulative work,
  not requests in flight.
- ``prefix_affinity``: the replica whose pool holds the longest cached prefix of the request (the block model's
  match), ties to the least loaded, then the lowest index. This is the rule of cache-aware routers (SGLang's
  router, llm-d's prefix scorer, vLLM production-stack's prefix routing) without their load-balance cut-off,
  so ``load_imbalance`` shows what it costs. When most requests share a first block (a system prompt), this
  sends them all to one replica.
- ``prefix_affinity_bounded`` (simulator only): ``prefix_affinity`` among the replicas whose work is at most
  ``BALANCE`` times the mean, i.e. with the load cut-off those routers have.

The cluster hit rate is every replica's hit tokens over every replica's prompt tokens; ``per_replica`` keeps
each pool's own counts (what that replica's ``prefix_cache_hits`` / ``queries`` counters would show).
"""

from __future__ import annotations

from typing import Hashable, Sequence

from ..cache.blocks import max_hit_blocks
from ..cache.prefix_cache import PrefixCache, check_capacity, check_policy
from ..core.errors import InputError, require_int
from ..workload.traces import TRACE_BLOCK_TOKENS, TraceRequest
from .sequences import ratio

ROUTINGS = ("round_robin", "least_loaded", "prefix_affinity")
"""The policies a client (``g0g1 --routing``) can place real requests with."""
SIMULATED_ROUTINGS = ROUTINGS + ("prefix_affinity_bounded",)
"""The simulator also knows the bounded-load variant (``BALANCE``)."""
BALANCE = 1.25
"""``prefix_affinity_bounded`` only considers replicas whose work is at most this times the mean (and always the
least loaded one), as cache-aware routers cap imbalance before they follow a prefix."""


def check_routing(routing: object) -> str:
    if not isinstance(routing, str) or routing not in SIMULATED_ROUTINGS:
        raise InputError("routing", f"unknown routing {routing!r}; choose one of {', '.join(SIMULATED_ROUTINGS)}")
    return routing


class Cluster:
    """``replicas`` block pools and a routing policy: ``place`` picks a replica, ``serve`` runs the request."""

    def __init__(self, replicas: int, routing: str, capacity_blocks: int | None = None, policy: str = "lru"):
        self.replicas = require_int("replicas", replicas, minimum=1)
        self.routing = check_routing(routing)
        self.pools = [PrefixCache(check_capacity(capacity_blocks), check_policy(policy)) for _ in range(replicas)]
        self.work = [0] * replicas
        self.counts = [{"requests": 0, "prompt_tokens": 0, "hit_tokens": 0, "hit_blocks": 0}
                       for _ in range(replicas)]
        self._next = 0

    def place(self, keys: Sequence[Hashable], max_hit: int) -> int:
        """The replica this request goes to (does not change any pool)."""
        if self.routing == "round_robin":
            chosen = self._next % self.replicas
            self._next += 1
            return chosen
        if self.routing == "least_loaded":
            return min(range(self.replicas), key=lambda i: (self.work[i], i))
        candidates: Sequence[int] = range(self.replicas)
        if self.routing == "prefix_affinity_bounded":
            limit = BALANCE * sum(self.work) / self.replicas
            lightest = min(candidates, key=lambda i: (self.work[i], i))
            candidates = [i for i in candidates if self.work[i] <= limit or i == lightest]
        return min(candidates, key=lambda i: (-self.pools[i].match(keys, max_hit), self.work[i], i))

    def serve(self, replica: int, keys: Sequence[Hashable], max_hit: int, prompt_tokens: int,
              block_tokens: int) -> int:
        """Run one request on ``replica``'s pool; returns its hit tokens."""
        hits = self.pools[replica].process(keys, max_hit) * block_tokens
        counts = self.counts[replica]
        counts["requests"] += 1
        counts["prompt_tokens"] += prompt_tokens
        counts["hit_tokens"] += hits
        counts["hit_blocks"] += hits // block_tokens
        self.work[replica] += prompt_tokens - hits
        return hits

    def route(self, keys: Sequence[Hashable], max_hit: int, prompt_tokens: int, block_tokens: int) -> tuple[int, int]:
        """Place and serve one request: ``(replica, hit tokens)``."""
        replica = self.place(keys, max_hit)
        return replica, self.serve(replica, keys, max_hit, prompt_tokens, block_tokens)

    def result(self) -> dict:
        prompt = sum(c["prompt_tokens"] for c in self.counts)
        hits = sum(c["hit_tokens"] for c in self.counts)
        mean_work = sum(self.work) / self.replicas
        return {
            "replicas": self.replicas, "routing": self.routing,
            "requests": sum(c["requests"] for c in self.counts), "input_tokens": prompt, "hit_tokens": hits,
            "token_hit_rate": ratio(hits, prompt),
            "computed_tokens": prompt - hits,
            "load_imbalance": max(self.work) / mean_work if mean_work else None,
            "load_imbalance_definition": "most prefill tokens computed by one replica / the mean over replicas "
                                         "(1 = perfectly even)",
            "per_replica": [{"replica": i, **c, "token_hit_rate": ratio(c["hit_tokens"], c["prompt_tokens"]),
                             "computed_tokens": self.work[i], "eviction_count": pool.evictions,
                             "cache_size_blocks": len(pool)}
                            for i, (c, pool) in enumerate(zip(self.counts, self.pools, strict=True))],
        }


def route_trace(requests: Sequence[TraceRequest], replicas: int, routing: str, capacity_blocks: int | None = None,
                policy: str = "lru", *, last_token_rule: bool = False,
                block_tokens: int = TRACE_BLOCK_TOKENS) -> dict:
    """Replay a Mooncake trace on ``replicas`` pools of ``capacity_blocks`` each, placed by ``routing``.

    With one replica every routing is the single-cache replay (``simulate.replay.replay_trace``).
    """
    if not isinstance(requests, Sequence) or not all(isinstance(r, TraceRequest) for r in requests):
        raise InputError("requests", "must be a list of TraceRequest (use load_trace or parse_trace_line)")
    block_tokens = require_int("block_tokens", block_tokens, minimum=1)
    cluster = Cluster(replicas, routing, capacity_blocks, policy)
    for request in requests:
        keys = request.hash_ids[:request.input_length // block_tokens]
        cluster.route(keys, max_hit_blocks(request.input_length, block_tokens, last_token_rule),
                      request.input_length, block_tokens)
    return {**cluster.result(), "capacity_blocks_per_replica": check_capacity(capacity_blocks), "policy": policy,
            "last_token_rule": last_token_rule, "block_tokens": block_tokens}


def compare_routings(requests: Sequence[TraceRequest], replicas: Sequence[int], routings: Sequence[str],
                     capacity_blocks: int | None = None, policy: str = "lru", *,
                     last_token_rule: bool = False) -> dict:
    """Every (replica count, routing) pair, and what each routing loses against the best at that count."""
    rows = []
    for count in replicas:
        results = [route_trace(requests, count, r, capacity_blocks, policy, last_token_rule=last_token_rule)
                   for r in routings]
        best = max((r["token_hit_rate"] for r in results if r["token_hit_rate"] is not None), default=None)
        for r in results:
            lost = best - r["token_hit_rate"] if best is not None and r["token_hit_rate"] is not None else None
            rows.append({**r, "hit_rate_lost_to_best": lost})
    single = route_trace(requests, 1, "round_robin", capacity_blocks, policy, last_token_rule=last_token_rule)
    return {"single_replica_token_hit_rate": single["token_hit_rate"], "results": rows}
