"""The graded diagnosis of one submission: run the probes in the sandbox within what is left of the
submission's time, and turn the trusted findings into the feedback's last section."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat

from .. import sandbox
from ..diagnosis import feedback_text
from ..diagnosis import graded as gd

DIAGNOSIS_HEADER = ("## 诊断 | Diagnosis\n\n评分时用可见和隐藏的探针检查了四个函数；下面是最可能的错误和该看的地方"
                    "（隐藏探针的输入不显示）。 | Grading probed the four functions with visible and hidden cases; "
                    "below are the most likely mistakes and where to look (hidden inputs are not shown).")
FEEDBACK_RESERVE_S = 30.0
"""Time kept for generating the feedback after the diagnosis, out of the submission's limit."""
AFTER_HANG_S = 12.0
"""The diagnosis's limit once a cell of the submission has timed out (every call into one function stops after
5 s in all, so a hung function costs the diagnosis 5 s, not the submission's remaining time)."""


def diagnosis_time_limit(settings: dict, started: float, hung: bool = False) -> float:
    """Seconds the diagnosis may take: its own limit (``AFTER_HANG_S`` once a cell has timed out), and never so
    long that the submission's limit (counted from ``started``, when the worker began) would stop the worker (a
    graded submission would then come back not graded)."""
    left = settings["submission_timeout"] - (time.monotonic() - started) - FEEDBACK_RESERVE_S
    own = float(settings.get("diagnosis_timeout", 240))
    return min(min(own, AFTER_HANG_S) if hung else own, left)


def _kernel_env() -> dict:
    return {k: v for k, v in os.environ.items() if k != sandbox.SPEC_ENV}


def _run_probes(job: dict, spec: sandbox.Spec, folder: Path, cells: Path, limit: float) -> tuple[list | None, str]:
    cmd = sandbox.wrap(gd.boot_command(sys.executable, folder, cells, job["settings"]["cell_timeout"]),
                       Path(job["sandbox_spec"]), spec)
    out_path = Path(job["work_dir"]) / "diagnosis.out"
    try:
        with out_path.open("wb") as out:
            subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, timeout=limit,
                           env=_kernel_env())
        text = out_path.read_bytes()[-200_000:].decode("utf-8", "replace")
        return gd.findings_from_report(gd.parse_report(text)), ""
    except subprocess.TimeoutExpired:
        return None, "diagnosis timed out (no diagnosis in the feedback)"
    except (ValueError, OSError) as exc:
        return None, f"diagnosis failed ({str(exc)[:120]}; no diagnosis in the feedback)"


def diagnose_submission(job: dict, spec: sandbox.Spec | None, release_nb: nbformat.NotebookNode, started: float,
                        skip: frozenset[str] | set[str] = frozenset(), hung: bool = False) -> tuple[list | None, str]:
    """Probe the student's functions in the sandbox; (findings, note for the instructor). ``skip``: solution
    cells cut short or not run while grading; ``hung``: a cell timed out (the diagnosis gets less time)."""
    sources = gd.solution_sources(nbformat.read(job["submission"], as_version=4), release_nb, skip)
    if spec is None:
        return None, "diagnosis skipped: no sandbox to run it in"
    limit = diagnosis_time_limit(job["settings"], started, hung)
    if limit < 5:
        return None, "diagnosis skipped: too little of the submission's time limit left"
    folder, cells = gd.stage(Path(spec.sandbox_dir), sources)
    if spec.uid is not None:
        for path in gd.staged_paths(folder):
            os.chown(path, spec.uid, spec.uid)
    try:
        return _run_probes(job, spec, folder, cells, limit)
    finally:
        sandbox.kill_user_processes(spec.uid)
        shutil.rmtree(folder, ignore_errors=True)


def diagnosis_cell(findings: list) -> nbformat.NotebookNode:
    """The feedback's last section: the findings as text (rebuilt from the catalogue, safe to hand back)."""
    return nbformat.v4.new_markdown_cell(
        DIAGNOSIS_HEADER + "\n\n```text\n" + feedback_text(findings) + "\n```", id="graded-diagnosis")
