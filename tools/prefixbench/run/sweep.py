"""A load sweep: G0 and G1 at every load point (a concurrency or a request rate), ``repeats`` runs each, on the
same workload, with goodput under SLOs and the highest load each group sustains.

One server per group serves every point of the sweep (started as ``g0g1`` starts them, caching off then on);
the prefix cache is reset before every run, so each run starts cold, as a ``g0g1`` group does. Each point's
group manifest is written as soon as it ends (``points/``), and the sweep file
(``69_prefix_cache_sweep.json``, schema ``prefixbench.sweep/1``) after every point, so a failing point or
group leaves everything measured before it. A rerun keeps the whole previous result first: the sweep file as
``NAME.previous.json`` and ``points/`` moved to ``points.previous/`` (only a ``points/`` this project marked as
its own, holding no input and not the repository, is ever moved or removed). G0's hit rate is ``null`` at
every point (caching off: no evidence, not 0).
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..core.bounds import (CONCURRENCY, DEFAULT_DEADLINE_S, DEFAULT_REQUEST_TIMEOUT_S, LATENCY_MS, REQUEST_RATE,
                           RUN_REPEATS, SWEEP_POINTS, TIMEOUT_S)
from ..core.errors import InputError
from ..core.files import (aside_name, atomic_write_json, check_output_folder, check_removable, keep_previous,
                          mark_folder, set_aside)
from ..core.group_records import PROJECT, GroupRunManifest, GroupSpec
from ..core.paths import DEFAULT_WORKLOAD, REPO_ROOT
from ..core.provenance import environment_snapshot, now
from ..core.records import SCHEMA_SWEEP
from ..core.sweep_records import LoadPoint, SweepPoint
from ..core.termination import check_terminated, forget_arrivals
from ..decision.confidence import differences
from ..decision.paired import EVIDENCE_LEVEL
from ..decision.sweep import headline, point_metrics
from ..serve.server import ServerError
from ..workload.files import load_workload
from .g0g1 import (DEFAULT_OUT, GROUPS, Experiment, Provided, base_config, check_kept_outputs, endpoint_urls,
                   given_servers, run_repeats, server_failure)
from .group import check_group_settings, select_requests
from .replicas import check_replicas

SWEEP_NAME = f"{PROJECT}_prefix_cache_sweep.json"
SHORT = {"g0_cache_off": "g0", "g1_prefix_cache": "g1"}


def load_points(concurrencies: Sequence[int] | None, request_rates: Sequence[float] | None,
                num_requests: int) -> list[LoadPoint]:
    """The load points, checked: exactly one kind, at most ``SWEEP_POINTS``, each in bounds, increasing."""
    if (concurrencies is None) == (request_rates is None):
        raise InputError("concurrency", "give exactly one of --concurrency or --request-rates")
    field, given, bound = (("concurrency", concurrencies, CONCURRENCY) if concurrencies is not None
                           else ("request_rates", request_rates, REQUEST_RATE))
    values: list[float] = list(given or ())
    if not values or len(values) > SWEEP_POINTS:
        raise InputError(field, f"must list 1 to {SWEEP_POINTS} load points, got {len(values)}")
    for i, value in enumerate(values):
        bound.check(f"{field}[{i}]", value)
    if any(b <= a for a, b in pairwise(values)):
        raise InputError(field, f"load points must increase, got {values}")
    if field == "concurrency":
        return [LoadPoint(label=f"c{v}", kind="concurrency", value=v, concurrency=int(v), request_rate=None)
                for v in values]
    return [LoadPoint(label=f"r{v:g}", kind="request_rate", value=v, concurrency=num_requests, request_rate=v)
            for v in values]


def point_manifest_path(out: Path, label: str, group_name: str) -> Path:
    return points_folder(out) / f"{PROJECT}_prefix_cache_sweep_{label}_{group_name}.json"


def points_folder(out: Path) -> Path:
    return out / "points"


def check_sweep_outputs(out: Path, inputs: Mapping[str, str | Path | None]) -> None:
    """Before anything is read or started: the sweep file and its keep copy spare the inputs, and ``points/`` and
    ``points.previous/`` (moved and removed by a rerun) are this sweep's own and hold no input nor the repository."""
    check_output_folder("--out", out)
    check_kept_outputs([out / SWEEP_NAME], inputs)
    points, protected = points_folder(out), {**inputs, "the repository": REPO_ROOT}
    check_removable("--out", points, points, protected)
    if points.exists():  # only then does the rerun remove the older copy
        check_removable("--out", aside_name(points), points, protected)


