"""Hand-worked cases (block size 4, tiny pools) that each pin one rule of the vLLM v1 block-pool model."""

from __future__ import annotations

import pytest

from tools.prefixbench.cache.engine_pool import VLLM_VERSION_MODELLED, PoolExhausted, VllmBlockPool

A = list(range(8))          # two full blocks
UNIQUE = list(range(100, 200))


def test_names_the_vllm_version_it_models():
    assert VLLM_VERSION_MODELLED == "0.32.0"


def test_null_block_is_taken_so_n_blocks_hold_n_minus_1():
    pool = VllmBlockPool(4, 4)
    assert pool.free_queue == [1, 2, 3]
    assert pool.serve(list(range(12)), [0]) == 0  # 12 tokens with KV: 3 blocks fit
    with pytest.raises(PoolExhausted):
        VllmBlockPool(4, 4).serve(list(range(13)), [0])  # 13 tokens: 4 blocks do not


def test_freed_blocks_keep_their_hash_until_reallocated():
    pool = VllmBlockPool(4, 4)
    pool.serve(A, [50])
    assert pool.evictions == 0 and len(pool.cached_keys()) == 2
    pool.serve(UNIQUE[:4], [50])  # one block: takes the free unhashed block 3
    assert pool.evictions == 0
    assert pool.serve(A + [8], [50]) == 8


def test_a_finished_request_is_freed_tail_first_so_its_deepest_block_goes_first():
    pool = VllmBlockPool(4, 4)
    pool.serve(A, [50])
    assert pool.free_queue == [3, 2, 1]
    pool.serve(UNIQUE[:8], [50])  # two blocks: 3, then 2 (A's second block) is evicted
    assert pool.evictions == 1
    assert pool.serve(A + [8], [50]) == 4  # A's first block survived


def test_blocks_without_a_hash_go_to_the_head_hashed_ones_to_the_tail():
    pool = VllmBlockPool(4, 4)
    pool.serve(list(range(4)), [50])  # block 1, hashed
    pool.serve(UNIQUE[:6], [50])  # blocks 2 (hashed) and 3 (partial, no hash)
    assert pool.free_queue == [3, 1, 2]
    pool.serve(UNIQUE[50:54], [50])  # takes the unhashed block 3, evicts nothing
    assert pool.evictions == 0
    assert pool.serve(list(range(5)), [50]) == 4


def test_a_hit_takes_its_block_out_of_the_free_queue():
    pool = VllmBlockPool(4, 4)
    pool.serve(A, [50])  # queue [3, 2, 1]
    running = pool.admit(list(range(4)) + UNIQUE[:5], [50])  # hits block 1, needs two more
    assert running.hit_tokens == 4 and running.blocks == [1, 3, 2] and pool.free_queue == []
    assert pool.evictions == 1  # block 2 (A's second block) was reused
    pool.finish(running)
    assert pool.free_queue == [2, 3, 1]  # 2 holds one token (no hash): head; 3 and 1 hashed: tail, reversed


def test_blocks_filled_with_generated_tokens_are_cached():
    pool = VllmBlockPool(10, 4)
    pool.serve(list(range(6)), [6, 7, 8])  # KV for 0..7: two full blocks, the second half generated
    assert pool.serve(list(range(9)) + [9], [50]) == 8


def test_the_last_sampled_token_has_no_kv():
    pool = VllmBlockPool(10, 4)
    pool.serve(list(range(6)), [6, 7])  # KV for 0..6 only: one full block
    assert pool.serve(list(range(8)) + [99], [50]) == 4


def test_the_last_prompt_token_is_always_recomputed():
    pool = VllmBlockPool(10, 4)
    pool.serve(A, [50])
    assert pool.serve(A, [50]) == 4  # 8 tokens: at most 7 may hit, so one block
    assert pool.serve(A + [8], [50]) == 8


def test_blocks_allocated_while_decoding_count_against_the_pool():
    pool = VllmBlockPool(4, 4)
    pool.serve(list(range(4)), [50])  # block 1, hashed; queue [2, 3, 1]
    pool.serve(UNIQUE[:3], list(range(300, 310)))  # 12 tokens with KV: prefill 1 block, decode 2 more
    assert pool.evictions == 1
    assert pool.serve(list(range(5)), [50]) == 0
    with pytest.raises(PoolExhausted):
        VllmBlockPool(4, 4).serve(A, list(range(300, 306)))  # prompt fits (2 blocks), decode needs a 4th


def test_a_recomputed_block_is_cached_again_and_lookups_use_the_first_copy():
    pool = VllmBlockPool(10, 4)
    pool.serve(A, [50])  # blocks 1, 2
    running = pool.admit(A, [50])  # hits block 1; block 3 recomputes A's second block
    assert running.blocks == [1, 3]
    pool.finish(running)
    assert pool.lookup(pool.keys.of(A, 4), 8) == [1, 2]


class TokenByTokenPool(VllmBlockPool):
    """The reference: one decode step per generated token, as the engine schedules them."""

    def run_alone(self, running):
        while running.computed < running.num_tokens:
            self.step(running, 1)
        self.finish(running)
        return running.hit_tokens


