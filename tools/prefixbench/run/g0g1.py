"""The G0 / G1 experiment: the same workload on a fresh vLLM server with prefix caching off, then on.

``run_experiment`` starts a server per group (``serve.server``), runs the groups, writes the G0 and G1
manifests as they end and the paired summary (``decision.paired``) last. The schedule (``run.interleave``) is
interleaved where both servers fit (both up at once, every request to both back to back, ABBA), else sequential
(G0's whole run on its server, then G1's: ``run.group``); ``config.schedule`` says which, and why. The summary is marked
``running`` while it works, ``failed`` with the reason when a group fails and ``interrupted`` on Ctrl-C or
SIGTERM, so a crash in G1 never touches G0's manifest.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..core.auth import auth_headers
from ..core.bounds import DEFAULT_DEADLINE_S, DEFAULT_REQUEST_TIMEOUT_S, REQUEST_RATE, RUN_REPEATS, TIMEOUT_S
from ..core.errors import InputError, require_number
from ..core.files import (atomic_write_json, check_keep_target, check_output_folder, check_outputs_spare_inputs,
                          keep_name, keep_previous)
from ..core.paths import DEFAULT_RESULTS_DIR, DEFAULT_WORKLOAD
from ..core.provenance import detect_platform, environment_snapshot, now
from ..core.group_records import PROJECT, GroupRunManifest, GroupSpec
from ..core.records import SCHEMA_SUMMARY
from ..core.sections import section
from ..core.termination import check_terminated, forget_arrivals
from ..decision.paired import DEFAULT_MAX_OVERHEAD, DEFAULT_MIN_HIT_RATE, EVIDENCE_LEVEL, summarize
from ..evidence import unmeasured_hit_rate
from ..measure import metrics as prom
from ..measure.endpoints import RunningServer, check_model
from ..serve.resolve import SEED_MODEL, ResolvedModel, resolve_model
from ..serve.server import ServerConfig, ServerError, ServerHandle, VllmServer
from ..simulate.pool_size import check_pool_fits
from ..workload.files import load_workload
from ..workload.generate import Workload
from .group import GroupRun, check_group_settings, combine_repeats, run_group, select_requests
from .interleave import plan_schedule, run_interleaved_pair
from .replicas import check_replicas, measure_routings, run_replica_group

Provided = ServerHandle | Sequence[ServerHandle]
"""A running server the caller gives a group, or its replicas."""


def as_list(provided: Provided) -> list[ServerHandle]:
    """One server or several, as a list."""
    return list(provided) if isinstance(provided, Sequence) else [provided]

DEFAULT_OUT = DEFAULT_RESULTS_DIR

GROUPS: tuple[GroupSpec, ...] = (
    {"name": "g0_cache_off", "cache_policy": "off", "enabled": False},
    {"name": "g1_prefix_cache", "cache_policy": "prefix_cache", "enabled": True},
)
SUMMARY_NAME = f"{PROJECT}_prefix_cache.json"


def group_manifest_path(out: Path | str, group_name: str) -> Path:
    return Path(out) / f"{PROJECT}_prefix_cache_{group_name}.json"


def default_model() -> str:
    return SEED_MODEL if detect_platform()["kind"] == "gpu" else "small"


def _manifest_paths(out: Path) -> list[Path]:
    return [group_manifest_path(out, g["name"]) for g in GROUPS] + [out / SUMMARY_NAME]


def _check_outputs(out: Path, workload_path: str | Path) -> None:
    """Before any server starts: the folder can take the manifests, and none of them (nor their keep copies) is
    the workload."""
    check_output_folder("--out", out)
    check_kept_outputs(_manifest_paths(out), {"--workload": workload_path})


def check_kept_outputs(paths: Sequence[Path], inputs: Mapping[str, str | Path | None]) -> None:
    """``paths`` and the copies a rerun keeps of them (``NAME.previous.json``) spare every input, and a copy
    replaces only a result this project kept (``core.files.check_keep_target``)."""
    outputs = {f"--out ({p.name})": p for p in paths}
    outputs.update({f"--out ({keep_name(p).name})": keep_name(p) for p in paths})
    check_outputs_spare_inputs(outputs, inputs)
    for path in paths:
        check_keep_target(f"--out ({keep_name(path).name})", path)


class SummaryFile:
    """The summary manifest, rewritten atomically whenever the experiment's state changes."""

    def __init__(self, path: Path, out: Path, base: dict):
        self.path, self.out, self.base = path, out, base
        self.manifests: dict[str, dict | None] = {g["name"]: None for g in GROUPS}

    def write(self, status: str, **extra: Any) -> dict:
        groups = []
        for g in GROUPS:
            manifest = self.manifests[g["name"]] or {}
            groups.append({"group": g, "report_path": str(group_manifest_path(self.out, g["name"])),
                           "status": manifest.get("status", "not_run"), "error": manifest.get("error"),
                           "normalized_result": manifest.get("normalized_result")})
        data = {**self.base, "status": status, "updated_at": now(), "groups": groups, **extra}
        atomic_write_json(self.path, data)
        return data