def keep_previous_sweep(out: Path, log: Callable[[str], None]) -> dict:
    """The previous sweep file and its points, kept before anything new is written; where they went."""
    kept = {"sweep": keep_previous(out / SWEEP_NAME), "points": set_aside(points_folder(out))}
    for what, path in kept.items():
        if path is not None:
            log(f"note: the previous {SWEEP_NAME if what == 'sweep' else 'points/'} is kept as {path}")
    return {k: None if v is None else str(v) for k, v in kept.items()}


class SweepFile:
    """The sweep manifest, rewritten atomically after every point."""

    def __init__(self, path: Path, base: dict, points: Sequence[LoadPoint]):
        self.path, self.base = path, base
        self.points = [SweepPoint(load) for load in points]
        self.manifests: dict[tuple[str, str], dict] = {}

    def record(self, index: int, group: str, manifest: dict, slo: Mapping) -> None:
        point = self.points[index]
        measured = point_metrics(manifest, slo)
        if SHORT[group] == "g0":
            point.g0 = measured
        else:
            point.g1 = measured
        self.manifests[point.load.label, group] = manifest
        g0 = self.manifests.get((point.load.label, "g0_cache_off"))
        if g0 is not None and group == "g1_prefix_cache":
            point.comparison = differences(g0, manifest)

    def write(self, status: str, **extra: Any) -> dict:
        data = {**self.base, "status": status, "updated_at": now(), "points": [p.to_json() for p in self.points],
                **extra}
        atomic_write_json(self.path, data)
        return data


def _check_slo(ttft_slo_ms: float | None, tpot_slo_ms: float | None) -> dict:
    return {"ttft_slo_ms": None if ttft_slo_ms is None else LATENCY_MS.check("ttft_slo_ms", ttft_slo_ms),
            "tpot_slo_ms": None if tpot_slo_ms is None else LATENCY_MS.check("tpot_slo_ms", tpot_slo_ms)}


