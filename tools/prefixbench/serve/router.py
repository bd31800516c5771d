"""Start, watch and stop ``vllm-router`` (the vLLM project's Rust router) in front of running replicas.

``vllm-router`` 0.1.17 (requirements-backend.txt) is a console script that proxies OpenAI requests to the
``--worker-urls`` it is given and places each one by ``--policy``. This module runs it the way ``serve.server``
runs vLLM: an argument list (no shell), its own session (process group), 127.0.0.1 on free ports (the API and
``--prometheus-port``), a startup deadline, and ``stop()`` that signals the whole group. The router is ready once
its ``/v1/models`` answers (it forwards that to a healthy worker).

A router that cannot start (the binary is missing, a flag it refuses, a worker that never turns healthy) raises
``RouterError`` with one line: the router's own error line when it printed one. Nothing has been sent then.

``kv_aware`` reads each worker's KV events: ``kv_events`` maps a worker URL to the ZMQ endpoint its publisher
binds (vLLM started with ``--kv-events-config '{"enable_kv_cache_events": true, "publisher": "zmq",
"endpoint": "tcp://*:PORT"}'``); the router connects there (``--kv-event-source URL=tcp://127.0.0.1:PORT``).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import requests

from ..core import processes
from ..core.auth import auth_headers, redacted
from ..core.termination import check_terminated
from .ports import HOST, steady_ports

ROUTER_VERSION = "0.1.17"
ROUTER_POLICIES = ("random", "round_robin", "cache_aware", "kv_aware", "power_of_two", "consistent_hash",
                   "sticky_least_loaded")
"""The policies ``vllm-router --policy`` accepts (0.1.17)."""
BINARY_ENV = "PREFIXBENCH_VLLM_ROUTER"
"""Path of the ``vllm-router`` executable (default: the one beside this Python, then ``$PATH``)."""
STARTUP_TIMEOUT_S = 60.0
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class RouterError(RuntimeError):
    """The router could not be started or died; the message is one line."""


def router_binary() -> str:
    """The ``vllm-router`` executable, or ``RouterError`` saying how to install it."""
    named = os.environ.get(BINARY_ENV)
    if named:
        if not (os.path.isfile(named) and os.access(named, os.X_OK)):
            raise RouterError(f"{BINARY_ENV}={named} is not an executable file")
        return named
    beside = Path(sys.executable).parent / "vllm-router"
    found = str(beside) if beside.is_file() else shutil.which("vllm-router")
    if not found:
        raise RouterError(f"vllm-router is not installed: pip install vllm-router=={ROUTER_VERSION} "
                          "(requirements-backend.txt)")
    return found


@dataclass
class RouterConfig:
    """``workers``: the replicas' base URLs; ``kv_events``: worker URL -> its publisher endpoint (``kv_aware``);
    ``extra_args``: more ``vllm-router`` flags, passed as they are."""

    workers: Sequence[str]
    policy: str = "round_robin"
    kv_events: Mapping[str, str] = field(default_factory=dict)
    block_size: int | None = None
    model: str | None = None
    extra_args: Sequence[str] = ()
    startup_timeout_s: float = STARTUP_TIMEOUT_S
    log_path: str | None = None


def loopback(endpoint: str) -> str:
    """A publisher's bind address as a subscriber connects to it: ``tcp://*:P`` -> ``tcp://127.0.0.1:P``."""
    return endpoint.replace("://*:", f"://{HOST}:").replace("://0.0.0.0:", f"://{HOST}:")


class VllmRouter:
    """One ``vllm-router`` process group. Use as a context manager, or ``start()`` and ``stop()``."""

    def __init__(self, config: RouterConfig):
        self.config = config
        self.port, self.metrics_port = steady_ports(2)
        self.base_url = f"http://{HOST}:{self.port}"
        self.metrics_url = f"http://{HOST}:{self.metrics_port}/metrics"
        log_dir = Path(tempfile.gettempdir()) / "prefixbench-logs"
        self.log_path = Path(config.log_path or log_dir / f"vllm-router-{self.port}-{int(time.time())}.log")
        self.process: subprocess.Popen | None = None
        self.startup_s: float | None = None

    def argv(self) -> list[str]:
        c = self.config
        args = [router_binary(), "--host", HOST, "--port", str(self.port), "--worker-urls", *c.workers,
                "--policy", c.policy, "--prometheus-host", HOST, "--prometheus-port", str(self.metrics_port),
                "--worker-startup-timeout-secs", str(max(1, int(c.startup_timeout_s)))]
        for worker, endpoint in c.kv_events.items():
            args += ["--kv-event-source", f"{worker}={loopback(endpoint)}"]
        if c.kv_events and c.block_size:
            args += ["--kv-event-block-size", str(c.block_size)]
        if c.kv_events and c.model:
            args += ["--kv-event-model", c.model]
        return args + [str(a) for a in c.extra_args]

    def describe(self) -> dict:
        return {"program": "vllm-router", "version": ROUTER_VERSION, "policy": self.config.policy,
                "base_url": self.base_url, "metrics_url": self.metrics_url, "workers": list(self.config.workers),
                "argv": redacted(self.argv()), "log_path": str(self.log_path), "startup_s": self.startup_s,
                "pid": self.process.pid if self.process else None}

    def start(self) -> "VllmRouter":
        argv = self.argv()  # RouterError when the binary is missing: before anything starts
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)
        try:
            self._wait_ready(self.process, started)
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.monotonic() - started
        return self

    def _wait_ready(self, process: subprocess.Popen, started: float) -> None:
        deadline = started + self.config.startup_timeout_s
        while True:
            check_terminated()  # a SIGTERM swallowed while a probe closed its connection (core.termination)
            code = process.poll()
            if code is not None:
                raise RouterError(f"vllm-router exited with code {code} at startup: {self.error_line()}")
            try:
                if requests.get(f"{self.base_url}/v1/models", timeout=2, headers=auth_headers()).status_code == 200:
                    return
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise RouterError(f"vllm-router did not answer /v1/models within {self.config.startup_timeout_s:.0f}"
                                  f" s: {self.error_line()}")
            time.sleep(0.2)

    def error_line(self) -> str:
        """The log's last line that reads like an error (ANSI colours removed), else its last line."""
        try:
            lines = [_ANSI.sub("", line).strip() for line in
                     self.log_path.read_text(errors="replace").splitlines()]
        except OSError:
            return f"no log at {self.log_path}"
        lines = [line for line in lines if line]
        errors = [line for line in lines if re.search(r"error|ERROR|panicked|failed|Failed", line)]
        chosen = (errors or lines or [f"nothing in {self.log_path}"])[-1]
        return chosen[:300]

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout_s: float = 10.0) -> None:
        if self.process is None:
            return
        processes.signal_group(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            processes.signal_group(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        processes.signal_group(self.process.pid, signal.SIGKILL)  # anything left in the group

    def __enter__(self) -> "VllmRouter":
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()
