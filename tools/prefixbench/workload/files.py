"""Workload files: one request per JSONL line, saved atomically, loaded with errors that name ``file:line.field``.

Line format: ``{"id": str, "prompt_token_ids": [int, ...], "max_tokens": int, "prefix_group": int | null}``.
``prefix_group`` is informational; only the token ids decide reuse.
"""

from __future__ import annotations

from pathlib import Path

from ..core.bounds import OUTPUT_TOKENS, PROMPT_TOKENS
from ..core.errors import InputError
from ..core.files import atomic_write_text, read_jsonl, to_strict_json
from ..core.paths import DEFAULT_WORKLOAD
from .generate import Workload
from .tokens import validate_token_sequences


def save_workload(workload: Workload, path: str | Path) -> Path:
    lines = (to_strict_json(request, indent=None) for request in workload.requests)
    return atomic_write_text(path, "\n".join(lines) + "\n")


def load_workload(path: str | Path = DEFAULT_WORKLOAD, *, default_max_tokens: int = 64) -> Workload:
    """Read and validate a workload file; errors name ``file:line.field``.

    Beyond the types, a file must mean what it says: ids are unique (the prediction looks prompts up by id),
    ``prefix_group`` is an integer or null, and every string is valid UTF-8 text.
    """
    if not isinstance(path, (str, Path)):
        raise InputError("workload", f"must be a file path, got {type(path).__name__} {path!r}")
    requests: list[dict] = []
    lines_of: dict[object, str] = {}
    for where, obj in read_jsonl(path):
        request = _request(where, obj, len(requests), default_max_tokens)
        if request["id"] in lines_of:
            raise InputError(f"{where}.id", f"{request['id']!r} is used twice (first at {lines_of[request['id']]}); "
                                            "ids must be unique")
        lines_of[request["id"]] = where
        requests.append(request)
    if not requests:
        raise InputError(str(path), "workload file has no requests")
    return Workload(requests, source=str(path))


def _request(where: str, obj: dict, index: int, default_max_tokens: int) -> dict:
    if "prompt_token_ids" not in obj:
        raise InputError(f"{where}.prompt_token_ids", "is missing (each line needs a list of token ids)")
    tokens = validate_token_sequences([obj["prompt_token_ids"]], f"{where}.prompt_token_ids")[0]
    if not tokens:
        raise InputError(f"{where}.prompt_token_ids", "is empty; a prompt needs at least one token")
    PROMPT_TOKENS.check(f"{where}.prompt_token_ids (length)", len(tokens))
    max_tokens = obj.get("max_tokens", default_max_tokens)
    OUTPUT_TOKENS.check(f"{where}.max_tokens", max_tokens)
    group = obj.get("prefix_group")
    if group is not None and (isinstance(group, bool) or not isinstance(group, int)):
        raise InputError(f"{where}.prefix_group", f"must be an integer or null, got {type(group).__name__} {group!r}")
    ident = obj.get("id", f"r{index:05d}")
    if isinstance(ident, bool) or not isinstance(ident, (str, int)):
        raise InputError(f"{where}.id", f"must be a string or an integer, got {type(ident).__name__} {ident!r}")
    _check_text(f"{where}.id", str(ident))
    for key, value in obj.items():
        if isinstance(value, str):
            _check_text(f"{where}.{key}", value)
    return {**obj, "id": str(ident), "prompt_token_ids": tokens, "max_tokens": max_tokens}


def _check_text(field: str, text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(field, f"is not valid text (a lone surrogate): {text!r}") from None
