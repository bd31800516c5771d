"""The prediction of a server's counters: the simulator with the last-token rule, warm-up left out."""

from __future__ import annotations


import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("prometheus_client")


from tools.prefixbench.simulate.predict import predict_hits  # noqa: E402
from tools.prefixbench.simulate import simulate_prefix_cache  # noqa: E402
from tools.prefixbench.workload import load_workload  # noqa: E402


def test_prediction_matches_the_simulator_and_skips_warmup_counts():
    workload = load_workload()
    prompts = workload.prompts
    direct = simulate_prefix_cache(prompts, 128, None, last_token_rule=True)
    predicted = predict_hits(prompts, 128, None)
    assert predicted["predicted_hit_tokens"] == direct["reused_tokens"]
    assert predicted["predicted_query_tokens"] == direct["total_prompt_tokens"]
    # a warm-up prompt equal to the first request makes request 0 hit, and the warm-up itself is not counted
    warm = predict_hits(prompts, 128, None, warmup_prompts=[prompts[0]])
    assert warm["per_request_hit_tokens"][0] == (len(prompts[0]) - 1) // 128 * 128
    assert len(warm["per_request_hit_tokens"]) == len(prompts)


def _small_pool_case():
    """Block 4, a pool of 4 (3 usable): three prefixes that cannot all stay cached."""
    a, b, c = list(range(8)), list(range(20, 28)), list(range(40, 48))
    prompts = [a + [90], b + [91], c + [92], a + [93], b + [94]]
    return prompts, [[1]] * len(prompts)


def test_the_engine_model_replays_sequential_requests_with_their_outputs():
    from tools.prefixbench.cache.engine_pool import VllmBlockPool
    from tools.prefixbench.simulate.predict import RunConditions, caveats

    prompts, outputs = _small_pool_case()
    predicted = predict_hits(prompts, 4, 4, outputs=outputs, sequential=True)
    pool = VllmBlockPool(4, 4)
    assert predicted["per_request_hit_tokens"] == [pool.serve(p, o) for p, o in zip(prompts, outputs)]
    assert predicted["policy"] == "vllm_block_pool" and predicted["engine_model"]["used"] is True
    assert predicted["engine_model"]["vllm_version"] == "0.32.0" and predicted["predicted_evictions"] > 0
    assert caveats(predicted, RunConditions(overlapping=False)) == []
    assert any("evicted" in c for c in caveats(predicted, RunConditions(overlapping=True)))


@pytest.mark.parametrize("kwargs, why", [
    ({"sequential": True}, "generated token ids"),
    ({"outputs": [[1], None, [1], [1], [1]], "sequential": True}, "generated token ids"),
])
def test_without_outputs_it_falls_back_to_lru_and_says_why(kwargs, why):
    from tools.prefixbench.simulate.predict import RunConditions, caveats

    prompts, _ = _small_pool_case()
    predicted = predict_hits(prompts, 4, 4, **kwargs)
    assert predicted["policy"] == "lru" and predicted["engine_model"]["used"] is False
    assert why in predicted["engine_model"]["reason"]
    found = caveats(predicted, RunConditions(overlapping=False))
    assert len(found) == 1 and "only approximated" in found[0] and why in found[0]


def test_overlapping_requests_are_replayed_one_at_a_time_as_an_estimate_never_exact():
    from tools.prefixbench.simulate.predict import RunConditions, caveats

    prompts, _ = _small_pool_case()
    predicted = predict_hits(prompts, 4, 4, outputs=[[1]] * 5, sequential=False)
    assert predicted["policy"] == "vllm_block_pool" and predicted["engine_model"]["sequential"] is False
    assert "estimate" in predicted["engine_model"]["reason"]
    assert predicted["predicted_evictions"] > 0
    assert any("only approximated" in c for c in caveats(predicted, RunConditions(overlapping=True)))


def test_earlier_traffic_without_outputs_keeps_the_lru_path():
    prompts, outputs = _small_pool_case()
    predicted = predict_hits(prompts, 4, 4, warmup_prompts=[prompts[0]], outputs=outputs, sequential=True)
    assert predicted["policy"] == "lru" and "earlier" in predicted["engine_model"]["reason"]
    replayed = predict_hits(prompts, 4, 4, warmup_prompts=[prompts[0]], warmup_outputs=[[1]], outputs=outputs,
                            sequential=True)
    assert replayed["policy"] == "vllm_block_pool" and replayed["simulated_warmup_prompts"] == 1


def test_a_pool_too_small_for_a_request_falls_back():
    predicted = predict_hits([list(range(20))], 4, 4, outputs=[[1]], sequential=True)
    assert predicted["policy"] == "lru" and "ran out of blocks" in predicted["engine_model"]["reason"]
