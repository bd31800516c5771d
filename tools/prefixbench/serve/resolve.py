"""Which model a server loads: ``tiny`` / ``small`` (built here), a folder, or a hub id, and when a local model
may stand in for a hub one (never silently: ``substituted_for`` records it)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import InputError
from ..core.provenance import detect_platform
from .models import LOCAL_MODELS, build_record, ensure_local_model

SEED_MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
"""The chapter's model: the default on a GPU machine. Without a GPU the default is the local ``small`` model."""
DEFAULT_CPU_MODEL = "small"
"""Local model that stands in for a hub model on machines without a GPU (``model_source='auto'``);
the environment variable ``PREFIXBENCH_LOCAL_MODEL`` (``tiny`` / ``small``) overrides it."""
MODEL_SOURCES = ("auto", "hub", "local")


@dataclass(frozen=True)
class ResolvedModel:
    """What the server will load. ``substituted_for`` names the hub model a local one stands in for."""

    path: str
    source: str  # "local" (built here), "hub" (downloaded or cached by vLLM) or "path" (a folder given)
    local_name: str | None = None
    substituted_for: str | None = None
    parameters: int | None = None

    def as_dict(self) -> dict:
        return {"path": self.path, "source": self.source, "local_name": self.local_name,
                "substituted_for": self.substituted_for, "parameters": self.parameters}


def resolve_model(model: str, model_source: str = "auto", platform: dict | None = None) -> ResolvedModel:
    """Turn ``tiny`` / ``small`` / a folder / a hub id into what the server loads.

    ``auto``: a local name or an existing folder is used as is; a hub id is used on a GPU machine and replaced
    by the local model ``DEFAULT_CPU_MODEL`` on a CPU one (recorded in ``substituted_for``). ``hub`` never
    substitutes; ``local`` always does.
    """
    if not isinstance(model, str) or not model:
        raise InputError("model", f"must be a model name, folder or hub id, got {model!r}")
    if model_source not in MODEL_SOURCES:
        raise InputError("model_source", f"must be one of {', '.join(MODEL_SOURCES)}, got {model_source!r}")
    if model in LOCAL_MODELS:
        return _local(model)
    if _looks_like_path(model) and not Path(model).expanduser().is_dir():
        raise InputError("model", f"{model!r} looks like a folder but there is no such folder (a hub id is "
                                  "ORG/NAME; a local model is tiny or small)")
    if Path(model).is_dir():
        record = build_record(model)
        return ResolvedModel(str(Path(model).resolve()), "path", parameters=(record or {}).get("parameters"))
    if model_source == "hub":
        return ResolvedModel(model, "hub")
    kind = (platform or detect_platform())["kind"]
    if model_source == "auto" and kind == "gpu":
        return ResolvedModel(model, "hub")
    return _local(os.environ.get("PREFIXBENCH_LOCAL_MODEL") or DEFAULT_CPU_MODEL, substituted_for=model)


def _local(name: str, substituted_for: str | None = None) -> ResolvedModel:
    path = ensure_local_model(name)
    record = build_record(path) or {}
    return ResolvedModel(str(path), "local", name, substituted_for, record.get("parameters"))


def _looks_like_path(model: str) -> bool:
    """A folder rather than a hub id (``ORG/NAME``): absolute, relative, home-based, or deeper than one slash."""
    return model.startswith(("/", "./", "../", "~")) or model.count("/") > 1 or model.endswith("/") or model in (".", "..")
