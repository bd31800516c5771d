"""Feedback that names the mistake: probe a student's chapter-69 functions and say which known mistake they make.

A failing assert says *that* an answer is wrong; this engine says *which* of the course's known mistakes it
most likely is, and what to look at, in Simplified Chinese and English.

How a mistake is told apart from the others: each targeted probe is a small case on which exactly one known
mistake changes the answer, in a known direction (the *symptom*), paired with a *control* case that differs
only in the detail the mistake trips over. A probe is blamed on its mistake only when it fails with the
symptom and its control passes; every other failure is reported as ``other`` with the probe's hint. A named
mistake, once found, hides ``other`` for the same exercise (the general failures are usually its echo).

Probes are ``visible`` (the notebook's self-check runs them and may show their inputs) or ``hidden`` (grading
only: they may shape the message, but their inputs and expected values never appear in it).

The engine is standard library only and imports nothing outside this folder except its oracle, the library
``tools.prefixbench`` (which uses numpy), imported on first use: the graded run copies this folder into the
sandbox as a package of its own (``diagnosis/graded.py``), where the rest of tools/course is hidden.

    catalogue.py        exercises, result keys, the mistakes and their messages
    guarded.py          calling student code with a time limit, prints swallowed, exceptions caught
    probing.py          Probe, Failure, the Runner a probe calls through, comparisons
    simulate_probes.py  probe kinds for simulate_prefix_cache (targeted, random + shrinking, timing)
    decision_probes.py  probe kinds for the three decision functions
    visible_probes.py   the visible probes (data; shipped to students)
    hidden_probes.py    the hidden probes (data; never shipped: the student distribution leaves it out)
    probe_set.py        PROBES: the visible probes, then the hidden ones where this copy has them
    findings.py         failures -> findings; ``diagnose``
    present.py          ``feedback_text`` and ``self_check``
    library_check.py    Step 6's check against the library (the one place the notebook calls its simulator)

    self_check(globals())                       # notebook: visible probes, prints zh + en, returns findings
    diagnose(functions, {"visible", "hidden"})  # grading: list[Finding]
    feedback_text(findings)                     # grading: text safe to hand back
"""

from .catalogue import CATALOGUE, DEFAULT_CALL_TIMEOUT_S, EXERCISES, NAMED_MISTAKES, VISIBILITIES
from .findings import Finding, diagnose, findings_for, make_finding, probe_function
from .guarded import call_guarded
from .library_check import check_against_library
from .present import feedback_text, self_check
from .probe_set import HIDDEN_AVAILABLE, PROBES
from .probing import Failure

__all__ = ["check_against_library", "CATALOGUE", "DEFAULT_CALL_TIMEOUT_S", "EXERCISES", "HIDDEN_AVAILABLE", "NAMED_MISTAKES", "PROBES",
           "VISIBILITIES", "Failure", "Finding", "call_guarded", "diagnose", "feedback_text", "findings_for",
           "make_finding", "probe_function", "self_check"]