def base_config(model: str | None, model_source: str | None, workload_path: str | Path, loaded: Workload,
                requests: list, *, dtype: str, warmup: int, repeats: int, request_timeout_s: float,
                deadline_s: float | None, endpoints: bool = False) -> tuple[ResolvedModel, dict]:
    """The resolved model and the settings every group shares (the load is the caller's). With ``endpoints``
    the servers are the user's: ``model`` is the name they serve, nothing is resolved or built."""
    model = model or default_model()
    resolved = ResolvedModel(model, "endpoint") if endpoints else resolve_model(model, model_source or "hub")
    model_source = "endpoint" if endpoints else model_source
    return resolved, {
        "model": model, "served_model_name": resolved.local_name or model, "model_source": model_source or "hub",
        "resolved_model": resolved.as_dict(), "backend": "vllm", "dtype": dtype, "workload": str(workload_path),
        "workload_id": loaded.workload_id, "num_prompts": len(requests),
        "max_tokens": sorted({r["max_tokens"] for r in requests}), "warmup": warmup, "repeats": repeats,
        "request_timeout_s": request_timeout_s, "deadline_s": deadline_s,
        "groups": [g["name"] for g in GROUPS], "hit_rate_unit": "token",
    }


def run_experiment(*, model: str | None = None, model_source: str | None = None, workload: str | None = None,
                   num_prompts: int | None = None, max_tokens: int | None = None, concurrency: int = 1,
                   request_rate: float | None = None, warmup: int = 1, repeats: int = 1, replicas: int = 1,
                   routing: str | None = None, out: str | Path = DEFAULT_OUT,
                   min_hit_rate: float = DEFAULT_MIN_HIT_RATE, max_overhead: float = DEFAULT_MAX_OVERHEAD,
                   dtype: str = "auto", startup_timeout_s: float = 600.0, progress: bool = True,
                   request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S, deadline_s: float | None = DEFAULT_DEADLINE_S,
                   kv_blocks: int | None = None, block_size: int | None = None,
                   servers: Mapping[str, Provided] | None = None, endpoints: Mapping[str, Sequence[str]] | None = None,
                   schedule: str | None = None, log: Callable[[str], None] = print) -> dict:
    """Run G0 and G1, each on its own fresh server, and write the three manifests. Returns the summary.

    ``schedule``: ``interleaved``, ``sequential`` or ``None`` (interleaved where both fit: ``run.interleave``).

    ``servers`` (group name -> a running ``VllmServer``) runs a group on a server the caller started and stops
    (tests share servers this way); ``endpoints`` (group name -> URLs) on servers the user started
    (``existing_servers``). The cache is reset before every repeat either way.

    ``model``: ``tiny`` / ``small`` (built locally), a folder, or a hub id (``None``: the chapter's model on a
    GPU, ``small`` on a CPU). ``model_source`` defaults to ``hub`` for hub ids, so nothing is substituted
    silently; pass ``auto`` to let a CPU machine stand in its local model.

    ``kv_blocks``: start every server with a pool of that many blocks (``--num-gpu-blocks-override``) of
    ``block_size`` tokens (default: vLLM's 16 on a GPU, 128 on a CPU), so the run evicts and the engine model
    predicts it; a pool too small for one request is refused before any server starts, and a pool a server
    reports otherwise (``servers`` started with another one) before its group's measured requests: the summary
    says ``failed`` with the reason, and ``InputError`` is raised (as every live command refuses it).
    """
    min_hit_rate, max_overhead, repeats = _checked(min_hit_rate, max_overhead, repeats, startup_timeout_s,
                                                   request_rate)
    check_group_settings(warmup=warmup, concurrency=concurrency, request_timeout_s=request_timeout_s,
                         deadline_s=deadline_s)  # every group's, before anything is read or started
    workload_path, out = workload or DEFAULT_WORKLOAD, Path(out)
    _check_outputs(out, workload_path)
    loaded = load_workload(workload_path)
    requests = select_requests(loaded, num_prompts, max_tokens)
    servers, replicas = given_servers(servers, endpoints, model, replicas, kv_blocks, block_size)
    resolved, config = base_config(model, model_source, workload_path, loaded, requests, dtype=dtype, warmup=warmup,
                                   repeats=repeats, request_timeout_s=request_timeout_s, deadline_s=deadline_s,
                                   endpoints=bool(endpoints))
    config.update(concurrency=concurrency, request_rate=request_rate, batch=None, **check_replicas(replicas, routing))
    config.update(pool_config(kv_blocks, block_size, requests, warmup), endpoints=endpoint_urls(servers, endpoints))
    config["schedule"] = plan_schedule(schedule, replicas=replicas, request_rate=request_rate,
                                       provided=servers is not None, model_path=resolved.path,
                                       parameters=resolved.parameters)
    for kept in filter(None, map(keep_previous, _manifest_paths(out))):
        log(f"note: the previous {kept.name.replace('.previous', '')} is kept as {kept}")
    environment = environment_snapshot()
    summary = SummaryFile(out / SUMMARY_NAME, out, {
        "schema": SCHEMA_SUMMARY, "project": PROJECT, "config": config, "environment": environment,
        "started_at": now(), "evidence_level": EVIDENCE_LEVEL})
    experiment = Experiment(model_path=resolved.path, config=config, requests=requests, environment=environment,
                            out=out, dtype=dtype, startup_timeout_s=startup_timeout_s, progress=progress, log=log)
    _run_recorded(experiment, summary, servers)
    paired = summarize(summary.manifests["g0_cache_off"], summary.manifests["g1_prefix_cache"],
                       min_hit_rate=min_hit_rate, max_overhead=max_overhead)
    return summary.write(paired.decision.status, paired_summary=paired.to_json(),
                         hit_rate_evidence=paired.side.hit_rate_evidence, finished_at=now())


