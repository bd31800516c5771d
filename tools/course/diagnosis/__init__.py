"""Name the likely mistake in a student's answer: the probe engine (``engine/``) and its graded counterpart.

The notebook calls ``from tools.course.diagnosis import self_check`` (visible probes only); while grading,
``graded.py`` runs visible and hidden probes inside the sandbox and rebuilds the findings from the catalogue.
This package re-exports the engine's public names; it does not import ``graded`` (the grader does). The
student distribution ships this file and the engine without ``engine/hidden_probes.py`` and ``graded.py``
(there ``HIDDEN_AVAILABLE`` is False).
"""

from .engine import (
    CATALOGUE,
    EXERCISES,
    HIDDEN_AVAILABLE,
    NAMED_MISTAKES,
    PROBES,
    VISIBILITIES,
    Finding,
    check_against_library,
    diagnose,
    feedback_text,
    self_check,
)

__all__ = ["CATALOGUE", "EXERCISES", "HIDDEN_AVAILABLE", "NAMED_MISTAKES", "PROBES", "VISIBILITIES", "Finding",
           "check_against_library", "diagnose", "feedback_text", "self_check"]
