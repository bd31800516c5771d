"""Grade ONE prepared submission with nbgrader, in a process of its own (started by tools/course/grading.py).

    python -m tools.course.grade_worker JOB.json

The grader normally forks the worker from a server that has already imported this module and nbgrader (seconds
of imports saved per submission); the command line above does the same job in a fresh interpreter.

JOB.json names the course template (source, release, gradebook), the student id, the checked submission notebook,
the work directory and the settings. The worker copies the template into ``WORK/course`` (its own gradebook, so
workers never share a SQLite file), runs nbgrader's Autograde converter, reads the scores from the gradebook, writes
a sanitised copy of the autograded notebook (tools/course/feedback.py), runs GenerateFeedback, checks the HTML and
writes ``WORK/result.json``. Anything the submission does happens inside the kernel nbgrader starts, a child of this
process; the parent enforces the overall time and memory limits and kills the whole process tree if needed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

import nbformat
from traitlets.config import Config

from tools.prefixbench.fileio import atomic_write_json, atomic_write_text

from . import config
from . import feedback as fb
from . import graded_diagnosis as gd
from . import sandbox
from .diagnosis import feedback_text
from .nbgrader_course import course_config, run_converter

TIMEOUT_ENAMES = {"CellTimeoutError"}

PHASES: dict[str, float] = {}
"""Seconds spent in each step of this worker (written to result.json: where grading time goes)."""


@contextlib.contextmanager
def phase(name: str):
    started = time.monotonic()
    try:
        yield
    finally:
        PHASES[name] = round(PHASES.get(name, 0.0) + time.monotonic() - started, 3)


def _copy_template(template: Path, course: Path) -> None:
    if course.exists():
        shutil.rmtree(course)
    course.mkdir(parents=True)
    for name in ("nbgrader_config.py", "gradebook.db"):
        shutil.copy2(template / name, course / name)
    for name in ("source", "release"):
        shutil.copytree(template / name, course / name)


def _scores(course: Path, student_id: str) -> dict[str, dict]:
    from nbgrader.api import Gradebook

    cfg = course_config(course)
    course_id = cfg.CourseDirectory.get("course_id", "")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id) as gb:
        submission = gb.find_submission_notebook(config.NOTEBOOK_NAME, config.ASSIGNMENT_ID, student_id)
        return {grade.name: {"score": grade.score, "auto_score": grade.auto_score, "max_score": grade.max_score,
                             "needs_manual_grade": grade.needs_manual_grade} for grade in submission.grades}


FORKED_SEND = "attempted to send message from fork"
"""What jupyter_client logs (into the worker's log, through the kernel's stderr) when a forked copy of the kernel
tries to talk on its channels."""


def _forked_copies_talked(work: Path) -> bool:
    log = work / "worker.log"
    try:
        with log.open("rb") as handle:
            head = handle.read(4 << 20)
            handle.seek(max(0, log.stat().st_size - (4 << 20)))
            tail = handle.read()
    except OSError:
        return False
    return FORKED_SEND.encode() in head or FORKED_SEND.encode() in tail


def _failure_reason(result: dict, forked: bool = False) -> str:
    text = (result.get("log") or "") + "\n" + (result.get("error") or "")
    if forked or "Invalid Signature" in text:
        return ("processes forked by the notebook (a fork bomb?) ran the kernel's code and wrote into its "
                "message channels: no grade could be computed")
    if "DeadKernelError" in text or "Kernel died" in text:
        return ("the kernel died while running the notebook (os._exit, exit(), a crash or the memory limit): "
                "no grade could be computed")
    if "Timeout waiting for IOPub output" in text or "UnresponsiveKernelError" in text:
        return ("a cell kept running after its timeout and ignored the interrupt (an infinite loop that catches "
                "KeyboardInterrupt?): the rest of the notebook could not run")
    if "Notebook failed to validate" in text or "ValidationError" in text:
        return "the nbgrader metadata of the notebook is corrupted (nbgrader could not validate it)"
    errors = [line for line in text.splitlines() if line.startswith("[ERROR]")]
    detail = next((e for e in errors if "Please see" not in e and "There was an error" not in e), None)
    last_exc = re.findall(r"^\s*(\w+(?:Error|Exception)[^\n]*)$", text, re.M)
    return "nbgrader autograde failed: " + ((detail or "")[8:] or (last_exc[-1] if last_exc else "see the worker log"))


def _timed_out_cells(autograded: nbformat.NotebookNode) -> list[str]:
    """Grade ids (or positions) of the cells nbgrader interrupted after the per-cell timeout."""
    timed_out = []
    for index, cell in enumerate(autograded.cells):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error" and output.get("ename") in TIMEOUT_ENAMES:
                grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
                timed_out.append(grade_id or f"cell {index}")
    return timed_out


def _cell_notes(timed_out: list[str], timeout_s: float) -> list[str]:
    if timed_out:
        return [f"timed out after {timeout_s:g} s and interrupted: {', '.join(timed_out)}"]
    return []


def run(job: dict) -> dict:
    template = Path(job["course_template"])
    work = Path(job["work_dir"])
    student = job["student_id"]
    settings = job["settings"]
    course = work / "course"
    with phase("setup"):
        _copy_template(template, course)
    submitted = course / "submitted" / student / config.ASSIGNMENT_ID
    submitted.mkdir(parents=True)
    shutil.copyfile(job["submission"], submitted / config.NOTEBOOK_FILE)

    overrides = Config()
    overrides.Execute.timeout = int(settings["cell_timeout"])
    overrides.Execute.shutdown_kernel = "immediate"  # every output is in; what the kernel left running dies with it
    spec = None
    if job.get("sandbox_spec"):
        spec = sandbox.Spec.read(Path(job["sandbox_spec"]))
        os.environ[sandbox.SPEC_ENV] = job["sandbox_spec"]
        overrides.Execute.kernel_manager_class = "tools.course.sandbox_kernel.SandboxKernelManager"
    from nbgrader.converters import Autograde, GenerateFeedback

    with phase("autograde"):
        result = run_converter(Autograde, course, student_id=student, overrides=overrides, force=True,
                               create_student=True)
    autograded_path = course / "autograded" / student / config.ASSIGNMENT_ID / config.NOTEBOOK_FILE
    failed = not result["success"] or not autograded_path.is_file()
    # counted (for a failure's reason) before whatever the notebook left running is killed
    processes = sandbox.count_user_processes(spec.uid) if failed and spec is not None else 0
    if spec is not None:
        sandbox.kill_user_processes(spec.uid)
    atomic_write_text(work / "autograde.log", (result.get("log") or "") + (result.get("error") or ""))
    if failed:
        reason = _failure_reason(result, _forked_copies_talked(work))
        if spec is not None and spec.uid is not None and processes >= spec.nproc // 2:
            reason = (f"the notebook forked {processes} processes, up to the limit of {spec.nproc} (a fork bomb?), "
                      f"and then it could not run on; {reason}")
        return {"status": "not_graded", "reason": reason, "cells": {}, "notes": []}

    cells = _scores(course, student)
    autograded = nbformat.read(autograded_path, as_version=4)
    timed_out = _timed_out_cells(autograded)
    notes = _cell_notes(timed_out, settings["cell_timeout"])
    manual = sorted(name for name, cell in cells.items() if cell["needs_manual_grade"])
    if manual:  # cannot happen with this notebook (no manually graded cells); never report a partial total
        return {"status": "not_graded", "cells": cells, "notes": notes,
                "reason": f"cells need manual grading: {', '.join(manual)}"}

    # Feedback: keep the full autograded notebook for the instructor, render a sanitised copy for the student.
    shutil.copyfile(autograded_path, work / "autograded_full.ipynb")
    source_nb = nbformat.read(template / "source" / config.ASSIGNMENT_ID / config.NOTEBOOK_FILE, as_version=4)
    release_nb = nbformat.read(template / "release" / config.ASSIGNMENT_ID / config.NOTEBOOK_FILE, as_version=4)
    hidden_ids = {c.metadata["nbgrader"]["grade_id"] for c in source_nb.cells
                  if fb.HIDDEN_BEGIN in c.source and "nbgrader" in c.metadata}
    hints = set().union(*(fb.hint_strings(c.source) for c in source_nb.cells))
    secrets = fb.hidden_lines(source_nb)
    safe = fb.sanitize(autograded, release_nb, hidden_ids, hints, settings["max_feedback_chars"])
    with phase("diagnosis"):
        findings, diagnosis_note = diagnose_submission(job, spec, release_nb, skip=set(timed_out))
    if diagnosis_note:
        notes.append(diagnosis_note)
    if findings is not None:
        safe.cells.append(nbformat.v4.new_markdown_cell(
            DIAGNOSIS_HEADER + "\n\n```text\n" + feedback_text(findings) + "\n```", id="graded-diagnosis"))
    leaks = fb.notebook_leaks(safe, secrets)
    feedback_html = None
    if leaks:
        notes.append("feedback withheld: the sanitised notebook still shows hidden-test text (" + leaks[0] + ")")
    else:
        nbformat.write(safe, autograded_path)
        with phase("feedback"):
            fb_result = run_converter(GenerateFeedback, course, student_id=student, force=True)
        html_path = course / "feedback" / student / config.ASSIGNMENT_ID / f"{config.NOTEBOOK_NAME}.html"
        if not fb_result["success"] or not html_path.is_file():
            atomic_write_text(work / "feedback.log", (fb_result.get("log") or "") + (fb_result.get("error") or ""))
            notes.append("feedback could not be generated (see the worker's feedback.log)")
        else:
            page = html_path.read_text(encoding="utf-8")
            page_leaks = fb.html_leaks(page, secrets)
            if page_leaks:
                notes.append("feedback withheld: the rendered page shows hidden-test text (" + page_leaks[0] + ")")
            else:
                feedback_html = str(html_path)
        nbformat.write(autograded, autograded_path)  # the course copy keeps the real autograded notebook
    return {"status": "graded", "cells": cells, "notes": notes, "feedback_html": feedback_html,
            "diagnosis": None if findings is None else [f.code + ":" + f.exercise for f in findings]}


DIAGNOSIS_HEADER = ("## 诊断 | Diagnosis\n\n评分时用可见和隐藏的探针检查了四个函数；下面是最可能的错误和该看的地方"
                    "（隐藏探针的输入不显示）。 | Grading probed the four functions with visible and hidden cases; "
                    "below are the most likely mistakes and where to look (hidden inputs are not shown).")


FEEDBACK_RESERVE_S = 30.0
"""Time kept for generating the feedback after the diagnosis, out of the submission's limit."""
STARTED = time.monotonic()
"""When this worker started: the grader's wall-clock limit for the submission runs from (about) here.
Reset by ``main``: a worker forked from a long-lived server imported this module long before its job began."""


