"""Killing process trees: one implementation for the vLLM server and the grader.

Why shared: both start trees of processes (an API server with its engine core and workers; an nbgrader worker
with its kernel) that must never outlive a run, and both have to cope with processes that left their group or
whose pid may be reused. psutil handles check a process's identity (start time) before signalling it, so a
handle taken earlier never kills an unrelated process that got the same pid.
"""

from __future__ import annotations

import os
from typing import Callable, Iterable

import psutil


def handle(pid: int) -> psutil.Process | None:
    """A psutil handle on ``pid``, or ``None`` when it is already gone."""
    try:
        return psutil.Process(pid)
    except psutil.NoSuchProcess:
        return None


def descendants(root: psutil.Process | int | None) -> list[psutil.Process]:
    """Every process below ``root`` (a handle or a pid), deepest last; empty when it is gone."""
    proc = handle(root) if isinstance(root, int) else root
    if proc is None:
        return []
    try:
        return proc.children(recursive=True)
    except psutil.Error:
        return []


def kill_all(procs: Iterable[psutil.Process], timeout_s: float = 10.0) -> None:
    """SIGKILL each handle and wait (``timeout_s`` at most) for them to go."""
    procs = list(procs)
    for proc in procs:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(procs, timeout=timeout_s)


def kill_tree(root: psutil.Process | int | None, timeout_s: float = 10.0) -> None:
    """Kill ``root`` (a handle, a pid, or ``None``) and every process below it."""
    proc = handle(root) if isinstance(root, int) else root
    if proc is None:
        return
    kill_all([proc, *descendants(proc)], timeout_s)


def signal_group(pgid: int, sig: int) -> None:
    """Send ``sig`` to a whole process group; a group that is gone (or not ours) is not an error."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def processes_matching(predicate: Callable[[list[str]], bool]) -> list[psutil.Process]:
    """Handles on the live processes whose ``cmdline`` satisfies ``predicate(list_of_args)``."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if predicate(proc.info.get("cmdline") or []):
                found.append(proc)
        except psutil.Error:
            continue
    return found
