"""Processes a submission left behind (a crashed worker's kernel, adopted by init), found by the work folder
their command line names: with or without a sandbox user of their own, they never outlive grading."""

from __future__ import annotations

import os
from pathlib import Path

from tools.prefixbench.core.processes import kill_all, processes_matching


def processes_of(work: Path) -> list:
    """psutil handles on the processes whose command line names a file in a submission's work folder (its kernel
    and diagnosis runs do), this process excluded."""
    needle = str(Path(work).resolve()) + os.sep
    return [proc for proc in processes_matching(lambda cmdline: any(needle in arg for arg in cmdline))
            if proc.pid != os.getpid()]


def kill_strays(work: Path) -> int:
    """Kill what a submission started and left behind; returns how many were killed."""
    strays = processes_of(work)
    kill_all(strays)
    return len(strays)
