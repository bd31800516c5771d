"""Property tests: the O(1) simulator equals a brute-force prefix-tree model on random workloads."""

from hypothesis import HealthCheck, given, settings, strategies as st

from brute_force import brute_force_simulate
from tools.prefixbench import simulate_prefix_cache

# A tiny alphabet makes shared prefixes, repeated blocks at other positions and evictions common.
tokens = st.lists(st.integers(min_value=0, max_value=2), min_size=0, max_size=14)


def shared_prefix_sequences():
    """Sequences built from a few common heads, so deep reuse and eviction pressure both happen."""
    heads = st.lists(tokens, min_size=1, max_size=3)
    return heads.flatmap(lambda hs: st.lists(
        st.tuples(st.sampled_from(hs), tokens).map(lambda pair: pair[0] + pair[1]), min_size=0, max_size=10))


cases = st.fixed_dictionaries({
    "sequences": st.one_of(st.lists(tokens, max_size=10), shared_prefix_sequences()),
    "block_size": st.integers(min_value=1, max_value=4),
    "capacity": st.one_of(st.none(), st.integers(min_value=1, max_value=12)),
    "policy": st.sampled_from(["lru", "seed"]),
    "last_token_rule": st.booleans(),
})


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases)
def test_fast_simulator_matches_brute_force(case):
    fast = simulate_prefix_cache(case["sequences"], case["block_size"], case["capacity"],
                                 policy=case["policy"], last_token_rule=case["last_token_rule"])
    slow = brute_force_simulate(case["sequences"], case["block_size"], case["capacity"],
                                case["policy"], case["last_token_rule"])
    assert {key: fast[key] for key in slow} == slow


@settings(max_examples=300, deadline=None)
@given(cases.filter(lambda c: c["policy"] == "lru"))
def test_lru_never_strands_a_block(case):
    result = simulate_prefix_cache(case["sequences"], case["block_size"], case["capacity"], policy="lru",
                                   last_token_rule=case["last_token_rule"])
    assert result["orphan_blocks"] == 0
    if case["capacity"] is not None:
        assert result["cache_size_blocks"] <= case["capacity"]


@settings(max_examples=300, deadline=None)
@given(cases)
def test_counts_are_consistent(case):
    r = simulate_prefix_cache(case["sequences"], case["block_size"], case["capacity"],
                              policy=case["policy"], last_token_rule=case["last_token_rule"])
    assert r["reused_tokens"] + r["miss_tokens"] == r["total_prompt_tokens"]
    assert r["reused_tokens"] == r["hit_blocks"] * case["block_size"]
    assert r["hit_blocks"] <= r["lookup_blocks"]
    assert r["total_requests"] + r["skipped_empty_requests"] == len(case["sequences"])
    # an unlimited cache is an upper bound for any finite one under the same policy
    unlimited = simulate_prefix_cache(case["sequences"], case["block_size"], None, policy=case["policy"],
                                      last_token_rule=case["last_token_rule"])
    assert r["reused_tokens"] <= unlimited["reused_tokens"]
    assert unlimited["eviction_count"] == 0
