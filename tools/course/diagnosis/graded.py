"""Diagnosis for graded feedback: probe the student's functions inside the sandbox, write the message outside it.

The probes run student code, so they run in a sandboxed process like the kernel (never in the grader):
``stage`` copies the engine (``engine/``, self-contained) into the sandbox folder as the package
``prefix_diagnosis``; ``boot_command`` runs the submission's solution cells into a namespace, runs every probe
(visible and hidden) and prints one JSON line: per finding its exercise, its mistake code and the ids of the
probes behind it.
The grader trusts none of that text: ``findings_from_report`` keeps only known exercises, codes and probe ids
and rebuilds every message from the catalogue, so neither a hidden probe's inputs nor anything the student's
code printed can reach the feedback.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import grade_id
from . import engine as d
from .engine import catalogue

if TYPE_CHECKING:
    import nbformat

SOLUTION_CELLS = ("ex0-simulate", "ex1-summarize", "ex2-compare", "ex3-recommend")
MARK = "@@prefixbench-diagnosis@@"
STAGED_PACKAGE = "prefix_diagnosis"
"""The engine's name inside the sandbox, where tools.course is hidden."""

BOOT = """\
import json, sys
sys.path.insert(0, sys.argv[1])
import """ + STAGED_PACKAGE + """ as d
cells = json.load(open(sys.argv[2], encoding="utf-8"))
cell_timeout = float(sys.argv[4])
namespace = {"__name__": "__student__"}
for source in cells:
    # Each cell gets the notebook's per-cell timeout, like in nbgrader: a cell that loops at import time is
    # abandoned (its functions stay undefined) instead of holding the whole run until the grader kills it.
    try:
        code = compile(source, "<solution cell>", "exec")
    except BaseException:
        continue
    try:
        d.call_guarded(exec, (code, namespace), None, cell_timeout)
    except BaseException:
        pass
report = []
for exercise in d.EXERCISES:
    fn = namespace.get(exercise)
    if not callable(fn):
        report.append({"exercise": exercise, "code": "missing_function", "probes": []})
        continue
    probes = [p for p in d.PROBES if p.exercise == exercise]
    failures = d.probe_function(exercise, fn, probes, d.DEFAULT_CALL_TIMEOUT_S)
    for finding in d.findings_for(exercise, failures):
        ids = [p.id for p, f in failures if f.code == finding.code]
        note = next((f.note for p, f in failures if f.code == finding.code and f.note), "")
        report.append({"exercise": exercise, "code": finding.code, "probes": ids, "note": note})
sys.__stdout__.write("\\n" + sys.argv[3] + json.dumps(report) + "\\n")
sys.__stdout__.flush()
"""


def solution_sources(submission_nb: nbformat.NotebookNode, release_nb: nbformat.NotebookNode,
                     skip: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """The release's (trusted) imports cell, then the student's four solution cells, less those in ``skip``
    (solution cells that timed out while grading: their functions were never defined there either)."""
    imports = [c.source for c in release_nb.cells if c.get("id") == "exercise-imports" or
               grade_id(c) == "exercise-imports"]
    solutions = {grade_id(c): c.source for c in submission_nb.cells if grade_id(c) in SOLUTION_CELLS}
    return imports[:1] + [solutions[g] for g in SOLUTION_CELLS if g in solutions and g not in skip]


def stage(sandbox_dir: Path, sources: list[str]) -> tuple[Path, Path]:
    """Put the probe engine and the solution cells into the sandbox folder (after the kernel is gone)."""
    if not d.HIDDEN_AVAILABLE:
        raise RuntimeError("the diagnosis engine has no hidden probes (engine/hidden_probes.py is missing)")
    folder = Path(sandbox_dir) / "diagnosis"
    folder.mkdir(exist_ok=True)
    shutil.copytree(Path(d.__file__).parent, folder / STAGED_PACKAGE, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    cells = folder / "cells.json"
    cells.write_text(json.dumps(sources), encoding="utf-8")
    return folder, cells


def staged_paths(folder: Path) -> list[Path]:
    """Everything ``stage`` wrote (for handing it to the sandbox user)."""
    return [folder, *sorted(folder.rglob("*"))]


def boot_command(python: str, folder: Path, cells: Path, cell_timeout: float = 120.0) -> list[str]:
    return [python, "-c", BOOT, str(folder), str(cells), MARK, f"{float(cell_timeout):g}"]


def parse_report(stdout: str) -> list[dict]:
    lines = [line for line in stdout.splitlines() if line.startswith(MARK)]
    if not lines:
        raise ValueError("the diagnosis run printed no report")
    report = json.loads(lines[-1][len(MARK):])
    if not isinstance(report, list):
        raise ValueError("the diagnosis report is not a list")
    return report


NOTED = ("timed_out", "raised_exception", "missing_keys")
"""Catalogue codes whose message has a {note}: a time limit, an exception class, key names."""
_KNOWN_KEYS = set(catalogue.SIMULATE_KEYS + catalogue.SUMMARY_KEYS + catalogue.COMPARISON_KEYS
                  + catalogue.DECISION_KEYS)


def trusted_note(code: str, note: object) -> str:
    """The note of ``code`` rebuilt from what it may be (never free text from the sandbox): the time limit,
    an exception's class name, or the names of the expected keys that are missing."""
    text = note if isinstance(note, str) else ""
    if code == "timed_out":
        match = re.fullmatch(r"(\d{1,4}(?:\.\d{1,3})?) s", text)
        return f"{match.group(1)} s" if match else f"{d.DEFAULT_CALL_TIMEOUT_S:g} s"
    if code == "raised_exception":
        return text if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,59}", text) else "Exception"
    if code == "missing_keys":
        got = re.fullmatch(r"got ([A-Za-z_][A-Za-z0-9_]{0,59})", text)
        if got:
            return f"got {got.group(1)}"
        names = [name for name in re.findall(r"'([a-z_]{1,40})'", text) if name in _KNOWN_KEYS]
        return f"missing {sorted(set(names))}" if names else "missing keys"
    return ""


def findings_from_report(report: list) -> list[d.Finding]:
    """Trusted findings from an untrusted report: unknown names are dropped, messages come from the catalogue."""
    probes = {p.id: p for p in d.PROBES}
    findings, seen = [], set()
    for item in report:
        if not isinstance(item, dict):
            continue
        exercise, code = item.get("exercise"), item.get("code")
        if exercise not in d.EXERCISES or not isinstance(code, str) or code not in d.CATALOGUE \
                or (exercise, code) in seen:
            continue
        seen.add((exercise, code))
        listed = item.get("probes")
        ids = listed if isinstance(listed, list) else []
        note = trusted_note(code, item.get("note"))
        failures = [(probes[i], d.Failure(code, note=note)) for i in ids
                    if isinstance(i, str) and i in probes and probes[i].exercise == exercise]
        if code in ("other", "raised_exception") and not failures:
            continue  # their message needs a probe's hint
        findings.append(d.make_finding(exercise, code, failures))
    order = {name: i for i, name in enumerate(d.EXERCISES)}
    return sorted(findings, key=lambda f: order[f.exercise])
