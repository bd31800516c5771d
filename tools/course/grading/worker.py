"""Grade ONE prepared submission with nbgrader, in a process of its own (started by worker_pool.py).

    python -m tools.course.grading.worker JOB.json

The grader normally forks the worker from a server that has already imported this module and nbgrader (seconds
of imports saved per submission); the command line above does the same job in a fresh interpreter.

JOB.json names the course template (source, release, gradebook), the student id, the checked submission notebook,
the work directory and the settings. The worker copies the template into ``WORK/course`` (its own gradebook, so
workers never share a SQLite file), runs nbgrader's Autograde converter, reads the scores from the gradebook, writes
a sanitised copy of the autograded notebook (feedback.py), runs GenerateFeedback, checks the HTML and writes
``WORK/result.json``. Anything the submission does happens inside the kernel nbgrader starts, a child of this
process; the parent enforces the overall time and memory limits and kills the whole process tree if needed.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
import traceback
from pathlib import Path

import nbformat

from tools.prefixbench.core.files import atomic_write_json, atomic_write_text

from .. import config, sandbox
from . import autograde_step as ag
from .cell_limits import CUTS, cut_notes, cuts_cell
from .diagnosis_step import diagnose_submission, diagnosis_cell
from .editions import edition_of, release_editions, submitted_notebook, with_edition_text
from .feedback_page import feedback_page, sanitised
from .phases import PHASES, phase
from .results import finite

STARTED = time.monotonic()
"""When this worker started: the grader's wall-clock limit for the submission runs from (about) here.
Reset by ``main``: a worker forked from a long-lived server imported this module long before its job began."""


def _setup_course(template: Path, course: Path, submission: str, student: str) -> None:
    """This worker's own copy of the course (its own gradebook), with the submission handed in."""
    if course.exists():
        shutil.rmtree(course)
    course.mkdir(parents=True)
    for name in ("nbgrader_config.py", "gradebook.db"):
        shutil.copy2(template / name, course / name)
    for name in ("source", "release"):
        shutil.copytree(template / name, course / name)
    submitted = course / "submitted" / student / config.ASSIGNMENT_ID
    submitted.mkdir(parents=True)
    shutil.copyfile(submission, submitted / config.NOTEBOOK_FILE)


def _sandbox_of(job: dict) -> sandbox.Spec | None:
    """The submission's sandbox spec, handed to the kernel manager through the environment."""
    if not job.get("sandbox_spec"):
        return None
    os.environ[sandbox.SPEC_ENV] = job["sandbox_spec"]
    return sandbox.Spec.read(Path(job["sandbox_spec"]))


def _template_notebook(template: Path, folder: str) -> nbformat.NotebookNode:
    """The course template's ``source`` (solutions, hidden tests) or ``release`` notebook."""
    return nbformat.read(template / folder / config.ASSIGNMENT_ID / config.NOTEBOOK_FILE, as_version=4)


def _graded(job: dict, course: Path, spec: sandbox.Spec | None) -> dict:
    """Scores, diagnosis and the feedback page of a notebook nbgrader ran to the end."""
    work, student, settings = Path(job["work_dir"]), job["student_id"], job["settings"]
    cells = ag.scores(course, student)
    path = ag.autograded_path(course, student)
    autograded = nbformat.read(path, as_version=4)
    notes = cut_notes(CUTS)
    manual = sorted(name for name, cell in cells.items() if cell["needs_manual_grade"])
    if manual:  # cannot happen with this notebook (no manually graded cells); never report a partial total
        return {"status": "not_graded", "cells": cells, "notes": notes, "cuts": list(CUTS),
                "reason": f"cells need manual grading: {', '.join(manual)}"}
    shutil.copyfile(path, work / "autograded_full.ipynb")  # the instructor's copy, hidden tests and all
    template = Path(job["course_template"])
    source_nb, release_nb = _template_notebook(template, "source"), _template_notebook(template, "release")
    safe, secrets = sanitised(autograded, source_nb, release_nb, settings["max_feedback_chars"])
    safe = _in_its_edition(safe, course, student)
    with phase("diagnosis"):
        findings, diagnosis_note = diagnose_submission(job, spec, release_nb, STARTED, skip={c["cell"] for c in CUTS},
                                                       hung=bool(CUTS))
    if diagnosis_note:
        notes.append(diagnosis_note)
    if CUTS:
        safe.cells.append(cuts_cell(cut_notes(CUTS)))
    if findings is not None:
        safe.cells.append(diagnosis_cell(findings))
    html, page_notes = feedback_page(course, student, work, autograded, path, safe=safe, secrets=secrets)
    return {"status": "graded", "cells": cells, "cuts": list(CUTS), "notes": notes + page_notes,
            "feedback_html": html,
            "diagnosis": None if findings is None else [f.code + ":" + f.exercise for f in findings]}


def _in_its_edition(safe: nbformat.NotebookNode, course: Path, student: str) -> nbformat.NotebookNode:
    """The feedback notebook with the Markdown of the edition the student worked in (English or Chinese)."""
    submitted, releases = submitted_notebook(course, student), release_editions()
    if submitted is None or not releases:
        return safe
    edition = edition_of(submitted, releases)
    return safe if edition == config.DEFAULT_LANGUAGE else with_edition_text(safe, releases[edition])


def run(job: dict) -> dict:
    work, student = Path(job["work_dir"]), job["student_id"]
    course = work / "course"
    with phase("setup"):
        _setup_course(Path(job["course_template"]), course, job["submission"], student)
    spec = _sandbox_of(job)
    with phase("autograde"):
        result = ag.autograde(course, student, job["settings"], sandboxed=spec is not None)
    failed = not result["success"] or not ag.autograded_path(course, student).is_file()
    # counted (for a failure's reason) before whatever the notebook left running is killed
    processes = sandbox.count_user_processes(spec.uid) if failed and spec is not None else 0
    if spec is not None:
        sandbox.kill_user_processes(spec.uid)
    atomic_write_text(work / "autograde.log", (result.get("log") or "") + (result.get("error") or ""))
    if failed:
        reason = ag.fork_bomb_reason(ag.failure_reason(result, ag.forked_copies_talked(work)), processes, spec)
        return {"status": "not_graded", "reason": reason, "cells": {}, "notes": cut_notes(CUTS), "cuts": list(CUTS)}
    return _graded(job, course, spec)


def main(argv: list[str] | None = None) -> int:
    global STARTED
    STARTED = time.monotonic()
    PHASES.clear()
    CUTS.clear()
    argv = sys.argv[1:] if argv is None else argv
    job = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    out = Path(job["work_dir"]) / "result.json"
    try:
        result = run(job)
    except Exception as exc:  # reported in the student's row; the traceback goes to the worker log
        traceback.print_exc()
        result = {"status": "error", "reason": f"grader error: {type(exc).__name__}: {exc}", "cells": {}, "notes": []}
    result["phases"] = dict(PHASES, total=round(time.monotonic() - STARTED, 3))
    result["worker"] = {"pid": os.getpid(), "parent_pid": os.getppid()}
    atomic_write_json(out, finite(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
