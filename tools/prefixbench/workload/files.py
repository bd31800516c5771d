"""Workload files: one request per JSONL line, saved atomically, loaded with errors that name ``file:line.field``.

Line format: ``{"id": str, "prompt_token_ids": [int, ...], "max_tokens": int, "prefix_group": int | null}``.
``prefix_group`` is informational; only the token ids decide reuse.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..core.errors import InputError, require_int
from ..core.files import atomic_write_text, read_jsonl
from ..core.paths import DEFAULT_WORKLOAD
from .generate import Workload
from .tokens import validate_token_sequences


def save_workload(workload: Workload, path: str | Path) -> Path:
    lines = (json.dumps(request, separators=(",", ":")) for request in workload.requests)
    return atomic_write_text(path, "\n".join(lines) + "\n")


def load_workload(path: str | Path = DEFAULT_WORKLOAD, *, default_max_tokens: int = 64) -> Workload:
    """Read and validate a workload file; errors name ``file:line.field``."""
    requests = []
    for where, obj in read_jsonl(path):
        if "prompt_token_ids" not in obj:
            raise InputError(f"{where}.prompt_token_ids", "is missing (each line needs a list of token ids)")
        tokens = validate_token_sequences([obj["prompt_token_ids"]], f"{where}.prompt_token_ids")[0]
        if not tokens:
            raise InputError(f"{where}.prompt_token_ids", "is empty; a prompt needs at least one token")
        max_tokens = require_int(f"{where}.max_tokens", obj.get("max_tokens", default_max_tokens), minimum=1)
        requests.append({**obj, "id": str(obj.get("id", f"r{len(requests):05d}")),
                         "prompt_token_ids": tokens, "max_tokens": max_tokens})
    if not requests:
        raise InputError(str(path), "workload file has no requests")
    return Workload(requests, source=str(path))
