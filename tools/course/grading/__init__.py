"""Grade a class: build the course once, then grade each submission on its own (autograde/grade.py is the CLI).

    course = prepare(out_dir)                                   # source from solutions/, release, gradebook
    result = grade_submission(course, student_id, path, out_dir, settings)   # one student, one process

This package exports what the command line and the tests drive; the steps live in their own modules:

    model.py            Settings, Course, Result, SubmissionProblem (plain data)
    course.py           the course built from solutions/, the settings from the nbgrader config
    roster.py           the submissions folder (a row for every student-looking entry, near misses graded) and
                        the output folder
    class_files.py      reading a file someone else laid out: regular files inside the class only, no link followed
    intake.py           checks before any student code runs (read, restore deleted cells, flag library use)
    environment.py      the worker's and the kernel's environment
    sandboxing.py       one submission's sandbox spec and folder
    submission.py       grade_submission: check, hand to a worker, record the outcome
    worker_pool.py      the forkserver the workers come from; one worker per submission, killed at the limit
    strays.py           processes a submission left behind, found by its work folder
    worker.py           inside the worker: nbgrader autograde, diagnosis, feedback (python -m ... JOB.json)
    autograde_step.py   nbgrader's Autograde and what its outcome means
    cell_limits.py      the time rule for hanging cells (nbgrader's Execute, with shorter timeouts after a hang)
    diagnosis_step.py   the graded diagnosis, within the submission's time
    feedback_page.py    the feedback page, rendered from a sanitised copy and checked
    feedback.py         the sanitiser: no hidden test reaches a student
    phases.py           where a worker's time goes
    warmup.py           imported by the worker server: hot caches before the first fork
    results.py          grades.csv, results.json, the run report, the note for an ungraded student
    shards.py           grade.py --shard K/N: the slice a student id belongs to, the record a slice leaves
    merge.py            grade.py merge: check the slices belong together, join them as one run would write
"""

from .course import load_settings, prepare
from .environment import kernel_problem
from .intake import library_use, read_submission, restore_cells
from .merge import MergeProblem, read_shards, write_merge
from .model import Course, Result, Settings, SubmissionProblem
from .results import run_report, write_note, write_results
from .roster import MARKER, Entry, find_submissions, prepare_out_dir
from .sandboxing import prepare_sandbox_template
from .shards import course_digest, shard_of, shard_record, take_slice
from .strays import kill_strays, processes_of
from .submission import grade_submission
from .worker_pool import start_worker_server

__all__ = ["MARKER", "Course", "Entry", "MergeProblem", "Result", "Settings", "SubmissionProblem", "course_digest",
           "find_submissions", "grade_submission", "kernel_problem", "kill_strays", "library_use", "load_settings",
           "prepare", "prepare_out_dir", "prepare_sandbox_template", "processes_of", "read_shards",
           "read_submission", "restore_cells", "run_report", "shard_of", "shard_record", "start_worker_server",
           "take_slice", "write_merge", "write_note", "write_results"]