def _run_recorded(experiment: Experiment, summary: SummaryFile, servers: Mapping[str, Provided] | None) -> None:
    """Both groups (``_run_groups``); an interruption or a refusal is written into the summary, then raised."""
    where: list[str] = []
    try:
        _run_groups(experiment, summary, servers, where)
        check_terminated()  # a SIGTERM a finalizer swallowed on the way is still an interruption
    except (KeyboardInterrupt, SystemExit):  # Ctrl-C or SIGTERM: the servers were stopped on the way out
        forget_arrivals()  # handled here: no later step raises it again
        summary.write("interrupted", reason=f"interrupted during {where[-1] if where else None}", finished_at=now())
        raise
    except InputError as exc:  # refused before a group's measured requests (a kv_blocks a server contradicts)
        summary.write("failed", reason=f"refused during {where[-1] if where else None}: {exc}", finished_at=now())
        raise


def _checked(min_hit_rate: float, max_overhead: float, repeats: int, startup_timeout_s: float,
             request_rate: float | None) -> tuple[float, float, int]:
    """The experiment's own numbers, each against its bound, before anything is read or started (a group's are
    ``group.check_group_settings``)."""
    TIMEOUT_S.check("startup_timeout_s", startup_timeout_s)
    auth_headers()  # a PREFIXBENCH_API_KEY no header can carry: refused now, not after two servers started
    if request_rate is not None:
        REQUEST_RATE.check("request_rate", request_rate)
    return (require_number("min_hit_rate", min_hit_rate, low=0.0, high=1.0),
            require_number("max_overhead", max_overhead, low=0.0), RUN_REPEATS.check("repeats", repeats))


