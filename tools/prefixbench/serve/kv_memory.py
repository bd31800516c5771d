"""How many bytes of KV cache one token costs for a model, read from its config: what a pool of N blocks weighs.

Per token, every attention layer keeps a key and a value vector per KV head: ``2 x layers x kv_heads x head_dim
x dtype bytes``, as vLLM 0.32 sizes a full-attention model's block (``FullAttentionSpec.page_size_bytes``; checked
against it for the local models and a Qwen2.5-0.5B-shaped config). A pool of ``N`` blocks of ``B`` tokens weighs
``N x B x`` that (vLLM allocates whole blocks). With tensor parallelism the figure is per GPU, as vLLM sizes it:
each GPU keeps ``max(1, kv_heads // tp)`` KV heads (``ModelConfig.get_num_kv_heads``; fewer heads than GPUs are
copied, not split).

MLA models (DeepSeek-V2 / V3, Kimi K2: ``kv_lora_rank`` in a config of a model type vLLM serves with MLA,
``MLA_MODEL_TYPES``) keep one latent vector per token and layer
instead of a key and a value per head: ``layers x (kv_lora_rank + qk_rope_head_dim) x dtype bytes``, as vLLM sizes
an ``MLAAttentionSpec`` (one KV head, no separate value, ``max_tp_shards=1``: every GPU holds the whole latent, so
tensor parallelism does not divide it). DeepSeek-V3 in bfloat16: 61 x 576 x 2 = 70,272 bytes per token.

Models whose KV is not one of those shapes are refused with the reason rather than sized wrongly: ``kv_lora_rank``
in another model type (MiniCPM3: vLLM runs it without MLA), sparse MLA with an indexer (DeepSeek-V3.2: the
indexer keeps a cache of its own) or compressed states (DeepSeek-V4), MLA beside linear attention (Kimi-Linear),
sliding-window, linear-attention and Mamba layers (vLLM sizes and groups them apart), and the KV dtypes whose blocks
carry scales or packed values. (``VLLM_MLA_DISABLE=1`` on the server turns MLA off; these figures assume it is not
set.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypedDict

from ..core import bounds
from ..core.errors import InputError
from .models import LOCAL_MODELS

MODEL_DTYPE_BYTES = {"float16": 2, "half": 2, "bfloat16": 2, "float32": 2, "float": 2}
"""What the KV cache of a model with this ``torch_dtype`` holds under ``--kv-cache-dtype auto``: vLLM's auto dtype
serves float32 weights in 16 bits (``config/model.py`` ``_resolve_auto_dtype``)."""
KV_CACHE_DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}
"""vLLM's ``--kv-cache-dtype`` values whose blocks hold plain values (``auto`` is the model's dtype); its others
(``fp8_inc``, the ``*_ds_mla``, ``nvfp4``, ``turboquant_*``, ``*_per_token_head`` ...) carry scales or packing."""
GIB = 2**30
MLA_MODEL_TYPES = frozenset({
    "axk1", "deepseek_v2", "deepseek_v3", "deepseek_v32", "deepseek_v4", "deepseek_v41", "dots3_note", "deepseek_mtp",
    "k3_dspark", "glm5_next", "glm5_next_text", "glm_moe_dsa", "glm4_moe_lite", "glm4_moe_lite_mtp", "kimi_k2",
    "kimi_linear", "longcat_flash", "pangu_ultra_moe", "pangu_ultra_moe_mtp", "bailing_hybrid", "bailing_hybrid_mtp",
    "bailing_hybrid_v3_mtp", "hy_v4", "hy_v4_mtp"})
"""The model types vLLM 0.32 serves with MLA when their config has ``kv_lora_rank``
(``transformers_utils/model_arch_config_convertor.py`` ``is_deepseek_mla``); any other model with that key
(MiniCPM3) runs ordinary attention with a head size of its own."""
HYBRID_MLA_MODEL_TYPES = frozenset({"kimi_linear", "bailing_hybrid", "bailing_hybrid_mtp", "bailing_hybrid_v3_mtp"})
"""MLA model types whose other layers are linear attention (a running state, not a latent per token)."""


class KvShape(TypedDict):
    """What one token's KV costs depends on: attention layers, KV heads, head width, dtype, and where they came
    from. ``attention`` is ``full`` (a key and a value of ``head_dim`` per KV head) or ``mla`` (one latent of
    ``head_dim`` = kv_lora_rank + qk_rope_head_dim, ``kv_heads`` 1, the same on every GPU)."""

    attention: str
    layers: int
    kv_heads: int
    head_dim: int
    dtype: str
    source: str


def kv_bytes_per_token(model: str, kv_dtype: str | None = None, tensor_parallel_size: int = 1) -> dict:
    """``model`` is a local model name (``tiny``, ``small``), a ``config.json`` or a folder holding one; the bytes
    are one GPU's of ``tensor_parallel_size``."""
    shape: KvShape
    if model in LOCAL_MODELS:
        spec = LOCAL_MODELS[model]
        shape = {"attention": "full", "layers": spec.num_layers, "kv_heads": spec.num_kv_heads,
                 "head_dim": spec.hidden_size // spec.num_heads, "dtype": spec.dtype,
                 "source": f"local model {model!r} (tools/prefixbench/serve/models.py)"}
    else:
        shape = _from_config(model)
    if kv_dtype in (None, "auto"):
        if shape["dtype"] not in MODEL_DTYPE_BYTES:
            raise InputError("--model", f"the model's dtype {shape['dtype']!r} is not known here; known: "
                                        f"{', '.join(MODEL_DTYPE_BYTES)} (or give --kv-cache-dtype)")
        # vLLM's auto dtype downcasts float32 weights (to float16 where bfloat16 is missing)
        dtype = "bfloat16" if shape["dtype"] in ("float32", "float") else shape["dtype"]
        width = MODEL_DTYPE_BYTES[shape["dtype"]]
    elif kv_dtype in KV_CACHE_DTYPE_BYTES:
        dtype, width = kv_dtype, KV_CACHE_DTYPE_BYTES[kv_dtype]
    else:
        raise InputError("--kv-cache-dtype", f"{kv_dtype!r} is not sized here; known: auto, "
                                             f"{', '.join(KV_CACHE_DTYPE_BYTES)} (vLLM's others carry scales or "
                                             "packed values)")
    tp = bounds.TENSOR_PARALLEL.check("--tensor-parallel-size", tensor_parallel_size)
    mla = shape["attention"] == "mla"
    heads_per_gpu = 1 if mla else max(1, shape["kv_heads"] // tp)
    per_token = (1 if mla else 2) * shape["layers"] * heads_per_gpu * shape["head_dim"] * width
    return {**shape, "dtype": dtype, "bytes_per_token": per_token, "tensor_parallel_size": tp,
            "kv_heads_per_gpu": heads_per_gpu}


def _from_config(model: str) -> KvShape:
    path = Path(model)
    path = path / "config.json" if path.is_dir() else path
    if not path.is_file():
        raise InputError("--model", f"{model!r} is neither a local model ({', '.join(LOCAL_MODELS)}) nor a "
                                    "config.json or a folder with one (no downloads: give the file)")
    try:
        config = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InputError("--model", f"{path}: not a readable JSON config ({str(exc)[:200]})") from None
    config = config.get("text_config", config) if isinstance(config, dict) else config
    if not isinstance(config, dict):
        raise InputError("--model", f"{path}: not a JSON object")
    unsized = _unsized_attention(config)
    if unsized:
        raise InputError("--model", f"{path}: {unsized}; this sizing covers full-attention and MLA layers only")
    layers = _dimension(config, path, "num_hidden_layers", bounds.MODEL_LAYERS)
    dtype = str(config.get("torch_dtype") or config.get("dtype") or "bfloat16")
    if config.get("kv_lora_rank") is not None:
        if config.get("qk_rope_head_dim") is None:
            raise InputError(f"{path}.qk_rope_head_dim", "is missing: an MLA latent is kv_lora_rank + "
                                                         "qk_rope_head_dim (transformers fills 64 for DeepSeek)")
        latent = (_dimension(config, path, "kv_lora_rank", bounds.MODEL_WIDTH)
                  + _dimension(config, path, "qk_rope_head_dim", bounds.MODEL_WIDTH))
        return {"attention": "mla", "layers": layers, "kv_heads": 1, "head_dim": latent, "dtype": dtype,
                "source": str(path)}
    heads = _dimension(config, path, "num_attention_heads", bounds.MODEL_HEADS)
    kv_heads = _dimension(config, path, "num_key_value_heads", bounds.MODEL_HEADS, heads)
    head_dim = config.get("head_dim") and _dimension(config, path, "head_dim", bounds.MODEL_WIDTH)
    head_dim = head_dim or _dimension(config, path, "hidden_size", bounds.MODEL_WIDTH) // heads
    if head_dim < 1:
        raise InputError(f"{path}.hidden_size", f"is smaller than num_attention_heads ({heads}): no head dimension")
    return {"attention": "full", "layers": layers, "kv_heads": kv_heads, "head_dim": head_dim, "dtype": dtype,
            "source": str(path)}


def _unsized_attention(config: dict) -> str | None:
    """Why vLLM would size this model's KV neither as ``2 x layers x kv_heads x head_dim`` nor as one MLA latent
    per layer (None: it would)."""
    if config.get("kv_lora_rank") is not None:
        mla = _unsized_mla(config)
        if mla:
            return mla
    layer_types = config.get("layer_types")
    if isinstance(layer_types, list) and any(t not in ("full_attention", "attention") for t in layer_types):
        kinds = sorted({str(t) for t in layer_types} - {"full_attention", "attention"})
        return f"layer_types holds {', '.join(kinds)} layers, which vLLM sizes and groups apart"
    for key in ("layers_block_type", "hybrid_override_pattern", "mamba_d_state", "ssm_cfg", "linear_attn_config"):
        if config.get(key):
            return f"{key}: Mamba or hybrid layers, which vLLM sizes apart"
    if config.get("use_sliding_window") or ("use_sliding_window" not in config and config.get("sliding_window")):
        return "a sliding window (sliding_window), whose layers vLLM sizes and frees apart"
    return None


def _unsized_mla(config: dict) -> str | None:
    """Why a config with ``kv_lora_rank`` is not one MLA latent per token and layer in vLLM (None: it is)."""
    model_type = config.get("model_type")
    if model_type not in MLA_MODEL_TYPES:
        return (f"kv_lora_rank in a model_type {model_type!r} config: vLLM 0.32 serves MLA only for DeepSeek-style "
                "model types (deepseek_v2, deepseek_v3, kimi_k2, ...) and runs this one with attention of its own")
    if model_type in HYBRID_MLA_MODEL_TYPES or config.get("linear_attn_config") is not None:
        return f"model_type {model_type!r}: MLA beside linear-attention layers, which vLLM sizes and groups apart"
    if config.get("compress_ratios") is not None:
        return "compress_ratios: compressed sparse MLA states (DeepSeek-V4), which vLLM sizes per layer group"
    if "index_topk" in config:
        return "index_topk: sparse MLA whose indexer keeps a KV cache of its own beside the latent (DeepSeek-V3.2)"
    if config.get("is_causal") is False:
        return "is_causal false: vLLM runs a bidirectional DeepSeek without MLA"
    return None


def _dimension(config: dict, path: Path, key: str, bound: bounds.Bound, default: int | None = None) -> int:
    """One of the config's sizes, checked before any arithmetic: a 0 divides by zero, a 400-digit or infinite
    one overflows, and either would be a traceback instead of this line naming the field."""
    value = config.get(key)
    if value is None and default is not None:
        return default
    if value is None:
        raise InputError(f"{path}.{key}", "is missing: the config lacks what the KV size needs "
                                          "(num_hidden_layers, num_attention_heads, hidden_size or head_dim)")
    return bound.check(f"{path}.{key}", value)


def pool_gib(num_blocks: int, block_size: int, bytes_per_token: int) -> float:
    return num_blocks * block_size * bytes_per_token / GIB


def blocks_for_gib(gib: float, block_size: int, bytes_per_token: int) -> int:
    return int(gib * GIB // (block_size * bytes_per_token))
