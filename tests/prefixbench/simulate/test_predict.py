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
