"""The block model's semantics, one named behaviour per test, and its input checks."""

import pytest

from tools.prefixbench import BlockKeys, InputError, PrefixCache, simulate_prefix_cache

SEED_SEQUENCES = [
    [1, 2, 3, 4, 5, 6, 7, 8],
    [1, 2, 3, 4, 5, 6, 9, 10],
    [20, 21, 22, 23, 24, 25, 26, 27],
]


def test_seed_visible_test_holds():
    r = simulate_prefix_cache(SEED_SEQUENCES, block_size=2, capacity_blocks=4)
    assert (r["total_requests"], r["total_prompt_tokens"], r["reused_tokens"], r["miss_tokens"]) == (3, 24, 6, 18)
    assert r["cache_hit_rate"] == 1 / 3
    assert r["token_reuse_rate"] == r["prefill_work_reduction"] == 6 / 24
    # request 2 evicts request 1's tail block (7, 8); request 3 evicts all four cached blocks
    assert r["eviction_count"] == 5
    assert r["cache_size_blocks"] == 4
    assert (r["policy"], r["block_size"], r["capacity_blocks"], r["last_token_rule"]) == ("lru", 2, 4, False)


def test_partial_trailing_block_never_hits():
    r = simulate_prefix_cache([[1, 2, 3], [1, 2, 3]], block_size=2, capacity_blocks=None)
    assert r["reused_tokens"] == 2  # only the full block (1, 2); token 3 is recomputed
    assert r["lookup_blocks"] == 2


def test_block_identity_is_the_whole_prefix():
    # block (3, 4) sits at position 1 in both requests but after a different first block
    r = simulate_prefix_cache([[1, 2, 3, 4], [9, 9, 3, 4]], block_size=2, capacity_blocks=None)
    assert r["reused_tokens"] == 0
    keys = BlockKeys()
    first, second = keys.of([1, 2, 3, 4], 2), keys.of([9, 9, 3, 4], 2)
    assert first[1] != second[1] and len(keys) == 4
    assert keys.of([1, 2, 3, 4, 5], 2) == first  # same blocks, same keys; the partial block gets none


def test_lookup_stops_at_first_miss():
    r = simulate_prefix_cache([[1, 2, 3, 4, 5, 6], [1, 2, 7, 7, 5, 6]], block_size=2, capacity_blocks=None)
    assert r["reused_tokens"] == 2


def test_last_token_rule_caps_hits():
    seqs = [[1, 2, 3, 4], [1, 2, 3, 4]]
    assert simulate_prefix_cache(seqs, 2, None)["reused_tokens"] == 4
    assert simulate_prefix_cache(seqs, 2, None, last_token_rule=True)["reused_tokens"] == 2
    # a 5-token prompt can still hit both of its full blocks
    assert simulate_prefix_cache([[1, 2, 3, 4, 5]] * 2, 2, None, last_token_rule=True)["reused_tokens"] == 4


def test_lru_evicts_tail_before_head():
    cache = PrefixCache(capacity_blocks=3, policy="lru")
    cache.process(["a", "ab", "abc"])
    cache.process(["x"])  # needs room: the deepest block of the older request goes, not its head
    assert "a" in cache and "ab" in cache and "abc" not in cache
    assert cache.match(["a", "ab", "abc"]) == 2


def test_seed_policy_evicts_head_first_and_strands_orphans():
    cache = PrefixCache(capacity_blocks=3, policy="seed")
    cache.process(["a", "ab", "abc"])
    cache.process(["x"])
    assert "a" not in cache and "abc" in cache
    assert cache.match(["a", "ab", "abc"]) == 0
    assert cache.orphan_blocks() == 2  # ab and abc are cached but unreachable


def test_request_longer_than_capacity():
    long = list(range(10))
    lru = simulate_prefix_cache([long, long], 2, 3, policy="lru")
    seed = simulate_prefix_cache([long, long], 2, 3, policy="seed")
    assert lru["reused_tokens"] == 6 and lru["orphan_blocks"] == 0  # keeps the head, drops the tail
    assert seed["reused_tokens"] == 0 and seed["orphan_blocks"] == 3  # keeps the tail, loses the head


def test_hit_blocks_are_refreshed():
    # A is used again by request 3, so when request 4 needs room, B (older) goes and A stays.
    r = simulate_prefix_cache([[1, 1], [2, 2], [1, 1], [3, 3], [1, 1]], 2, 2)
    assert r["reused_tokens"] == 4 and r["eviction_count"] == 1


def test_empty_input_gives_undefined_rates_not_zero():
    r = simulate_prefix_cache([], 4, 8)
    assert r["total_requests"] == 0 and r["cache_hit_rate"] is None and r["token_reuse_rate"] is None
    r = simulate_prefix_cache([[], [1, 2, 3, 4]], 4, 8)
    assert r["total_requests"] == 1 and r["skipped_empty_requests"] == 1


def test_per_request_hit_tokens():
    r = simulate_prefix_cache(SEED_SEQUENCES, 2, None, per_request=True)
    assert r["per_request_hit_tokens"] == [0, 6, 0]


def test_numpy_style_integers_are_accepted():
    class Index:  # behaves like numpy.int64: has __index__ but is not int
        def __init__(self, v): self.v = v
        def __index__(self): return self.v
    r = simulate_prefix_cache([[Index(1), Index(2)], [1, 2]], 2, None)
    assert r["reused_tokens"] == 2


@pytest.mark.parametrize("kwargs, field", [
    ({"block_size": 0}, "block_size"),
    ({"block_size": -3}, "block_size"),
    ({"block_size": 2.0}, "block_size"),
    ({"block_size": True}, "block_size"),
    ({"capacity_blocks": 0}, "capacity_blocks"),
    ({"capacity_blocks": -1}, "capacity_blocks"),
    ({"capacity_blocks": "8"}, "capacity_blocks"),
    ({"policy": "fifo"}, "policy"),
    ({"last_token_rule": "yes"}, "last_token_rule"),
])
def test_bad_parameters_name_the_field(kwargs, field):
    with pytest.raises(InputError) as err:
        simulate_prefix_cache(SEED_SEQUENCES, **kwargs)
    assert err.value.field == field
    assert str(err.value).startswith(f"{field}: ")


@pytest.mark.parametrize("sequences, field", [
    ("1234", "token_sequences"),
    ([[1, 2], "ab"], "token_sequences[1]"),
    ([[1, 2], [3, 4.0]], "token_sequences[1][1]"),
    ([[1, True]], "token_sequences[0][1]"),
    ([[1, -2]], "token_sequences[0][1]"),
    ([[1, None]], "token_sequences[0][1]"),
    (None, "token_sequences"),
])
def test_bad_tokens_name_the_element(sequences, field):
    with pytest.raises(InputError) as err:
        simulate_prefix_cache(sequences, 2, 4)
    assert err.value.field == field


def test_errors_are_value_errors_for_seed_compatibility():
    with pytest.raises(ValueError):
        simulate_prefix_cache(SEED_SEQUENCES, block_size=0)