def run_sweep(*, model: str | None = None, model_source: str | None = None, workload: str | None = None,
              num_prompts: int | None = None, max_tokens: int | None = None,
              concurrencies: Sequence[int] | None = None, request_rates: Sequence[float] | None = None,
              repeats: int = 3, ttft_slo_ms: float | None = None, tpot_slo_ms: float | None = None,
              warmup: int = 1, replicas: int = 1, routing: str | None = None, out: str | Path = DEFAULT_OUT,
              dtype: str = "auto", startup_timeout_s: float = 600.0,
              request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S, deadline_s: float | None = DEFAULT_DEADLINE_S,
              servers: Mapping[str, Provided] | None = None, endpoints: Mapping[str, Sequence[str]] | None = None,
              progress: bool = True, log: Callable[[str], None] = print) -> dict:
    """Sweep G0 then G1 over the load points; returns the sweep manifest (also written to ``out``).

    ``servers`` (group name -> a running ``VllmServer``) and ``endpoints`` (the user's servers) as in
    ``run_experiment``.
    """
    repeats = RUN_REPEATS.check("repeats", repeats)
    slo = _check_slo(ttft_slo_ms, tpot_slo_ms)
    startup_timeout_s = TIMEOUT_S.check("startup_timeout_s", startup_timeout_s)
    check_group_settings(warmup=warmup, concurrency=None, request_timeout_s=request_timeout_s,
                         deadline_s=deadline_s)  # every point's, before anything is read or started
    workload_path, out = workload or DEFAULT_WORKLOAD, Path(out)
    check_sweep_outputs(out, {"--workload": workload_path,
                              "--model": model if model and Path(model).exists() else None})
    loaded = load_workload(workload_path)
    requests = select_requests(loaded, num_prompts, max_tokens)
    points = load_points(concurrencies, request_rates, len(requests))
    servers, replicas = given_servers(servers, endpoints, model, replicas)
    resolved, config = base_config(model, model_source, workload_path, loaded, requests, dtype=dtype, warmup=warmup,
                                   repeats=repeats, request_timeout_s=request_timeout_s, deadline_s=deadline_s,
                                   endpoints=bool(endpoints))
    config.update(load_kind=points[0].kind, loads=[p.value for p in points], **slo,
                  **check_replicas(replicas, routing), endpoints=endpoint_urls(servers, endpoints))
    kept = keep_previous_sweep(out, log)
    environment = environment_snapshot()
    sweep = SweepFile(out / SWEEP_NAME, {"schema": SCHEMA_SWEEP, "project": PROJECT, "config": config,
                                         "environment": environment, "started_at": now(),
                                         "evidence_level": EVIDENCE_LEVEL, "previous": kept}, points)
    sweep.write("running")
    experiment = Experiment(model_path=resolved.path, config=config, requests=requests, environment=environment,
                            out=out, dtype=dtype, startup_timeout_s=startup_timeout_s, progress=progress, log=log)
    group = None
    try:
        for group in GROUPS:
            _sweep_group(group, points, sweep, experiment, slo, servers.get(group["name"]) if servers else None)
        check_terminated()  # a SIGTERM a finalizer swallowed on the way is still an interruption
    except (KeyboardInterrupt, SystemExit):
        forget_arrivals()  # handled here: no later step raises it again
        sweep.write("interrupted", reason=f"interrupted during {group and group['name']}", finished_at=now())
        raise
    statuses = [side.status if side else None for p in sweep.points for side in (p.g0, p.g1)]
    status = "ok" if all(s == "ok" for s in statuses) else "partial" if "ok" in statuses else "failed"
    return sweep.write(status, headline=headline(sweep.points, slo).to_json(), finished_at=now())


def _sweep_group(group: GroupSpec, points: Sequence[LoadPoint], sweep: SweepFile, experiment: Experiment, slo: Mapping,
                 provided: Provided | None) -> None:
    """Every load point of one group on one server; a server that fails fails the points it did not serve."""
    name, config, out = group["name"], experiment.config, experiment.out
    servers = experiment.servers(group, out / "logs" / f"sweep_{name}", provided)
    done, failing, started_at = 0, servers[0], now()
    try:
        for failing in servers if provided is None else []:
            failing.start()
        for index, point in enumerate(points):
            point_config = {**config, "concurrency": point.concurrency, "request_rate": point.request_rate}
            experiment.log(f"[{name}] {point.kind} {point.value}: {config['repeats']} x "
                           f"{len(experiment.requests)} requests")
            manifest = run_repeats(servers, group, point_config, experiment.requests, experiment.environment,
                                   progress=experiment.progress)
            _record(sweep, out, index, group, manifest, slo)
            done = index + 1
    except ServerError as exc:
        for index in range(done, len(points)):
            _record(sweep, out, index, group, server_failure(group, config, failing, experiment.environment, exc,
                                                             started_at=started_at), slo)
    finally:
        for server in servers if provided is None else []:
            server.stop()


def _record(sweep: SweepFile, out: Path, index: int, group: GroupSpec, manifest: GroupRunManifest,
            slo: Mapping) -> None:
    label = sweep.points[index].load.label
    mark_folder(points_folder(out), "prefixbench sweep")
    written = manifest.to_json()
    atomic_write_json(point_manifest_path(out, label, group["name"]), written)
    sweep.record(index, group["name"], written, slo)
    sweep.write("running", active={"group": group["name"], "load": label})