ENDPOINT_FLAGS = {"g0_cache_off": "--g0-endpoint", "g1_prefix_cache": "--g1-endpoint"}


def given_servers(servers: Mapping[str, Provided] | None, endpoints: Mapping[str, Sequence[str]] | None,
                  model: str | None, replicas: int, kv_blocks: int | None = None,
                  block_size: int | None = None) -> tuple[Mapping[str, Provided] | None, int]:
    """``(servers, replicas)``: the caller's servers, the user's endpoints checked, or ``None`` (start them)."""
    if not endpoints or not any(endpoints.values()):
        return servers, replicas
    for flag, value in (("--kv-blocks", kv_blocks), ("--block-size", block_size)):
        if value is not None:
            raise InputError(flag, "sets up servers g0g1 starts; the endpoints' servers were started by you")
    found = existing_servers(endpoints, model, replicas)
    return found, len(found["g1_prefix_cache"])


def endpoint_urls(servers: Mapping[str, Provided] | None, endpoints: Mapping[str, Sequence[str]] | None) -> dict | None:
    if not endpoints or not servers:
        return None
    return {name: [s.base_url for s in as_list(servers[name])] for name in ENDPOINT_FLAGS}


def existing_servers(endpoints: Mapping[str, Sequence[str]], model: str | None,
                     replicas: int) -> dict[str, list[RunningServer]]:
    """Group name -> the user's running servers, checked before anything is written: both groups given, as many
    servers each (replicas), every one serving ``model`` with prefix caching off for G0 and on for G1."""
    if not model:
        raise InputError("--model", "with --g0-endpoint / --g1-endpoint, name the model the servers serve")
    counts = {name: len(endpoints.get(name) or []) for name in ENDPOINT_FLAGS}
    missing = [ENDPOINT_FLAGS[n] for n, c in counts.items() if c == 0]
    if missing:
        raise InputError(missing[0], "G0 and G1 both need servers: give --g0-endpoint and --g1-endpoint")
    if len(set(counts.values())) > 1:
        raise InputError("--g1-endpoint", f"G0 has {counts['g0_cache_off']} servers and G1 "
                                          f"{counts['g1_prefix_cache']}: give each group as many")
    if replicas not in (1, counts["g1_prefix_cache"]):
        raise InputError("--replicas", f"the endpoints name {counts['g1_prefix_cache']} servers per group, not "
                                       f"{replicas} (leave --replicas out)")
    servers: dict[str, list[RunningServer]] = {}
    seen: set[str] = set()
    for group in GROUPS:
        flag = ENDPOINT_FLAGS[group["name"]]
        servers[group["name"]] = [_checked_server(url, flag, model, group["enabled"], seen)
                                  for url in endpoints[group["name"]]]
    return servers


def _checked_server(url: str, flag: str, model: str, caching: bool, seen: set) -> RunningServer:
    server = RunningServer(url, flag)
    if server.base_url in seen:
        raise InputError(flag, f"{server.base_url} is named twice")
    seen.add(server.base_url)
    preflight = check_model(server.base_url, model)
    if not preflight["reachable"]:
        raise InputError(flag, preflight["detail"])
    info = prom.cache_config(prom.snapshot(server.base_url + "/metrics"))
    state = info.get("enable_prefix_caching") if info else None
    if state is not None and state != caching:
        raise InputError(flag, f"{server.base_url} runs with prefix caching {'on' if state else 'off'} "
                               f"(vllm:cache_config_info); {'G1 needs it on' if caching else 'G0 needs it off'}")
    return server


