"""The class as handed in, and the output folder it is graded into: one folder per student, and an output
folder that is ours to clear (a marker file says so) or empty.

Every entry of the submissions folder that looks like a student's gets a row, graded or with a reason that
names what was found: a student folder (a hidden one too), a notebook or a zip file at the top level. Only
other top-level files (a README, a class list) are warned about instead, and the folders that tools leave
behind (``.ipynb_checkpoints``, ``__MACOSX``, ``.git``) are skipped.

A near miss is graded in place of the expected notebook, and its row says so: the one notebook of a student
folder whose name is the expected one up to case, spaces and punctuation, a copy suffix (``" (1)"``, ``"-copy"``)
or a ``"Copy of "`` prefix, or the expected name inside a sub-folder; and a notebook at the top level named after
a student (``frank.ipynb``), graded as that student when no folder of that name exists.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import NamedTuple

from tools.prefixbench.core.errors import InputError
from tools.prefixbench.core.files import atomic_write_text, check_output_folder

from .. import config
from .model import Result, SubmissionProblem

STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")
MARKER = ".prefixbench-grading"
"""File that marks an output directory as ours, so a later run may clear it."""
TOOL_FOLDERS = {".ipynb_checkpoints", "__MACOSX", ".git", ".svn", ".Trash", ".Trashes", "__pycache__"}
"""Folders that editors, archivers and version control leave behind: never a student."""
MAX_LISTED = 5
"""Names quoted in a reason before the rest is counted."""
MAX_DEPTH, MAX_SCANNED = 3, 2000
"""How deep and how many files into a student folder the search for a misplaced notebook looks."""


class Entry(NamedTuple):
    """One student to grade: the notebook to grade (None: none found) and what the row must say about it."""
    student_id: str
    notebook: Path | None
    note: str = ""


def _key(name: str) -> str:
    """A notebook name reduced to what a near miss keeps: lower case, words joined by "_", no copy marks."""
    stem = name[:-len(".ipynb")] if name.lower().endswith(".ipynb") else name
    key = re.sub(r"[^a-z0-9]+", "_", stem.lower()).strip("_")
    key = re.sub(r"^copy_of_", "", key)
    return re.sub(r"(_(copy|final|v?\d+))+$", "", key)


def _quoted(names: list[str]) -> str:
    shown = ", ".join(f'"{name}"' for name in names[:MAX_LISTED])
    return shown + (f" and {len(names) - MAX_LISTED} more" if len(names) > MAX_LISTED else "")


def _notebooks_in(folder: Path) -> tuple[list[Path], list[str]]:
    """The notebooks in a student folder and its sub-folders (tool folders left out, links not followed, at most
    ``MAX_DEPTH`` levels and ``MAX_SCANNED`` files looked at), and the other files' names."""
    notebooks, others, scanned = [], [], 0
    for root, dirs, files in os.walk(folder):
        depth = len(Path(root).relative_to(folder).parts)
        dirs[:] = sorted(d for d in dirs if d not in TOOL_FOLDERS and depth < MAX_DEPTH)
        for name in sorted(files):
            scanned += 1
            if scanned > MAX_SCANNED:
                return notebooks, others
            path = Path(root) / name
            if name.lower().endswith(".ipynb"):
                notebooks.append(path)
            else:
                others.append(str(path.relative_to(folder)))
    return notebooks, others


def _student_folder(folder: Path) -> tuple[Path | None, str]:
    """(the notebook to grade, what the row says about it) for one student folder."""
    expected = folder / config.NOTEBOOK_FILE
    if expected.is_file():
        return expected, ""
    notebooks, others = _notebooks_in(folder)
    wanted = _key(config.NOTEBOOK_FILE)
    near = [p for p in notebooks if _key(p.name) == wanted]
    names = [str(p.relative_to(folder)) for p in notebooks]
    if len(near) == 1:
        found = str(near[0].relative_to(folder))
        return near[0], (f'found "{found}"; expected "{config.NOTEBOOK_FILE}": graded it in its place '
                         "(rename it next time)")
    missing = f"missing {config.NOTEBOOK_FILE}"
    if near:
        return None, (f"{missing}; found {len(near)} copies, {_quoted(names)}: not graded (keep one, named "
                      f"{config.NOTEBOOK_FILE})")
    if notebooks:
        return None, (f"{missing}; found {_quoted(names)}: not graded (if it is this assignment, rename it "
                      f"{config.NOTEBOOK_FILE})")
    if others:
        return None, f"{missing}; found only {_quoted(others)}"
    return None, f"{missing}: the folder is empty"


