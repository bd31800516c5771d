"""The project's own small models: randomly initialised Qwen2 checkpoints that a real vLLM server can load.

Why: the benchmark needs a real server on machines that cannot download weights (CI, laptops, this course's
CPU sandbox). A prefix cache does not care what the weights mean, only that the engine runs the real prefill and
decode code paths, so a random model with a real architecture is a faithful test subject.

Everything is rebuilt deterministically from a fixed seed and from ``data/tokenizer_corpus.txt`` (text the
project ships): a byte-level BPE tokenizer is trained on the corpus, the weights come from ``torch.manual_seed``.
Builds are cached under ``$PREFIXBENCH_CACHE`` (default ``~/.cache/prefixbench``) in a folder named by a hash
of everything that goes into them, and are written to a temporary folder first, then renamed, so a half-built
model is never served.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..core.errors import InputError
from ..core.paths import cache_root

CORPUS = Path(__file__).resolve().parent / "data" / "tokenizer_corpus.txt"
SPECIAL_TOKEN = "<|endoftext|>"
BUILD_RECORD = "prefixbench_model.json"
"""Written last into a model folder: its presence means the build finished."""
MIN_VOCAB = 1024
"""Workload token ids live in [10, 1000) (``workload.DEFAULT_VOCAB``); the tokenizer must cover them."""


@dataclass(frozen=True)
class ModelSpec:
    """Architecture of one local model. ``vocab_target`` is what the BPE trainer aims for."""

    name: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    intermediate_size: int
    vocab_target: int = 2048
    max_position_embeddings: int = 4096
    dtype: str = "bfloat16"
    seed: int = 0


LOCAL_MODELS = {
    # ~0.6M parameters: starts fastest; for exactness tests where only the cache bookkeeping matters.
    "tiny": ModelSpec("tiny", hidden_size=128, num_layers=2, num_heads=4, num_kv_heads=2, intermediate_size=384),
    # ~11M parameters: enough prefill work on a CPU for prefix caching to show a clear TTFT gain.
    "small": ModelSpec("small", hidden_size=384, num_layers=6, num_heads=6, num_kv_heads=2, intermediate_size=1152),
}


def _library_versions() -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in ("torch", "transformers", "tokenizers", "safetensors")}


def build_key(spec: ModelSpec) -> str:
    """Hash of the spec, the corpus and the library versions: change any of them and the model is rebuilt."""
    digest = hashlib.sha256()
    digest.update(json.dumps(asdict(spec), sort_keys=True).encode())
    digest.update(CORPUS.read_bytes())
    digest.update(json.dumps(_library_versions(), sort_keys=True).encode())
    return digest.hexdigest()[:12]


def model_dir(name: str) -> Path:
    spec = get_spec(name)
    return cache_root() / "models" / f"{spec.name}-{build_key(spec)}"


def get_spec(name: str) -> ModelSpec:
    if name not in LOCAL_MODELS:
        raise InputError("model", f"unknown local model {name!r}; choose one of {', '.join(LOCAL_MODELS)}")
    return LOCAL_MODELS[name]


def is_built(path: Path) -> bool:
    return (path / BUILD_RECORD).is_file()


def ensure_local_model(name: str) -> Path:
    """Path of the built model ``name``; builds it first when it is missing (a few seconds)."""
    path = model_dir(name)
    if is_built(path):
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        _build(get_spec(name), tmp)
        try:
            os.replace(tmp, path)
        except OSError:
            if not is_built(path):  # another process finished the same build first: keep theirs
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path


def train_tokenizer(spec: ModelSpec) -> Any:
    """Byte-level BPE trained on the shipped corpus; the special token gets id 0, bytes and merges follow."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=spec.vocab_target, min_frequency=1, special_tokens=[SPECIAL_TOKEN],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train([str(CORPUS)], trainer)
    if tokenizer.get_vocab_size() < MIN_VOCAB:
        raise RuntimeError(f"tokenizer corpus too small: {tokenizer.get_vocab_size()} tokens < {MIN_VOCAB}")
    return tokenizer


def _build(spec: ModelSpec, out: Path) -> None:
    import torch
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # a build takes seconds; its "Writing model shards" bar is noise

    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=train_tokenizer(spec), eos_token=SPECIAL_TOKEN, bos_token=SPECIAL_TOKEN,
        pad_token=SPECIAL_TOKEN, unk_token=SPECIAL_TOKEN,
        model_max_length=spec.max_position_embeddings)
    eos_id = tokenizer.convert_tokens_to_ids(SPECIAL_TOKEN)
    assert isinstance(eos_id, int)  # one token in, one id out
    vocab_size = len(tokenizer)
    config = Qwen2Config(
        vocab_size=vocab_size, hidden_size=spec.hidden_size, intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_layers, num_attention_heads=spec.num_heads,
        num_key_value_heads=spec.num_kv_heads, max_position_embeddings=spec.max_position_embeddings,
        tie_word_embeddings=True, bos_token_id=eos_id, eos_token_id=eos_id, pad_token_id=eos_id,
        dtype=spec.dtype)
    torch.manual_seed(spec.seed)
    with torch.no_grad():
        model = Qwen2ForCausalLM(config).to(getattr(torch, spec.dtype)).eval()
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    parameters = sum(p.numel() for p in model.parameters())
    record = {
        "name": spec.name, "spec": asdict(spec), "build_key": build_key(spec), "vocab_size": vocab_size,
        "eos_token_id": eos_id, "parameters": parameters, "libraries": _library_versions(),
        "weights_sha256": hashlib.sha256((out / "model.safetensors").read_bytes()).hexdigest(),
    }
    (out / BUILD_RECORD).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


def build_record(path: str | os.PathLike) -> dict | None:
    """The build record of a local model folder, or ``None`` for any other model."""
    record = Path(path) / BUILD_RECORD
    return json.loads(record.read_text(encoding="utf-8")) if record.is_file() else None
