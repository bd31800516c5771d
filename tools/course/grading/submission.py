"""Grade one student: a function of (course template, submission path, output directory) only.

It checks the file in this process (cheap, no student code runs), then grades it in a worker process
(worker.py, forked by worker_pool.py) under a wall-clock limit and a memory limit, and kills the worker's whole
process tree (nbgrader and the kernel) when the limit is hit. Whatever a submission does, the other students'
results are not touched; a submission that cannot be graded gets an empty score and a reason, never a silent 0.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import asdict
from pathlib import Path

import nbformat

from tools.prefixbench.core.files import atomic_write_json, atomic_write_text

from .. import config, sandbox
from .intake import library_use, read_submission, restore_cells
from .model import Course, Result, Settings, SubmissionProblem
from .results import write_note
from .sandboxing import sandbox_spec
from .worker_pool import run_worker


def _checked_notebook(course: Course, submission: Path | None, settings: Settings, root: Path | None
                      ) -> tuple[nbformat.NotebookNode, list[str]]:
    """The submission with deleted cells restored, and the notes for the instructor. It is read here, in the
    trusted process, only when it is a regular file inside the class folder ``root``; the worker reads the copy
    written from it (work/<id>/submission.ipynb), never the class folder."""
    if submission is None:
        raise SubmissionProblem(f"missing {config.NOTEBOOK_FILE}")
    read_notes: list[str] = []
    nb = read_submission(Path(submission), settings, read_notes, root=root)
    nb, notes = restore_cells(nb, nbformat.read(course.release_notebook, as_version=4))
    notes = read_notes + notes
    flagged = library_use(nb)
    if flagged:
        notes.append("review by hand: code the student wrote names the reference library "
                     f"tools.prefixbench ({', '.join(flagged)}), which the hidden tests compare against")
    return nb, notes


def _write_job(course: Course, student_id: str, nb: nbformat.NotebookNode, work: Path, settings: Settings,
               spec: sandbox.Spec) -> None:
    checked = work / "submission.ipynb"
    atomic_write_text(checked, nbformat.writes(nb) + "\n")
    job = {"course_template": course.template_dir, "student_id": student_id, "submission": str(checked),
           "work_dir": str(work), "settings": asdict(settings),
           "sandbox_spec": str(spec.write(work / "sandbox.json"))}
    atomic_write_json(work / "job.json", job)


def _record(result: Result, outcome: dict, course: Course, out_dir: Path, notes: list[str]) -> None:
    """The worker's outcome into the student's row; the feedback page copied to feedback/<student>/."""
    notes += outcome.get("notes", [])
    result.status = outcome["status"]
    result.cuts = outcome.get("cuts", [])
    result.diagnosis = outcome.get("diagnosis")
    if outcome["status"] != "graded":
        notes.insert(0, outcome.get("reason", "not graded"))
    else:
        cells = outcome["cells"]
        result.cells = {cell["id"]: (cells.get(cell["id"]) or {}).get("score") for cell in course.cells}
        missing = [cid for cid, score in result.cells.items() if score is None]
        if missing:
            result.status = "not_graded"
            notes.insert(0, f"no score recorded for {', '.join(missing)}")
        else:
            result.score = float(sum(score for score in result.cells.values() if score is not None))
        if outcome.get("feedback_html"):
            dest = out_dir / "feedback" / result.student_id / f"{config.NOTEBOOK_NAME}.html"
            atomic_write_text(dest, Path(outcome["feedback_html"]).read_text(encoding="utf-8"))
            result.feedback = str(dest)
    result.reason = "; ".join(notes)


def grade_submission(course: Course, student_id: str, submission: Path | None, out_dir: Path,
                     settings: Settings = Settings(), *, index: int = 0, caps: dict | None = None,
                     note: str = "", submissions_dir: Path | None = None) -> Result:
    """Grade one student's notebook; never raises (what goes wrong, the submission's doing or ours, ends up in
    the row's status and reason).

    ``index`` numbers the submission within the run (it picks the sandbox user id: distinct per submission);
    ``caps`` is ``sandbox.capabilities()`` (probed here when not given); ``note`` goes first in the reason (what
    roster.py found instead of the expected layout, for a near miss); ``submissions_dir`` is hidden from the
    student's code (by default, the folder above the submission's own folder) and is the class folder the
    notebook must be a regular file inside (by default, the notebook's own folder)."""
    started = time.monotonic()
    # absolute: the worker runs in the repository's folder (worker_pool), so a path relative to ours would
    # name another file there
    out_dir = Path(out_dir).absolute()
    submission = None if submission is None else Path(submission).absolute()
    submissions_dir = None if submissions_dir is None else Path(submissions_dir).absolute()
    work = out_dir / "work" / student_id
    result = Result(student_id, "not_graded", max_score=course.max_score)
    try:
        nb, notes = _checked_notebook(course, submission, settings, submissions_dir)
        if work.exists():
            shutil.rmtree(work)
        work.mkdir(parents=True)
        spec = sandbox_spec(out_dir, work, index, submission, settings,
                            caps if caps is not None else sandbox.capabilities(), submissions_dir=submissions_dir)
        _write_job(course, student_id, nb, work, settings, spec)
        try:
            outcome = run_worker(work, settings)
        finally:
            sandbox.kill_user_processes(spec.uid)
        _record(result, outcome, course, out_dir, notes)
    except SubmissionProblem as exc:
        result.status, result.reason = "not_graded", str(exc)
    except Exception as exc:  # a bug or an environment problem on our side: report it in the row, keep going
        result.status, result.reason = "error", f"grader error: {type(exc).__name__}: {exc}"
    if note:
        result.reason = "; ".join(part for part in (note, result.reason) if part)
    result.seconds = round(time.monotonic() - started, 2)
    if result.feedback is None:
        try:
            write_note(out_dir, result)
        except OSError as exc:  # a full disk: the row still says what happened
            result.reason += f"; the feedback note could not be written ({exc.strerror or exc})"
    return result
