"""Where a worker's time goes: seconds per step, written to result.json (``phases``)."""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

PHASES: dict[str, float] = {}
"""Seconds spent in each step of this worker."""


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    started = time.monotonic()
    try:
        yield
    finally:
        PHASES[name] = round(PHASES.get(name, 0.0) + time.monotonic() - started, 3)
