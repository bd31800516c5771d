"""One error type for bad input, so the CLI can print a single line instead of a traceback."""

from __future__ import annotations

import math
from typing import Any


class InputError(ValueError):
    """Bad input. The message always starts with the offending field's name."""

    def __init__(self, field: str, problem: str):
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


def require_int(field: str, value: Any, *, minimum: int | None = None) -> int:
    """Return ``value`` if it is a real integer (``bool`` is refused) and at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(field, f"must be an integer, got {type(value).__name__} {value!r}")
    if minimum is not None and value < minimum:
        raise InputError(field, f"must be >= {minimum}, got {value}")
    return value


def require_number(field: str, value: Any, *, low: float | None = None, high: float | None = None) -> float:
    """Return ``value`` as a float if it is a finite real number inside [low, high]."""
    if value is None:
        raise InputError(field, "is missing (None); a metric that was not measured cannot be used as 0")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(field, f"must be a number, got {type(value).__name__} {value!r}")
    if not math.isfinite(value):
        raise InputError(field, f"must be finite, got {value!r}")
    if low is not None and value < low:
        raise InputError(field, f"must be >= {low}, got {value}")
    if high is not None and value > high:
        raise InputError(field, f"must be <= {high}, got {value}")
    return float(value) if isinstance(value, float) else value
