"""The class as handed in, and the output folder it is graded into: one folder per student, and an output
folder that is ours to clear (a marker file says so) or empty.

Every entry of the submissions folder that looks like a student's gets a row, graded or with a reason that
names what was found: a student folder (a hidden one too), a notebook or a zip file at the top level. Only
other top-level files (a README, a class list) are warned about instead, and the folders that tools leave
behind (``.ipynb_checkpoints``, ``__MACOSX``, ``.git``) are skipped.

A near miss is graded in place of the expected notebook, and its row says so: the one notebook of a student
folder whose name is the expected one up to case, spaces and punctuation, a copy suffix (``" (1)"``, ``"-copy"``)
or a ``"Copy of "`` prefix, or the expected name inside a sub-folder; and a notebook at the top level named after
a student (``frank.ipynb``), graded as that student.

A student id is the whole name (``fullmatch``), and ids that differ only in case are one student: two entries for
one id (``frank.ipynb`` and ``frank.IPYNB``, a folder ``frank`` and ``frank.ipynb``, ``Frank`` and ``frank``) are
one row saying so, neither graded (their feedback folders would collide on a case-insensitive disk, and which is
the submission is for the instructor to say). A top-level link, FIFO or device is a row too, never followed; the
notebook itself is read later, by intake.py, only when it is a regular file inside the class (class_files.py).

The output folder may be cleared only when it is apart from the submissions and the course repository (neither
holding nor inside the submissions; never the repository or around it) and empty or marked by an earlier run for
this very path (build/owned.py).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from pathlib import Path
from typing import NamedTuple

from tools.prefixbench.core.errors import InputError
from tools.prefixbench.core.files import check_output_folder

from .. import config
from ..build.owned import clash, ownership_problem, real, write_marker
from .class_files import NOT_REGULAR, kind
from .model import Result, SubmissionProblem

STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}")
"""A usable student id, the whole string (``fullmatch``: "eve\\n" is not "eve")."""
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
    notebooks: list[Path] = []
    others: list[str] = []
    scanned = 0
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
    if os.path.lexists(expected) and not stat.S_ISDIR(os.lstat(expected).st_mode):
        return expected, ""  # a link or a FIFO too: reading it is refused, and its row says why
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


def _folder_row(entry: Path) -> Entry | Result:
    """A student folder: the student to grade, or the row saying why not."""
    notebook, note = _student_folder(entry)
    if not STUDENT_ID.fullmatch(entry.name):
        hidden = " (a hidden folder)" if entry.name.startswith(".") else ""
        inside = f'; inside: "{notebook.relative_to(entry)}"' if notebook else f"; {note}"
        return Result(entry.name, "not_graded",
                      reason=f"folder name {entry.name!r}{hidden} is not a usable student id (letters, digits, '.', "
                             f"'_', '-', '@'; up to 64; not starting with '.'): not graded (rename the folder){inside}")
    if notebook is None:
        return Result(entry.name, "not_graded", reason=note)
    return Entry(entry.name, notebook, note)


def _top_entry(entry: Path, mode: int) -> Entry | Result | None:
    """What one top-level entry (``mode``: its lstat) is: a student, a row, or None (another file: a warning).
    Links, FIFOs and devices are never followed or read: their row says what they are."""
    if stat.S_ISDIR(mode):
        return _folder_row(entry)
    if stat.S_ISREG(mode):
        return _loose_file(entry)
    return Result(entry.name, "not_graded", reason=f'found "{entry.name}" at the top of the submissions folder: '
                                                   f"{NOT_REGULAR} (it is {kind(mode)}): not graded")


def _ambiguous(group: list[tuple[str, Entry | Result]]) -> Result:
    """One row for the entries that name one student in several spellings: which is the submission is for the
    instructor to say."""
    student = min(row.student_id for _, row in group)
    names = [shown for shown, _ in group]
    return Result(student, "not_graded",
                  reason=f"{len(names)} entries name student {student!r} (ids that differ only in case are one "
                         f"student, a folder and a notebook at the top too): {_quoted(names)}: not graded (keep "
                         f"one: a folder named after the student holding {config.NOTEBOOK_FILE})")


def _one_per_id(claims: list[tuple[str, Entry | Result]]) -> tuple[list[Entry], list[Result]]:
    """Students and rows, one per id up to case: every spelling of an id in one ambiguous row."""
    groups: dict[str, list[tuple[str, Entry | Result]]] = {}
    for shown, row in claims:
        groups.setdefault(row.student_id.casefold(), []).append((shown, row))
    found: list = []
    bad: list = []
    for group in groups.values():
        row = group[0][1] if len(group) == 1 else _ambiguous(group)
        (found if isinstance(row, Entry) else bad).append(row)
    return found, bad


def find_submissions(submissions_dir: Path) -> tuple[list[Entry], list[Result], list[str]]:
    """The students to grade, rows for the entries that cannot be graded, and warnings about the other files."""
    claims, warnings = [], []
    for entry in sorted(Path(submissions_dir).iterdir(), key=lambda p: p.name):
        if entry.name in TOOL_FOLDERS:
            continue
        mode = os.lstat(entry).st_mode
        row = _top_entry(entry, mode)
        if row is not None:
            claims.append((entry.name + ("/" if stat.S_ISDIR(mode) else ""), row))
        elif not entry.name.startswith("."):
            warnings.append(f"ignored {entry.name}: expected one folder per student holding {config.NOTEBOOK_FILE}")
    found, bad = _one_per_id(claims)
    return found, bad, warnings


def _loose_file(entry: Path) -> Entry | Result | None:
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
    elif not STUDENT_ID.fullmatch(student):
        why = f"{student!r} is not a usable student id (move it into a folder named after the student)"
    else:
        return Entry(student, entry, f"{at_top}; {expected}: graded it as student {student!r} (move it next time)")
    return Result(name, "not_graded", reason=f"{at_top}: not graded, {why}")


CLEARED = ("feedback", "work", "course", "shards.json")
"""What a new run removes from an output folder it wrote before (shards.json: a merge wrote it, it would describe
other results)."""
WRITTEN_BY = "autograde/grade.py"


def out_dir_problem(out_dir: Path, protected: dict[str, Path]) -> str | None:
    """Why ``out_dir`` may not be cleared and written (None: it may): at, inside or around a protected folder
    (the course repository may hold it, not be held by it), or not empty and not marked as written by grade.py
    for this very folder."""
    touched = clash(out_dir, {**protected, "the course repository": config.REPO_ROOT},
                    may_be_inside=frozenset({"the course repository"}))
    if touched:
        return f"--out {out_dir} {touched}: it must be a folder of its own"
    if out_dir.exists() and not out_dir.is_dir():
        return f"--out {out_dir} exists and is not a folder"
    problem = ownership_problem(out_dir, MARKER)
    if problem:
        return (f"--out {out_dir} is not empty and was not written by grade.py for this folder (it {problem}); "
                "choose an empty or new folder")
    return None


def remove_entry(path: Path) -> None:
    """Remove a file or a folder of ours; a link is removed itself, never what it points to."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()


def clear_out_dir(out_dir: Path) -> None:
    """Mark ``out_dir`` as ours and remove what an earlier run left."""
    out_dir.mkdir(parents=True, exist_ok=True)
    write_marker(out_dir, MARKER, WRITTEN_BY)
    for name in CLEARED:
        remove_entry(out_dir / name)


def prepare_out_dir(out_dir: Path, submissions_dir: Path) -> None:
    """Create or reuse ``out_dir``; refuse, before anything is graded or removed, one that is at, inside or around
    the submissions folder or holds the course repository, a non-empty folder that is not a previous grading
    output for this path, and one that cannot be written (under a file, read-only, no space left)."""
    out_dir = real(out_dir)
    problem = out_dir_problem(out_dir, {"the submissions folder": Path(submissions_dir)})
    if problem:
        raise SubmissionProblem(problem)
    try:
        check_output_folder("--out", out_dir)
    except InputError as exc:
        raise SubmissionProblem(str(exc)) from None
    try:
        clear_out_dir(out_dir)
    except OSError as exc:
        raise SubmissionProblem(f"--out: {out_dir} cannot be written ({exc.strerror or exc})") from None
