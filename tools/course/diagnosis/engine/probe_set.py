"""The probe set: the visible probes, then the hidden ones where this copy of the engine has them.

The student distribution ships the engine without hidden_probes.py: there ``PROBES`` is the visible probes
only and ``HIDDEN_AVAILABLE`` is False (the graded run refuses to start without them).
"""

from __future__ import annotations

from .probing import Probe
from .visible_probes import VISIBLE_PROBES

try:
    from .hidden_probes import HIDDEN_PROBES
except ModuleNotFoundError as exc:  # the student copy: visible probes only
    if exc.name != f"{__package__}.hidden_probes":
        raise
    HIDDEN_PROBES = ()

HIDDEN_AVAILABLE = bool(HIDDEN_PROBES)
PROBES: tuple[Probe, ...] = VISIBLE_PROBES + HIDDEN_PROBES