def pool_config(kv_blocks: int | None, block_size: int | None, requests: list, warmup: int) -> dict:
    """``kv_blocks`` / ``kv_block_size`` for the config, checked against every request (warm-up included)."""
    if kv_blocks is None:
        return {"kv_blocks": None, "kv_block_size": block_size}
    size = block_size or (16 if detect_platform()["kind"] == "gpu" else 128)
    sizes = [(len(r["prompt_token_ids"]), r["max_tokens"], r["id"]) for r in requests]
    if warmup and requests:
        sizes.append((len(requests[0]["prompt_token_ids"]), requests[0]["max_tokens"], "warmup0"))
    check_pool_fits(sizes, size, kv_blocks, flag="--kv-blocks")
    return {"kv_blocks": kv_blocks, "kv_block_size": size}


def server_failure(group: GroupSpec, config: dict, server: ServerHandle, environment: dict, exc: Exception, *,
                   started_at: str | None = None) -> GroupRunManifest:
    """The manifest of a group whose server did not start or stopped answering: failed, with the log tail;
    ``started_at``: when the group began starting its servers."""
    manifest = GroupRunManifest(label=f"vllm-{group['name']}", group=group, config=config, server=server.describe(),
                                environment=environment, started_at=started_at, server_log_tail=server.log_tail(20))
    manifest.fail(str(exc).splitlines()[0], unmeasured_hit_rate("the server did not start"), now())
    return manifest


def new_server(group: GroupSpec, model_path: str, config: dict, log_path: Path, *, dtype: str, startup_timeout_s: float,
               log: Callable[[str], None]) -> VllmServer:
    """A server for one group, not started yet: caching on or off is the only difference between groups."""
    log(f"[{group['name']}] starting vLLM ({model_path}, prefix caching {'on' if group['enabled'] else 'off'})")
    pool, size = config.get("kv_blocks"), config.get("kv_block_size")
    extra = ([] if size is None else ["--block-size", str(size)]) + (
        [] if pool is None else ["--num-gpu-blocks-override", str(pool)])
    plan = section(config, "schedule")
    share = section(plan, "memory_split").get("gpu_memory_utilization_each")
    if plan.get("schedule") == "interleaved" and share:  # two servers on one GPU: each gets its half
        extra += ["--gpu-memory-utilization", f"{share:g}"]
    return VllmServer(ServerConfig(
        model=model_path, served_model_name=config["served_model_name"], enable_prefix_caching=group["enabled"],
        dtype=dtype, startup_timeout_s=startup_timeout_s, log_path=str(log_path), extra_args=extra,
        max_model_len=4096 if pool is None else min(4096, (pool - 1) * size)))


def group_servers(group: GroupSpec, model_path: str, config: dict, log_stem: Path, provided: Provided | None, *,
                  dtype: str, startup_timeout_s: float, log: Callable[[str], None]) -> list[ServerHandle]:
    """The group's servers: ``provided`` (one or a list, already running) or ``config['replicas']`` new ones."""
    if provided is not None:
        return as_list(provided)
    count = config.get("replicas", 1)
    return [new_server(group, model_path, config, log_stem.with_name(log_stem.name + (f"_r{i}" if count > 1 else "")
                                                                       + ".log"),
                       dtype=dtype, startup_timeout_s=startup_timeout_s, log=log) for i in range(count)]


