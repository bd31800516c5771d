"""The best-placement yardstick (issue 24): every policy's hit rate and points lost equal a direct replay of its
placement on one engine-model pool per replica."""

from __future__ import annotations

import random

import pytest

from tools.prefixbench.cache.engine_pool import VllmBlockPool
from tools.prefixbench.core.errors import InputError
from tools.prefixbench.simulate.placement import (LOAD_BOUND, YARDSTICKS, observed_requests, place_on_pools,
                                                  yardstick)

BLOCK = 16


def _requests(seed: int = 3, n: int = 40, prefixes: int = 3):
    rng = random.Random(seed)
    heads = [[rng.randrange(10, 1000) for _ in range(rng.choice((32, 48, 64)))] for _ in range(prefixes)]
    prompts, groups = [], []
    for _ in range(n):
        g = rng.randrange(prefixes)
        prompts.append(heads[g] + [rng.randrange(10, 1000) for _ in range(rng.randint(5, 40))])
        groups.append(g)
    outputs = [[rng.randrange(10, 1000) for _ in range(4)] for _ in prompts]
    return observed_requests(prompts, outputs, BLOCK), groups


def _direct(requests, placement, replicas: int, num_blocks: int, counted_from: int = 0) -> tuple[int, int]:
    pools = [VllmBlockPool(num_blocks, BLOCK) for _ in range(replicas)]
    hits = queries = 0
    for i, (request, replica) in enumerate(zip(requests, placement)):
        hit = pools[replica].serve_keys(request.keys, request.prompt_tokens, request.num_tokens)
        if i >= counted_from:
            hits, queries = hits + hit, queries + request.prompt_tokens
    return hits, queries


@pytest.mark.parametrize("num_blocks", [None, 12])
def test_points_lost_match_a_direct_engine_model_replay(num_blocks):
    requests, _ = _requests()
    router = [i % 2 for i in range(len(requests))][::-1]
    found = yardstick(requests, 2, BLOCK, num_blocks, counted_from=3, observed={"router": router})
    size = found["num_blocks_per_replica"]
    direct = {}
    for name, row in found["policies"].items():
        placement = router if name == "router" else [*place_on_pools(requests, 2, name, BLOCK, num_blocks)[
            "placement"][:3], *row["placement"]]
        hits, queries = _direct(requests, placement, 2, size, counted_from=3)
        assert (row["hit_tokens"], row["query_tokens"]) == (hits, queries), name
        direct[name] = hits / queries
    best = max(v for k, v in direct.items() if k in YARDSTICKS)
    assert found["best_hit_rate"] == best and direct[found["best"]] == best
    for name, row in found["policies"].items():
        assert row["points_lost_to_best"] == pytest.approx((best - direct[name]) * 100)
    assert found["policies"]["round_robin"]["points_lost_to_best"] > 0  # 3 prefixes split two ways lose reuse


def test_affinity_keeps_each_prefix_on_one_replica_and_the_oracle_stays_within_its_load_bound():
    requests, groups = _requests(n=60)
    affinity = place_on_pools(requests, 4, "affinity_1", BLOCK)
    by_group: dict = {}
    for g, r in zip(groups, affinity["placement"]):
        by_group.setdefault(g, set()).add(r)
    assert all(len(v) == 1 for v in by_group.values())
    oracle = place_on_pools(requests, 4, "oracle_bounded", BLOCK)
    unbounded_cost = affinity["load_imbalance"]
    assert oracle["load_imbalance"] <= max(unbounded_cost, 2 * LOAD_BOUND)
    assert oracle["hit_rate"] >= place_on_pools(requests, 4, "round_robin", BLOCK)["hit_rate"]


def test_one_replica_is_the_single_pool_and_bad_placements_are_refused():
    requests, _ = _requests(n=10)
    found = yardstick(requests, 1, BLOCK)
    assert {round(r["hit_rate"], 12) for r in found["policies"].values()} == {round(found["single_pool_hit_rate"], 12)}
    with pytest.raises(InputError, match="placement"):
        place_on_pools(requests, 2, None, BLOCK, placement=[0] * 9)
    with pytest.raises(InputError, match="unknown placement"):
        place_on_pools(requests, 2, "fastest", BLOCK)