def find_submissions(submissions_dir: Path) -> tuple[list[Entry], list[Result], list[str]]:
    """The students to grade, rows for the entries that cannot be graded, and warnings about the other files."""
    found, bad, warnings = [], [], []
    entries = sorted(Path(submissions_dir).iterdir(), key=lambda p: p.name)
    folders = {entry.name for entry in entries if entry.is_dir()}
    for entry in entries:
        if entry.name in TOOL_FOLDERS:
            continue
        if entry.is_dir():
            notebook, note = _student_folder(entry)
            if not STUDENT_ID.match(entry.name):
                hidden = " (a hidden folder)" if entry.name.startswith(".") else ""
                inside = f'; inside: "{notebook.relative_to(entry)}"' if notebook else f"; {note}"
                bad.append(Result(entry.name, "not_graded",
                                  reason=f"folder name {entry.name!r}{hidden} is not a usable student id (letters, "
                                         f"digits, '.', '_', '-', '@'; up to 64; not starting with '.'): not graded"
                                         f" (rename the folder){inside}"))
            elif notebook is None:
                bad.append(Result(entry.name, "not_graded", reason=note))
            else:
                found.append(Entry(entry.name, notebook, note))
            continue
        loose = _loose_file(entry, folders)
        if isinstance(loose, Entry):
            found.append(loose)
        elif isinstance(loose, Result):
            bad.append(loose)
        elif not entry.name.startswith("."):
            warnings.append(f"ignored {entry.name}: expected one folder per student holding {config.NOTEBOOK_FILE}")
    return found, bad, warnings


def _loose_file(entry: Path, folders: set[str]) -> Entry | Result | None:
    """A notebook or zip file at the top of the submissions folder: a student's, put in the wrong place."""
    name, lower = entry.name, entry.name.lower()
    at_top = f'found "{name}" at the top of the submissions folder'
    if lower.endswith(".zip"):
        return Result(name, "not_graded", reason=f"{at_top}: not graded (unzip it into a folder named after the "
                                                 f"student, holding {config.NOTEBOOK_FILE})")
    if not lower.endswith(".ipynb"):
        return None
    student = name[:-len(".ipynb")]
    expected = f'expected "{student}/{config.NOTEBOOK_FILE}"'
    if _key(name) == _key(config.NOTEBOOK_FILE):
        why = "it names no student (put it in a folder named after the student)"
    elif not STUDENT_ID.match(student):
        why = f"{student!r} is not a usable student id (move it into a folder named after the student)"
    elif student in folders:
        why = f'a folder "{student}" exists too (move the notebook into it if it is the submission)'
    else:
        return Entry(student, entry, f"{at_top}; {expected}: graded it as student {student!r} (move it next time)")
    return Result(name, "not_graded", reason=f"{at_top}: not graded, {why}")


def prepare_out_dir(out_dir: Path, submissions_dir: Path) -> None:
    """Create or reuse ``out_dir``; refuse a non-empty folder that is not a previous grading output, and one that
    cannot be written (under a file, read-only, no space left) before anything is graded."""
    out_dir, submissions_dir = Path(out_dir).resolve(), Path(submissions_dir).resolve()
    if out_dir == submissions_dir or submissions_dir in out_dir.parents:
        raise SubmissionProblem(f"--out {out_dir} must not be inside the submissions folder")
    if out_dir.exists():
        if not out_dir.is_dir():
            raise SubmissionProblem(f"--out {out_dir} exists and is not a folder")
        if any(out_dir.iterdir()) and not (out_dir / MARKER).is_file():
            raise SubmissionProblem(f"--out {out_dir} is not empty and was not written by grade.py; "
                                    "choose an empty or new folder")
    try:
        check_output_folder("--out", out_dir)
    except InputError as exc:
        raise SubmissionProblem(str(exc)) from None
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out_dir / MARKER, "written by autograde/grade.py; safe to delete\n")
        for name in ("feedback", "work", "course"):
            if (out_dir / name).exists():
                shutil.rmtree(out_dir / name)
        (out_dir / "shards.json").unlink(missing_ok=True)  # a merge wrote it; it would describe other results
    except OSError as exc:
        raise SubmissionProblem(f"--out: {out_dir} cannot be written ({exc.strerror or exc})") from None