def run_repeats(servers: Provided, group: GroupSpec, config: dict, requests: list, environment: dict, *,
                progress: bool) -> GroupRunManifest:
    """``config['repeats']`` runs of one group on its running server(s) (the caches are reset before each), as
    one manifest (``group.combine_repeats``); stops at the first failed run. Several servers are replicas, and
    the client places each request on one by ``config['routing']`` (``run.replicas``)."""
    servers = as_list(servers)
    run = group_run(group, config, requests, environment, progress=progress)
    runs = []
    for _ in range(config.get("repeats", 1)):
        if len(servers) > 1:
            runs.append(run_replica_group(run, servers, config.get("routing") or "round_robin"))
        else:
            runs.append(run_group(run, servers[0].base_url, server=servers[0]))
        if runs[-1].status != "ok":
            break
    combined = combine_repeats(runs, config.get("repeats", 1))
    if len(servers) > 1 and config.get("compare_routings") and group.get("enabled") and combined.status == "ok":
        combined.routing_comparison = measure_routings(run, servers, config["compare_routings"])
    return combined


def group_run(group: GroupSpec, config: Mapping, requests: Sequence[dict], environment: Mapping, *,
              progress: bool) -> GroupRun:
    """What one group of the experiment sends, and how, from the experiment's (or a sweep point's) config."""
    return GroupRun(model=config["served_model_name"], requests=requests, group=group, warmup=config["warmup"],
                    concurrency=config["concurrency"], request_rate=config["request_rate"], progress=progress,
                    request_timeout_s=config["request_timeout_s"], deadline_s=config["deadline_s"], config=config,
                    label=f"vllm-{group['name']}", environment=environment)


@dataclass(frozen=True)
class Experiment:
    """What every group of a G0 / G1 experiment or sweep shares: the parameter object its steps read (as
    SGLang's ``CacheInitParams``), instead of a relay of positional parameters."""

    model_path: str
    config: dict
    requests: list
    environment: dict
    out: Path
    dtype: str
    startup_timeout_s: float
    progress: bool
    log: Callable[[str], None]

    def servers(self, group: GroupSpec, log_stem: Path, provided: Provided | None) -> list[ServerHandle]:
        """The group's servers (``group_servers``): ``provided`` ones, or new ones logging to ``log_stem``."""
        return group_servers(group, self.model_path, self.config, log_stem, provided, dtype=self.dtype,
                             startup_timeout_s=self.startup_timeout_s, log=self.log)


def _run_one(group: GroupSpec, experiment: Experiment, summary: SummaryFile, provided: Provided | None = None) -> dict:
    """Start a group's server(s) (unless ``provided``), run it, stop what was started, write the manifest."""
    name, config, requests, log = group["name"], experiment.config, experiment.requests, experiment.log
    path = group_manifest_path(experiment.out, name)
    servers = experiment.servers(group, experiment.out / "logs" / path.stem, provided)
    first = servers[0]
    log_path = str(first.log_path) if first.log_path else None
    summary.write("running", active={"group": name, "port": first.port, "log_path": log_path})
    failing, started_at = first, now()
    try:
        for failing in servers if provided is None else []:
            failing.start()
        summary.write("running", active={"group": name, "port": first.port, "log_path": log_path,
                                         "pid": first.process.pid if first.process else None})
        log(f"[{name}] {len(servers)} server(s) healthy, first on port {first.port}; "
            f"running {config['repeats']} x ({config['warmup']} warm-up + {len(requests)} requests)")
        manifest = run_repeats(servers, group, config, requests, experiment.environment,
                               progress=experiment.progress)
    except ServerError as exc:
        manifest = server_failure(group, config, failing, experiment.environment, exc, started_at=started_at)
    finally:
        for server in servers if provided is None else []:
            server.stop()
    written = _with_exit_code(manifest, first)
    summary.manifests[name] = written
    atomic_write_json(path, written)
    log(f"[{name}] {written['status']}: wrote {path}")
    return written


def _with_exit_code(manifest: GroupRunManifest, server: ServerHandle) -> dict:
    """The manifest as written: its server's exit code (``None`` while it runs) last in its ``server``."""
    if manifest.server is None:
        return manifest.to_json()
    return replace(manifest, server={**manifest.server, "exit_code": server.exit_code}).to_json()


