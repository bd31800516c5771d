"""``plan``'s KV bytes per token against the installed vLLM's own KV cache specs (no server, no weights): the
page a full-attention layer or an MLA layer allocates for a block, divided by the block size, times the layers."""

from __future__ import annotations

import json

import pytest

from backend_fixtures import requires_vllm

from tools.prefixbench.serve.kv_memory import kv_bytes_per_token

pytestmark = requires_vllm

BLOCK = 16
SHAPES = {
    "qwen2.5-0.5b": {"num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
                     "hidden_size": 896, "torch_dtype": "bfloat16"},
    "llama-3-8b": {"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                   "hidden_size": 4096, "torch_dtype": "bfloat16"},
    "deepseek-v3": {"num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128,
                    "hidden_size": 7168, "torch_dtype": "bfloat16", "kv_lora_rank": 512, "qk_rope_head_dim": 64,
                    "qk_nope_head_dim": 128, "v_head_dim": 128},
    "deepseek-v2-lite": {"num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16,
                         "hidden_size": 2048, "torch_dtype": "bfloat16", "kv_lora_rank": 512,
                         "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128},
}


def _vllm_page_bytes(config: dict, kv_dtype: str, tp: int) -> int:
    """One block's bytes over every layer, as vLLM's spec classes compute them (``get_kv_cache_spec``'s
    arguments: MLA layers pass one KV head and ``kv_lora_rank + qk_rope_head_dim``, the others
    ``get_num_kv_heads`` and the head size)."""
    import torch
    from vllm.v1.kv_cache_interface import FullAttentionSpec, MLAAttentionSpec

    dtype = {"bfloat16": torch.bfloat16, "fp8": torch.uint8}[kv_dtype]
    if "kv_lora_rank" in config:
        spec = MLAAttentionSpec(block_size=BLOCK, num_kv_heads=1, max_tp_shards=1,
                                head_size=config["kv_lora_rank"] + config["qk_rope_head_dim"], dtype=dtype,
                                cache_dtype_str=kv_dtype)
    else:
        spec = FullAttentionSpec(block_size=BLOCK, num_kv_heads=max(1, config["num_key_value_heads"] // tp),
                                 head_size=config["hidden_size"] // config["num_attention_heads"], dtype=dtype)
    return spec.page_size_bytes * config["num_hidden_layers"]


@pytest.mark.parametrize("name", sorted(SHAPES))
@pytest.mark.parametrize("kv_dtype", ["bfloat16", "fp8"])
@pytest.mark.parametrize("tp", [1, 8])
def test_bytes_per_token_are_vllms_page_size_per_token(tmp_path, name, kv_dtype, tp):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(SHAPES[name]))
    ours = kv_bytes_per_token(str(config), None if kv_dtype == "bfloat16" else kv_dtype, tp)["bytes_per_token"]
    assert ours * BLOCK == _vllm_page_bytes(SHAPES[name], kv_dtype, tp)
