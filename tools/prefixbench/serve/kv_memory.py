"""How many bytes of KV cache one token costs for a model, read from its config: what a pool of N blocks weighs.

Per token, every attention layer keeps a key and a value vector per KV head: ``2 x layers x kv_heads x head_dim
x dtype bytes``. A pool of ``N`` blocks of ``B`` tokens weighs ``N x B x`` that (vLLM allocates whole blocks).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypedDict

from ..core import bounds
from ..core.errors import InputError
from .models import LOCAL_MODELS

DTYPE_BYTES = {"float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2, "fp8": 1, "float8_e4m3fn": 1,
               "float8_e5m2": 1, "int8": 1}
GIB = 2**30


class KvShape(TypedDict):
    """What one token's KV costs depends on: attention layers, KV heads, head width, dtype, and where they came
    from."""

    layers: int
    kv_heads: int
    head_dim: int
    dtype: str
    source: str


def kv_bytes_per_token(model: str, kv_dtype: str | None = None) -> dict:
    """``model`` is a local model name (``tiny``, ``small``), a ``config.json`` or a folder holding one."""
    shape: KvShape
    if model in LOCAL_MODELS:
        spec = LOCAL_MODELS[model]
        shape = {"layers": spec.num_layers, "kv_heads": spec.num_kv_heads,
                 "head_dim": spec.hidden_size // spec.num_heads, "dtype": spec.dtype,
                 "source": f"local model {model!r} (tools/prefixbench/serve/models.py)"}
    else:
        shape = _from_config(model)
    dtype = kv_dtype or shape["dtype"]
    if dtype not in DTYPE_BYTES:
        raise InputError("--kv-cache-dtype" if kv_dtype else "--model",
                         f"unknown KV dtype {dtype!r}; known: {', '.join(sorted(DTYPE_BYTES))}")
    per_token = 2 * shape["layers"] * shape["kv_heads"] * shape["head_dim"] * DTYPE_BYTES[dtype]
    return {**shape, "dtype": dtype, "bytes_per_token": per_token}


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
    layers = _dimension(config, path, "num_hidden_layers", bounds.MODEL_LAYERS)
    heads = _dimension(config, path, "num_attention_heads", bounds.MODEL_HEADS)
    kv_heads = _dimension(config, path, "num_key_value_heads", bounds.MODEL_HEADS, heads)
    head_dim = config.get("head_dim") and _dimension(config, path, "head_dim", bounds.MODEL_WIDTH)
    head_dim = head_dim or _dimension(config, path, "hidden_size", bounds.MODEL_WIDTH) // heads
    if head_dim < 1:
        raise InputError(f"{path}.hidden_size", f"is smaller than num_attention_heads ({heads}): no head dimension")
    dtype = str(config.get("torch_dtype") or config.get("dtype") or "bfloat16")
    return {"layers": layers, "kv_heads": kv_heads, "head_dim": head_dim, "dtype": dtype, "source": str(path)}


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
