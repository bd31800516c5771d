"""Build a class of submissions from the committed student release, at test time (nothing is committed).

Each student is the release notebook with some cells changed, the way a real submission differs from it: the four
solution cells filled in (correctly or with a known mistake), or something hostile (loops, exits, deleted or
edited tests, stripped metadata, broken files, floods of output). ``EXPECTED`` says what grading must report.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from tools.course import config

from .variants import EXPECTED_FAILURES, REFERENCE, VARIANTS

MAX_SCORE = 26.0


@dataclass(frozen=True)
class Expected:
    status: str
    failing: frozenset[str] | None = None  # graded cells that must score 0 (all others full); None: no scores
    reason: tuple[str, ...] = field(default_factory=tuple)  # substrings the reason must contain


def _grade_id(cell) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def with_solutions(release: nbformat.NotebookNode, overrides: dict[str, str]) -> nbformat.NotebookNode:
    nb = copy.deepcopy(release)
    for cell in nb.cells:
        gid = _grade_id(cell)
        if gid in REFERENCE:
            cell.source = overrides.get(gid, REFERENCE[gid])
    return nb


def _append_to(nb, grade_id: str, code: str, prepend: bool = False):
    for cell in nb.cells:
        if _grade_id(cell) == grade_id:
            cell.source = (code + "\n" + cell.source) if prepend else (cell.source + "\n" + code)
            return nb
    raise AssertionError(f"no cell {grade_id}")


def _insert_after(nb, grade_id: str, code: str):
    index = next(i for i, c in enumerate(nb.cells) if _grade_id(c) == grade_id)
    nb.cells.insert(index + 1, nbformat.v4.new_code_cell(code))
    return nb


def students(release: nbformat.NotebookNode) -> dict[str, object]:
    """student id -> notebook (NotebookNode), raw text (str) or None (no notebook in the folder)."""
    ref = lambda: with_solutions(release, {})  # noqa: E731
    out: dict[str, object] = {"stub": copy.deepcopy(release)}
    for name, overrides in VARIANTS.items():
        out[name] = with_solutions(release, overrides)

    out["infinite_loop"] = _append_to(ref(), "ex1-summarize", "while True:\n    pass", prepend=True)
    out["unkillable_loop"] = _append_to(ref(), "ex1-summarize", (
        "import time\nwhile True:\n    try:\n        time.sleep(0.05)\n    except KeyboardInterrupt:\n        pass"),
        prepend=True)
    out["sys_exit"] = _append_to(ref(), "ex0-simulate", "import sys\nsys.exit('bye')")
    out["os_exit"] = _append_to(ref(), "ex1-summarize", "import os\nos._exit(0)")
    deleted = ref()
    deleted.cells = [c for c in deleted.cells if not c.get("metadata", {}).get("nbgrader", {}).get("grade")]
    out["deleted_tests"] = deleted
    edited = copy.deepcopy(release)
    for cell in edited.cells:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade"):
            cell.source = "print('all tests pass, trust me')"
    out["edited_tests"] = edited
    stripped = ref()
    for cell in stripped.cells:
        cell.metadata.pop("nbgrader", None)
    out["stripped_metadata"] = stripped
    out["not_json"] = '{"cells": [ this is not JSON'
    out["missing_file"] = None
    out["huge_output"] = _insert_after(ref(), "setup", "print('x' * 20_000_000)\nfor i in range(300_000):\n    print(i)")
    return out


EXPECTED: dict[str, Expected] = {
    "stub": Expected("graded", frozenset({"*"})),
    **{name: Expected("graded", frozenset(fails)) for name, fails in EXPECTED_FAILURES.items()},
    "infinite_loop": Expected("graded", frozenset({"test-ex1-visible", "test-seed-template", "hidden-ex1-summarize"}),
                              ("timed out", "ex1-summarize")),
    "unkillable_loop": Expected("not_graded", None, ("ignored the interrupt",)),
    "sys_exit": Expected("graded", frozenset()),
    "os_exit": Expected("not_graded", None, ("kernel died",)),
    "deleted_tests": Expected("graded", frozenset(), ("deleted test cells restored",)),
    "edited_tests": Expected("graded", frozenset({"*"}), ("edited test cells restored",)),
    "stripped_metadata": Expected("not_graded", None, ("nbgrader metadata missing",)),
    "not_json": Expected("not_graded", None, ("not a notebook",)),
    "missing_file": Expected("not_graded", None, ("missing 69_prefix_cache_benchmark.ipynb",)),
    "huge_output": Expected("graded", frozenset()),
}


def build_class(dest: Path, release_path: Path = config.RELEASE_NOTEBOOK, only: list[str] | None = None) -> dict:
    release = nbformat.read(release_path, as_version=4)
    made = {}
    for student, content in students(release).items():
        if only is not None and student not in only:
            continue
        folder = Path(dest) / student
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / config.NOTEBOOK_FILE
        if content is None:
            (folder / "notes.txt").write_text("I forgot to upload my notebook\n")
        elif isinstance(content, str):
            path.write_text(content)
        else:
            nbformat.write(content, path)
        made[student] = EXPECTED[student]
    return made