def diagnosis_time_limit(settings: dict) -> float:
    """Seconds the diagnosis may take: its own limit, and never so long that the submission's limit would stop
    the worker (a graded submission would then come back not graded)."""
    left = settings["submission_timeout"] - (time.monotonic() - STARTED) - FEEDBACK_RESERVE_S
    return min(float(settings.get("diagnosis_timeout", 240)), left)


def diagnose_submission(job: dict, spec, release_nb, skip: set[str] = frozenset()) -> tuple[list | None, str]:
    """Probe the student's functions in the sandbox; (findings, note for the instructor)."""
    work = Path(job["work_dir"])
    sources = gd.solution_sources(nbformat.read(job["submission"], as_version=4), release_nb, skip)
    if spec is None:
        return None, "diagnosis skipped: no sandbox to run it in"
    limit = diagnosis_time_limit(job["settings"])
    if limit < 5:
        return None, "diagnosis skipped: too little of the submission's time limit left"
    folder, cells = gd.stage(Path(spec.sandbox_dir), sources)
    if spec.uid is not None:
        for path in (folder, folder / "prefix_diagnosis.py", cells):
            os.chown(path, spec.uid, spec.uid)
    cmd = sandbox.wrap(gd.boot_command(sys.executable, folder, cells, job["settings"]["cell_timeout"]),
                       Path(job["sandbox_spec"]), spec)
    out_path = work / "diagnosis.out"
    try:
        with out_path.open("wb") as out:
            proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                  timeout=limit, env=_kernel_env())
        text = out_path.read_bytes()[-200_000:].decode("utf-8", "replace")
        return gd.findings_from_report(gd.parse_report(text)), ""
    except subprocess.TimeoutExpired:
        return None, "diagnosis timed out (no diagnosis in the feedback)"
    except (ValueError, OSError) as exc:
        return None, f"diagnosis failed ({str(exc)[:120]}; no diagnosis in the feedback)"
    finally:
        sandbox.kill_user_processes(spec.uid)
        shutil.rmtree(folder, ignore_errors=True)


def _kernel_env() -> dict:
    return {k: v for k, v in os.environ.items() if k != sandbox.SPEC_ENV}


def main(argv: list[str] | None = None) -> int:
    global STARTED
    STARTED = time.monotonic()
    PHASES.clear()
    argv = sys.argv[1:] if argv is None else argv
    job_path = Path(argv[0])
    job = json.loads(job_path.read_text(encoding="utf-8"))
    out = Path(job["work_dir"]) / "result.json"
    try:
        result = run(job)
    except Exception as exc:  # reported in the student's row; the traceback goes to the worker log
        traceback.print_exc()
        result = {"status": "error", "reason": f"grader error: {type(exc).__name__}: {exc}", "cells": {}, "notes": []}
    result["phases"] = dict(PHASES, total=round(time.monotonic() - STARTED, 3))
    result["worker"] = {"pid": os.getpid(), "parent_pid": os.getppid()}
    atomic_write_json(out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
