"""The best placement as a yardstick: what simple policies and a load-bounded oracle reach on the same requests.

For a router's run (or a planned one), the same requests are replayed on ``N`` engine-model pools
(``cache.engine_pool.VllmBlockPool``, one per replica, one request at a time in the given order) under:

- ``round_robin``: request i on replica i mod N (what a prefix-blind router does);
- ``affinity_k`` (k = 1 .. ``MAX_K``): a hash of the request's first k block keys picks the replica, so every
  request sharing those k blocks lands together (the first k blocks of a prompt shorter than that: all of its
  full blocks; none: round robin);
- ``consistent_hash``: the first block's key on a hash ring of ``RING_POINTS`` points per replica (what a
  prefix-keyed consistent-hash router does; it moves the fewest prefixes when a replica joins or leaves);
- ``oracle_bounded``: the replica whose pool holds the request's longest cached prefix *right now* (the engine
  model's own lookup), among the replicas whose computed prefill so far is at most ``LOAD_BOUND`` times the mean
  (the least loaded one always qualifies), ties to the least loaded. No router knows more than this.

``placement`` (a fixed list) replays a placement that was observed, e.g. the router's: with the same pools and
order, this is the per-replica prediction summed, so ``best - router`` is the points the router lost. Each
result keeps the cluster hit rate over the requests from ``counted_from`` on (earlier ones, e.g. prefill, only
fill the pools), each replica's hit tokens and the load imbalance (most prefill computed by one replica over the
mean).
"""

from __future__ import annotations

import bisect
import hashlib
from typing import Sequence

from ..cache.blocks import BlockKeys
from ..cache.engine_pool import VllmBlockPool
from ..core.errors import InputError, require_int
from .plan import EngineRequest, no_eviction_blocks
from .sequences import ratio

MAX_K = 4
RING_POINTS = 64
LOAD_BOUND = 1.25
YARDSTICKS = ("round_robin", *(f"affinity_{k}" for k in range(1, MAX_K + 1)), "consistent_hash", "oracle_bounded")


def _stable(*parts: object) -> int:
    return int.from_bytes(hashlib.blake2b(repr(parts).encode(), digest_size=8).digest(), "big")


class _Ring:
    def __init__(self, replicas: int):
        points = sorted((_stable("replica", r, i), r) for r in range(replicas) for i in range(RING_POINTS))
        self.hashes, self.owners = [h for h, _ in points], [r for _, r in points]

    def owner(self, key: object) -> int:
        i = bisect.bisect(self.hashes, _stable("key", key)) % len(self.hashes)
        return self.owners[i]


class _Placer:
    """One policy's choice of replica for each request, given the pools as they are now."""

    def __init__(self, policy: str, replicas: int, fixed: Sequence[int] | None):
        self.policy, self.replicas, self.fixed, self.ring = policy, replicas, fixed, _Ring(replicas)

    def choose(self, index: int, request: EngineRequest, pools: Sequence[VllmBlockPool], work: Sequence[int]) -> int:
        n, policy = self.replicas, self.policy
        if self.fixed is not None:
            return self.fixed[index]
        full = request.prompt_tokens // pools[0].block_size
        if policy.startswith("affinity_"):
            head = request.keys[:min(int(policy.split("_")[1]), full)]
            return _stable(tuple(head)) % n if head else index % n
        if policy == "consistent_hash":
            return self.ring.owner(request.keys[0]) if full else index % n
        if policy == "oracle_bounded":
            limit = LOAD_BOUND * sum(work) / n
            lightest = min(range(n), key=lambda r: (work[r], r))
            allowed = [r for r in range(n) if work[r] <= limit or r == lightest]
            reach = request.prompt_tokens - 1
            return min(allowed, key=lambda r: (-len(pools[r].lookup(request.keys, reach)), work[r], r))
        return index % n


def observed_requests(prompts: Sequence[Sequence[int]], outputs: Sequence[Sequence[int]],
                      block_size: int) -> list[EngineRequest]:
    """Requests as they ran: each prompt and the tokens it generated (all but the last get KV, as in vLLM)."""
    keys = BlockKeys()
    out = []
    for prompt, output in zip(prompts, outputs, strict=True):
        tokens = list(prompt) + list(output[:-1])
        out.append(EngineRequest(tuple(keys.of(tokens, block_size)), len(prompt), len(tokens)))
    return out