@pytest.mark.parametrize("seed", range(30))
def test_boundary_stepping_equals_token_by_token_in_hits_order_and_events(seed):
    import random

    rng = random.Random(seed)
    size, blocks = rng.choice([2, 4, 8]), rng.randint(6, 14)
    prefixes = [[rng.randrange(5) for _ in range(rng.randint(0, 3 * size))] for _ in range(3)]
    fast = VllmBlockPool(blocks, size, record_events=True, report_hits=seed % 2 == 0)
    slow = TokenByTokenPool(blocks, size, record_events=True, report_hits=seed % 2 == 0)
    for _ in range(25):
        prompt = rng.choice(prefixes) + [rng.randrange(5) for _ in range(rng.randint(1, 2 * size))]
        output = [rng.randrange(5) for _ in range(rng.randint(1, 3 * size))]
        if -(-(len(prompt) + len(output) - 1) // size) > blocks - 1:
            continue
        assert fast.serve(prompt, output) == slow.serve(prompt, output)
        assert fast.free_queue == slow.free_queue
    assert fast.events == slow.events and fast.evictions == slow.evictions
    assert any(e.kind == "removed" for e in fast.events) or fast.evictions == 0


def test_events_name_each_block_stored_reused_and_removed_in_engine_order():
    pool = VllmBlockPool(4, 4, record_events=True, report_hits=True)
    pool.serve(A, [50])                      # stores A's two blocks
    pool.serve(list(range(4)) + UNIQUE[:5], [50])   # reuses A's block 0; its third block evicts A's block 1
    kinds = [(e.kind, e.request, e.block) for e in pool.events]
    assert kinds == [("stored", 0, 0), ("stored", 0, 1),
                     ("reused", 1, 0), ("removed", 1, 2), ("stored", 1, 1)]  # its block 2 is partial
    assert pool.events[0].key == pool.events[2].key


def test_a_server_of_an_unknown_release_is_modelled_with_the_nearest_known_rules_and_says_so():
    from tools.prefixbench.cache.engine_pool import rules_for

    assert rules_for("0.32.0") == {"server_version": "0.32.0", "rules_version": "0.32.0", "note": None}
    assert rules_for("0.32.0+cpu")["note"] is None
    assert rules_for("0.33.0") == {"server_version": "0.33.0", "rules_version": "0.33.0", "note": None}
    newer = rules_for("0.35.1")
    assert newer["rules_version"] == "0.33.0" and "0.35.1" in newer["note"] and "nearest" in newer["note"]
    assert rules_for("0.31.9")["rules_version"] == "0.32.0"
    assert "unknown" in rules_for(None)["note"] and rules_for("dev")["rules_version"] == "0.32.0"


def test_a_recomputed_block_is_a_second_copy_that_still_hits_when_the_first_is_evicted():
    pool = VllmBlockPool(6, 4)
    pool.serve(A, [50])                       # blocks 1, 2 hold A's two blocks
    assert pool.serve(A, [50]) == 4           # last-token rule: block 1 of A is recomputed, into block 3
    assert pool.free_queue == [4, 5, 2, 3, 1]
    pool.serve(UNIQUE[:12], [50])             # pops 4, 5, then 2: the first copy of A's block 1 goes
    assert pool.evictions == 1
    assert pool.serve(A + [9], [50]) == 8     # the copy in block 3 still hits


def _eager(pool: VllmBlockPool) -> VllmBlockPool:
    """The pool as vLLM builds it: every block in the free queue from the start, none left to make later."""
    from collections import OrderedDict

    pool._free = OrderedDict((b, None) for b in range(1, pool.num_blocks))
    pool._next_fresh = pool.num_blocks
    return pool


@pytest.mark.parametrize("seed", range(30))
def test_blocks_made_when_first_allocated_equal_a_pool_built_whole(seed):
    """The never-used blocks are one run in the queue (freed blocks go before it or after it): making each when it
    is popped gives the same hits, block ids, queue order, evictions and events as vLLM's whole free queue."""
    import random

    rng = random.Random(seed)
    size, blocks = rng.choice([2, 4, 8]), rng.randint(4, 40)
    prefixes = [[rng.randrange(5) for _ in range(rng.randint(0, 3 * size))] for _ in range(3)]
    lazy = VllmBlockPool(blocks, size, record_events=True, report_hits=seed % 2 == 0)
    whole = _eager(VllmBlockPool(blocks, size, record_events=True, report_hits=seed % 2 == 0))
    for _ in range(30):
        prompt = rng.choice(prefixes) + [rng.randrange(5) for _ in range(rng.randint(1, 2 * size))]
        output = [rng.randrange(5) for _ in range(rng.randint(1, 3 * size))]
        outcomes = []
        for pool in (lazy, whole):
            try:
                outcomes.append((pool.serve(prompt, output), pool.free_queue, pool.free_blocks()))
            except PoolExhausted as exc:
                outcomes.append(str(exc))
        assert outcomes[0] == outcomes[1]
        if isinstance(outcomes[0], str):  # a refused request leaves both pools in a state not worth comparing
            return
    assert lazy.events == whole.events and lazy.evictions == whole.evictions


def test_a_billion_block_pool_costs_only_the_blocks_a_workload_touches():
    import tracemalloc

    tracemalloc.start()
    try:
        pool = VllmBlockPool(10**9, 16)
        hits = [pool.serve(list(range(64)), [1, 2]) for _ in range(3)]
        used = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert hits == [0, 48, 48] and pool.free_blocks() == 10**9 - 1 and used < 1 << 20
