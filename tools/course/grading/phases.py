"""Where a worker's time goes: seconds per step, written to result.json (``phases``)."""

from __future__ import annotations

import contextlib
import time

PHASES: dict[str, float] = {}
"""Seconds spent in each step of this worker."""


@contextlib.contextmanager
def phase(name: str):
    started = time.monotonic()
    try:
        yield
    finally:
        PHASES[name] = round(PHASES.get(name, 0.0) + time.monotonic() - started, 3)