def _run_groups(experiment: Experiment, summary: SummaryFile, servers: Mapping[str, Provided] | None,
                where: list[str]) -> None:
    """Both groups by the planned schedule (``where`` names the step running, for an interruption's reason)."""
    if experiment.config["schedule"]["schedule"] == "interleaved":
        where.append(" + ".join(g["name"] for g in GROUPS) + " (interleaved)")
        if _run_interleaved(experiment, summary, servers or {}):
            return
    for group in GROUPS:
        where.append(group["name"])
        manifest = _run_one(group, experiment, summary, servers.get(group["name"]) if servers else None)
        if manifest["status"] != "ok":
            break


def _active(servers: Sequence[ServerHandle], schedule: str) -> dict:
    """The summary's ``active``: the first server's group, port, log and pid, and every server of the step."""
    each = [{"group": g["name"], "port": s.port, "log_path": str(s.log_path) if s.log_path else None,
             "pid": s.process.pid if s.process else None} for g, s in zip(GROUPS, servers, strict=True)]
    return {**each[0], "schedule": schedule, "servers": each}


def _run_interleaved(experiment: Experiment, summary: SummaryFile, provided: Mapping[str, Provided]) -> bool:
    """Both servers up at once, the groups interleaved; ``False`` (nothing written) when G1's server did not
    start beside G0's, so the caller falls back to the sequential schedule (``config.schedule`` says why)."""
    config, log = experiment.config, experiment.log
    paths = [group_manifest_path(experiment.out, g["name"]) for g in GROUPS]
    servers = [experiment.servers(g, experiment.out / "logs" / path.stem, provided.get(g["name"]))[0]
               for g, path in zip(GROUPS, paths, strict=True)]
    summary.write("running", active=_active(servers, "interleaved"))
    started: list = []
    started_at = now()
    try:
        for server in servers if not provided else []:
            try:
                server.start()
            except ServerError as exc:
                if not started:
                    raise
                config["schedule"].update(schedule="sequential", order=None, order_note=None, fallback_reason=(
                    f"G1's server did not start beside G0's: {str(exc).splitlines()[0]}"))
                log(f"note: falling back to the sequential schedule ({config['schedule']['fallback_reason']})")
                return False
            started.append(server)
        summary.write("running", active=_active(servers, "interleaved"))
        log(f"[interleaved] both servers healthy (ports {servers[0].port}, {servers[1].port}); running "
            f"{config['repeats']} x ({config['warmup']} warm-up + {len(experiment.requests)} requests) on each")
        manifests = _interleaved_repeats(servers, experiment)
    except ServerError as exc:  # G0's server did not start: G1 never ran
        manifests = [server_failure(GROUPS[0], config, servers[0], experiment.environment, exc, started_at=started_at)]
    finally:
        for server in started:
            server.stop()
    # G0's alone when its server did not start
    for group, path, server, manifest in zip(GROUPS, paths, servers, manifests, strict=False):
        written = _with_exit_code(manifest, server)
        summary.manifests[group["name"]] = written
        atomic_write_json(path, written)
        log(f"[{group['name']}] {written['status']}: wrote {path}")
    return True


def _interleaved_repeats(servers: Sequence, experiment: Experiment) -> list[GroupRunManifest]:
    """``config['repeats']`` interleaved runs (caches reset before each), one combined manifest per group."""
    config = experiment.config
    runs = [group_run(g, config, experiment.requests, experiment.environment, progress=experiment.progress)
            for g in GROUPS]
    per_group: list[list[GroupRunManifest]] = [[], []]
    for _ in range(config.get("repeats", 1)):
        pair = run_interleaved_pair(runs, servers)
        for kept, manifest in zip(per_group, pair, strict=True):
            kept.append(manifest)
        if any(m.status != "ok" for m in pair):
            break
    return [combine_repeats(kept, config.get("repeats", 1)) for kept in per_group]
