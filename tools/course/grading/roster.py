"""The class as handed in, and the output folder it is graded into: one folder per student, and an output
folder that is ours to clear (a marker file says so) or empty."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from .. import config
from .model import Result, SubmissionProblem

STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")
MARKER = ".prefixbench-grading"
"""File that marks an output directory as ours, so a later run may clear it."""


def find_submissions(submissions_dir: Path) -> tuple[list[tuple[str, Path | None]], list[Result], list[str]]:
    """(student id, notebook or None) per student folder, rows for unusable folders, and warnings."""
    found, bad, warnings = [], [], []
    for entry in sorted(Path(submissions_dir).iterdir(), key=lambda p: p.name):
        if entry.name.startswith("."):
            continue
        if not entry.is_dir():
            warnings.append(f"ignored {entry.name}: expected one folder per student holding {config.NOTEBOOK_FILE}")
            continue
        if not STUDENT_ID.match(entry.name):
            bad.append(Result(entry.name, "not_graded", reason=f"folder name {entry.name!r} is not a usable student id "
                                                             "(letters, digits, '.', '_', '-', '@'; up to 64)"))
            continue
        notebook = entry / config.NOTEBOOK_FILE
        found.append((entry.name, notebook if notebook.is_file() else None))
    return found, bad, warnings


def prepare_out_dir(out_dir: Path, submissions_dir: Path) -> None:
    """Create or reuse ``out_dir``; refuse a non-empty folder that is not a previous grading output."""
    out_dir, submissions_dir = Path(out_dir).resolve(), Path(submissions_dir).resolve()
    if out_dir == submissions_dir or submissions_dir in out_dir.parents:
        raise SubmissionProblem(f"--out {out_dir} must not be inside the submissions folder")
    if out_dir.exists():
        if not out_dir.is_dir():
            raise SubmissionProblem(f"--out {out_dir} exists and is not a folder")
        if any(out_dir.iterdir()) and not (out_dir / MARKER).is_file():
            raise SubmissionProblem(f"--out {out_dir} is not empty and was not written by grade.py; "
                                    "choose an empty or new folder")
        for name in ("feedback", "work", "course"):
            if (out_dir / name).exists():
                shutil.rmtree(out_dir / name)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / MARKER).write_text("written by autograde/grade.py; safe to delete\n")