def check_yardstick(policy: object) -> str:
    if policy not in YARDSTICKS:
        raise InputError("routing", f"unknown placement {policy!r}; choose one of {', '.join(YARDSTICKS)}")
    return str(policy)


def place_on_pools(requests: Sequence[EngineRequest], replicas: int, policy: str | None, block_size: int,
                   num_blocks: int | None = None, *, counted_from: int = 0,
                   placement: Sequence[int] | None = None) -> dict:
    """Replay ``requests`` on ``replicas`` engine-model pools of ``num_blocks`` each (``None``: never evicting),
    placed by ``policy`` or by the fixed ``placement``; the counts from ``counted_from`` on."""
    replicas = require_int("replicas", replicas, minimum=1)
    if placement is None:
        check_yardstick(policy)
    elif len(placement) != len(requests) or any(not 0 <= p < replicas for p in placement):
        raise InputError("placement", f"needs one replica in 0..{replicas - 1} per request")
    size = num_blocks if num_blocks is not None else no_eviction_blocks(requests, block_size)
    pools = [VllmBlockPool(size, block_size) for _ in range(replicas)]
    placer = _Placer(policy or "observed", replicas, placement)
    work, hits, queries = [0] * replicas, [0] * replicas, [0] * replicas
    chosen: list[int] = []
    for index, request in enumerate(requests):
        replica = placer.choose(index, request, pools, work)
        hit = pools[replica].serve_keys(request.keys, request.prompt_tokens, request.num_tokens)
        work[replica] += request.prompt_tokens - hit
        chosen.append(replica)
        if index >= counted_from:
            hits[replica] += hit
            queries[replica] += request.prompt_tokens
    mean = sum(work) / replicas
    return {"policy": policy if placement is None else "observed", "replicas": replicas,
            "placement": chosen[counted_from:], "hit_tokens": sum(hits), "query_tokens": sum(queries),
            "hit_rate": ratio(sum(hits), sum(queries)), "per_replica_hit_tokens": hits,
            "per_replica_query_tokens": queries, "load_imbalance": max(work) / mean if mean else None,
            "num_blocks_per_replica": size, "evictions": sum(p.evictions for p in pools)}


def yardstick(requests: Sequence[EngineRequest], replicas: int, block_size: int, num_blocks: int | None = None, *,
              counted_from: int = 0, observed: dict[str, Sequence[int]] | None = None) -> dict:
    """Every ``YARDSTICKS`` policy on the same requests and pools, the best of them, and for each policy (and each
    ``observed`` placement, e.g. a router's) the points of hit rate lost against that best."""
    rows = {p: place_on_pools(requests, replicas, p, block_size, num_blocks, counted_from=counted_from)
            for p in YARDSTICKS}
    for name, placed in (observed or {}).items():
        rows[name] = {**place_on_pools(requests, replicas, None, block_size, num_blocks, counted_from=counted_from,
                                       placement=placed), "policy": name}
    rated = {p: r["hit_rate"] for p, r in rows.items() if p in YARDSTICKS and r["hit_rate"] is not None}
    best = max(rated, key=lambda p: (rated[p], p == "oracle_bounded"), default=None)
    for row in rows.values():
        row["points_lost_to_best"] = None if best is None or row["hit_rate"] is None else \
            (rated[best] - row["hit_rate"]) * 100
    single = place_on_pools(requests, 1, "round_robin", block_size, num_blocks, counted_from=counted_from)
    return {"replicas": replicas, "block_size": block_size, "num_blocks_per_replica": rows["round_robin"][
                "num_blocks_per_replica"], "policies": rows, "best": best,
            "best_hit_rate": rated.get(best) if best else None, "single_pool_hit_rate": single["hit_rate"],
            "load_bound": LOAD_BOUND, "engine_model": "cache.engine_pool.VllmBlockPool, one request at a time",
            "definition": "points_lost_to_best = (best yardstick hit rate - this policy's) x 100 on the same "
                          "requests, order and pools"}
