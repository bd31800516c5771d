"""``plan``'s KV bytes per token against the installed vLLM (no server, no weights): vLLM decides from the model's
transformers config whether a model runs MLA and what its head size and KV heads are
(``ModelArchConfigConvertorBase``: ``is_deepseek_mla``, ``get_head_size``, ``get_total_num_kv_heads``), and its
KV cache spec classes give the page a layer allocates for a block; divided by the block size, times the layers,
that is what ``serve.kv_memory`` must say. A config vLLM would run in a way ``kv_memory`` does not size must be
refused, never sized."""

from __future__ import annotations

import json

import pytest

from backend_fixtures import requires_vllm

from tools.prefixbench.core.errors import InputError
from tools.prefixbench.serve.kv_memory import kv_bytes_per_token

pytestmark = requires_vllm

BLOCK = 16
SIZED = {
    "qwen2.5-0.5b": {"model_type": "qwen2", "num_hidden_layers": 24, "num_attention_heads": 14,
                     "num_key_value_heads": 2, "hidden_size": 896, "torch_dtype": "bfloat16"},
    "llama-3-8b": {"model_type": "llama", "num_hidden_layers": 32, "num_attention_heads": 32,
                   "num_key_value_heads": 8, "hidden_size": 4096, "torch_dtype": "bfloat16"},
    "deepseek-v3": {"model_type": "deepseek_v3", "num_hidden_layers": 61, "num_attention_heads": 128,
                    "num_key_value_heads": 128, "hidden_size": 7168, "torch_dtype": "bfloat16", "kv_lora_rank": 512,
                    "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128},
    "deepseek-v2-lite": {"model_type": "deepseek_v2", "num_hidden_layers": 27, "num_attention_heads": 16,
                         "num_key_value_heads": 16, "hidden_size": 2048, "torch_dtype": "bfloat16",
                         "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128},
}
REFUSED = {
    "minicpm3": {"model_type": "minicpm3", "num_hidden_layers": 62, "num_attention_heads": 40,
                 "num_key_value_heads": 40, "hidden_size": 2560, "torch_dtype": "bfloat16", "kv_lora_rank": 256,
                 "qk_rope_head_dim": 32, "qk_nope_head_dim": 64, "v_head_dim": 64},
    "deepseek-v3 without qk_rope_head_dim": {k: v for k, v in SIZED["deepseek-v3"].items() if k != "qk_rope_head_dim"},
}


def _vllm_view(config: dict):
    """vLLM's arch view of ``config`` (through transformers, as vLLM loads a model's config)."""
    import vllm.config  # noqa: F401 - first, or transformers_utils' import cycle trips
    from transformers import AutoConfig
    from vllm.transformers_utils.model_arch_config_convertor import ModelArchConfigConvertorBase

    fields = {k: v for k, v in config.items() if k not in ("model_type", "torch_dtype")}
    hf = AutoConfig.for_model(config["model_type"], **fields)
    return ModelArchConfigConvertorBase(hf, hf)


def _vllm_bytes_per_token(config: dict, kv_dtype: str, tp: int) -> int:
    import torch
    from vllm.v1.kv_cache_interface import FullAttentionSpec, MLAAttentionSpec

    view, dtype = _vllm_view(config), {"bfloat16": torch.bfloat16, "fp8": torch.uint8}[kv_dtype]
    if view.is_deepseek_mla():  # mla_attention.get_kv_cache_spec: one KV head, not split over GPUs
        spec = MLAAttentionSpec(block_size=BLOCK, num_kv_heads=1, max_tp_shards=1, head_size=view.get_head_size(),
                                dtype=dtype, cache_dtype_str=kv_dtype)
    else:  # ModelConfig.get_num_kv_heads
        spec = FullAttentionSpec(block_size=BLOCK, num_kv_heads=max(1, view.get_total_num_kv_heads() // tp),
                                 head_size=view.get_head_size(), dtype=dtype)
    assert spec.page_size_bytes % BLOCK == 0
    return spec.page_size_bytes // BLOCK * config["num_hidden_layers"]


@pytest.mark.parametrize("name", sorted(SIZED))
@pytest.mark.parametrize("kv_dtype", ["bfloat16", "fp8"])
@pytest.mark.parametrize("tp", [1, 8])
def test_bytes_per_token_are_vllms(tmp_path, name, kv_dtype, tp):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(SIZED[name]))
    ours = kv_bytes_per_token(str(config), None if kv_dtype == "bfloat16" else kv_dtype, tp)
    assert ours["bytes_per_token"] == _vllm_bytes_per_token(SIZED[name], kv_dtype, tp)
    assert (ours["attention"] == "mla") == _vllm_view(SIZED[name]).is_deepseek_mla()


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_vllm_would_size_otherwise_is_refused_not_guessed(tmp_path, name):
    """MiniCPM3 has kv_lora_rank, but vLLM runs it without MLA; a DeepSeek config without qk_rope_head_dim gets
    transformers' default. Either way the MLA formula on the file alone would be wrong."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps(REFUSED[name]))
    view = _vllm_view(REFUSED[name])
    if name == "minicpm3":
        assert not view.is_deepseek_mla()
    else:
        assert view.is_deepseek_mla() and view.get_head_size() == 576  # 512 + transformers' 64, not in the file
    with pytest.raises(InputError):
        kv_bytes_per_token(str(config))
