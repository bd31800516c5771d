"""Peak memory of a server's process tree while a phase runs: host RSS, and device memory through NVML."""

from __future__ import annotations

import threading
from typing import Any, Callable, Iterable

import psutil


class MemorySampler:
    """Peak memory of a server's process tree while a phase runs, sampled in a background thread.

    CPU: resident set size (RSS) summed over the tree. GPU: also the device memory NVML reports for those
    processes. Sampling every ``interval_s`` can miss a short spike; the result says how it was measured.
    """

    def __init__(self, pids_of: Callable[[], list[int]], interval_s: float = 0.2):
        self._pids_of = pids_of
        self.interval_s = interval_s
        self.peak_rss = 0
        self.peak_gpu: int | None = None
        self.gpu_source: str | None = None
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

    def __exit__(self, *exc: object) -> None:
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


class NotSampled:
    """Memory of servers this process did not start (or of no server): null with the reason, never 0."""

    def __enter__(self) -> "NotSampled":
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def result(self) -> dict:
        return {"peak_memory_mib": None, "source": None, "reason": "server not started by this process"}


def sampler_for(servers: Iterable[Any]) -> "MemorySampler | NotSampled":
    """A sampler of the servers' process trees, or ``NotSampled`` when one of them is not this process's child
    (a server the user started has no process here)."""
    servers = list(servers)
    if not servers or any(s.process is None for s in servers):
        return NotSampled()
    return MemorySampler(lambda: [pid for s in servers for pid in s.pids()])


def _nvml_handles() -> list[Any]:
    try:
        import pynvml

        pynvml.nvmlInit()
        return [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
    except Exception:  # no NVML library or no driver: a CPU machine
        return []


def _nvml_used(handles: list[Any], pids: set[int]) -> tuple[int | None, str | None]:
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
