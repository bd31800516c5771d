"""The result records the project writes, as types, and one validating loader per schema.

The files stay plain JSON with the shapes and schema names they always had (``prefixbench.hitrate/1``,
``prefixbench.backend_group/1``, ``prefixbench.g0g1_summary/1``); these ``TypedDict``s say what each section
holds, and ``load_*`` checks that a file is one of them before anything reads it, failing with one line that
names the file and the section. A section that a run could not produce (a run that failed before measuring
has no ``summary``) may be absent or null; one that is present must have the right type.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TypedDict

from .errors import InputError

SCHEMA_HITRATE = "prefixbench.hitrate/1"
SCHEMA_GROUP = "prefixbench.backend_group/1"
SCHEMA_SUMMARY = "prefixbench.g0g1_summary/1"
STATUSES = ("running", "ok", "partial", "failed", "interrupted")


class Percentiles(TypedDict):
    p50: float
    p90: float
    p99: float
    mean: float
    count: int


class Aggregates(TypedDict):
    """The client's view of a measured phase (``measure.client.aggregate``)."""

    requests: int
    successful: int
    error_count: int
    duration_s: float
    ttft_ms: Percentiles | None
    tpot_ms: Percentiles | None
    itl_ms: Percentiles | None
    e2e_ms: Percentiles | None
    prompt_tokens: int
    output_tokens: int
    throughput_tokens_per_s: float | None
    total_tokens_per_s: float | None
    request_throughput_per_s: float | None


class Evidence(TypedDict):
    """A measured hit rate and where it comes from (``evidence.hit_rate_evidence``)."""

    hit_rate: float | None
    hit_rate_evidence: str
    hit_rate_reason: str | None
    hit_tokens: int | None
    query_tokens: int | None


class Prediction(TypedDict, total=False):
    """``simulate.predict``: predicted counts and, once judged, ``exact_expected`` with its caveats."""

    predicted_hit_tokens: int | None
    predicted_query_tokens: int
    predicted_hit_rate: float | None
    exact_expected: bool
    caveats: list[str]
    measured_hit_tokens: int | None
    difference_tokens: int | None
    matches_measured: bool | None
    in_phase_reuse_tokens: int
    reason: str


class HitRates(TypedDict):
    unit: str
    target: float | None
    target_basis: str
    block_aligned_target: float | None
    predicted: float | None
    measured: float | None
    measured_evidence: str | None
    measured_reason: str | None
    measured_minus_predicted_points: float | None
    target_minus_predicted_points: float | None
    target_breakdown: dict


class Verdict(TypedDict, total=False):
    verdict: str
    reference: str
    gap_points: float | None
    reasons: list[str]
    latency_checks: list[dict]
    rules: str


class HitrateResult(TypedDict, total=False):
    """``prefixbench.hitrate/1``: one hit-rate run against a running server (``run.hitrate``)."""

    schema: str
    status: str
    error: str | None
    config: dict
    server: dict
    phases: dict
    timing: dict
    warnings: list[str]
    hit_rates: HitRates
    measured: dict
    prediction: Prediction
    verdict: Verdict
    summary: Aggregates
    speedup: dict
    engines: list[dict]
    requests: list[dict]


class GroupManifest(TypedDict, total=False):
    """``prefixbench.backend_group/1``: one G0 or G1 group (``run.group``)."""

    schema: str
    status: str
    error: str | None
    group: dict
    config: dict
    hit_rate: float | None
    hit_rate_evidence: str
    hit_rate_reason: str | None
    hit_tokens: int | None
    query_tokens: int | None
    prediction: Prediction
    aggregates: Aggregates
    memory: dict
    backend_counters: dict | None
    requests: list[dict]
    normalized_result: dict


class G0G1Summary(TypedDict, total=False):
    """``prefixbench.g0g1_summary/1``: the experiment's summary (``run.g0g1``, ``decision.paired``)."""

    schema: str
    status: str
    config: dict
    groups: list[dict]
    paired_summary: dict


_SECTIONS: dict[str, dict[str, tuple[type, ...]]] = {
    # schema -> section -> allowed JSON types; "config" is required, the rest may be absent or null
    SCHEMA_HITRATE: {"config": (dict,), "server": (dict,), "phases": (dict,), "timing": (dict,),
                     "warnings": (list,), "hit_rates": (dict,), "measured": (dict,), "prediction": (dict,),
                     "verdict": (dict,), "summary": (dict,), "speedup": (dict,), "engines": (list,),
                     "requests": (list,)},
    SCHEMA_GROUP: {"config": (dict,), "group": (dict,), "prediction": (dict,), "aggregates": (dict,),
                   "memory": (dict,), "backend_counters": (dict,), "requests": (list,),
                   "normalized_result": (dict,)},
    SCHEMA_SUMMARY: {"config": (dict,), "groups": (list,), "paired_summary": (dict,)},
}
_REQUIRED = {SCHEMA_HITRATE: ("config",), SCHEMA_GROUP: ("config",), SCHEMA_SUMMARY: ("config", "groups")}
_REQUIRED_CONFIG = {SCHEMA_HITRATE: ("model", "endpoint", "workload_id"), SCHEMA_GROUP: (), SCHEMA_SUMMARY: ()}


_NAMES = {SCHEMA_HITRATE: "hit-rate result", SCHEMA_GROUP: "G0 / G1 group manifest",
          SCHEMA_SUMMARY: "G0 / G1 summary"}


def _read_json(path: str | os.PathLike) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(str(path), "file not found") from None
    except (OSError, ValueError) as exc:
        raise InputError(str(path), f"not a readable JSON result ({exc})") from None


def validate(data: Any, schema: str, where: str) -> dict:
    """``data`` if it is a record of ``schema`` with well-typed sections, else one ``InputError``."""
    if not isinstance(data, dict) or data.get("schema") != schema:
        raise InputError(where, f"not a {_NAMES[schema]} (schema {schema})")
    if data.get("status") not in STATUSES:
        raise InputError(f"{where}.status", f"must be one of {', '.join(STATUSES)}, got {data.get('status')!r}")
    for section in _REQUIRED[schema]:
        if data.get(section) is None:
            raise InputError(f"{where}.{section}", "is missing")
    for section, types in _SECTIONS[schema].items():
        value = data.get(section)
        if value is not None and not isinstance(value, types):
            expected = {"dict": "object", "list": "array"}[types[0].__name__]
            raise InputError(f"{where}.{section}", f"must be a JSON {expected}, got {type(value).__name__}")
    for key in _REQUIRED_CONFIG[schema]:
        if key not in data["config"]:
            raise InputError(f"{where}.config.{key}", "is missing")
    return data


def load_hitrate_result(path: str | os.PathLike) -> HitrateResult:
    return validate(_read_json(path), SCHEMA_HITRATE, str(path))  # type: ignore[return-value]


def load_group_manifest(path: str | os.PathLike) -> GroupManifest:
    return validate(_read_json(path), SCHEMA_GROUP, str(path))  # type: ignore[return-value]


def load_g0g1_summary(path: str | os.PathLike) -> G0G1Summary:
    return validate(_read_json(path), SCHEMA_SUMMARY, str(path))  # type: ignore[return-value]

