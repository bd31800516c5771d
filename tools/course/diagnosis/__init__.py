"""Name the likely mistake in a student's answer: the probe engine (``engine/``) and its graded counterpart.

The notebook calls ``from tools.course.diagnosis import self_check`` (visible probes only); while grading,
``graded.py`` runs visible and hidden probes inside the sandbox and rebuilds the findings from the catalogue.
This package re-exports the engine's public names; it does not import ``graded`` (the grader does).
"""

from .engine import CATALOGUE, EXERCISES, NAMED_MISTAKES, PROBES, VISIBILITIES, Finding, diagnose, feedback_text, self_check

__all__ = ["CATALOGUE", "EXERCISES", "NAMED_MISTAKES", "PROBES", "VISIBILITIES", "Finding", "diagnose", "feedback_text",
           "self_check"]
