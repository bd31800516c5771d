"""The benchmark's stand-in for the chapter's reference must be faithful, or its speed-up means nothing."""

from benchmarks.bench_simulator import eviction_heavy_workload, seed_reference_replay, seed_reference_simulate
from tools.prefixbench import simulate_prefix_cache
from tools.prefixbench.traces import load_trace, replay_trace

SEED_SEQUENCES = [[1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 9, 10], [20, 21, 22, 23, 24, 25, 26, 27]]


def test_reference_passes_the_seed_visible_test():
    ref = seed_reference_simulate(SEED_SEQUENCES, block_size=2, capacity_blocks=4)
    assert ref["total_prompt_tokens"] == 24 and ref["reused_tokens"] == 6 and ref["hit_requests"] == 1
    assert ref["eviction_count"] > 0


def test_library_seed_policy_reproduces_the_reference():
    # where position + content identify a prefix (random tokens), the reference's keys equal chained keys
    sequences = eviction_heavy_workload(num_requests=40, prefix_len=256, unique_len=64)
    ref = seed_reference_simulate(sequences, 16, 64)
    lib = simulate_prefix_cache(sequences, 16, 64, policy="seed")
    assert ref["eviction_count"] > 0
    for key in ("reused_tokens", "eviction_count", "cache_size_blocks", "hit_requests"):
        assert lib[key] == ref[key], key


def test_reference_trace_replay_agrees_with_library(shared_traces):
    head = load_trace("conversation")[:800]
    ref = seed_reference_replay(head, 1500)
    lib = replay_trace(head, 1500, "seed")
    assert ref["eviction_count"] > 0
    assert (lib["hit_blocks"], lib["eviction_count"]) == (ref["hit_blocks"], ref["eviction_count"])
