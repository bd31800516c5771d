"""Checks before any student code runs: read the file, repair what nbgrader would score 0 silently, flag
library use. Cheap and in the grader's own process; a problem here is a ``SubmissionProblem`` with a reason."""

from __future__ import annotations

import ast
import copy
import json
import os
import re
from pathlib import Path
from typing import Any

import nbformat

from ..config import grade_id
from .class_files import NOT_REGULAR, Missing, NotRegular, open_inside
from .model import Settings, SubmissionProblem

LIBRARY_NAMES = re.compile(r"\b(prefixbench|library_simulate|lib_decision|_oracle)\b")


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__


def _read_bytes(path: Path, root: Path, settings: Settings) -> bytes:
    """The file's bytes, read only when it is a regular file inside ``root`` (class_files.py says why)."""
    try:
        with open_inside(root, path) as handle:
            size_mb = os.fstat(handle.fileno()).st_size / 2**20
            if size_mb > settings.max_notebook_mb:
                raise SubmissionProblem(f"{path.name} is {size_mb:.1f} MB, over the {settings.max_notebook_mb:g} MB "
                                        "limit (clear the outputs and resubmit)")
            return handle.read()
    except Missing:
        raise SubmissionProblem(f"missing {path.name}") from None
    except NotRegular as exc:
        raise SubmissionProblem(f"{path.name}: {NOT_REGULAR} ({exc}): not graded") from None
    except OSError as exc:
        raise SubmissionProblem(f"{path.name} cannot be read ({exc.strerror or exc})") from None


def _load_json(path: Path, root: Path, settings: Settings, notes: list[str] | None = None) -> Any:
    data = _read_bytes(path, root, settings)
    constants: list[str] = []

    def non_finite(name: str) -> None:  # NaN / Infinity are not JSON: read as null, so nothing written is either
        constants.append(name)
        return None

    try:
        data = json.loads(data.decode("utf-8"), parse_constant=non_finite)
        if constants and notes is not None:
            notes.append(f"{path.name} holds {len(constants)} non-JSON number(s) ({constants[0]}): read as null")
        return data
    except UnicodeDecodeError:
        raise SubmissionProblem(f"{path.name} is not a notebook (not UTF-8 text)") from None
    except json.JSONDecodeError as exc:
        raise SubmissionProblem(f"{path.name} is not a notebook (invalid JSON at line {exc.lineno}, "
                                f"column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise SubmissionProblem(f"{path.name} is not a notebook (JSON nested too deeply)") from None


def read_submission(path: Path, settings: Settings, notes: list[str] | None = None,
                    root: Path | None = None) -> nbformat.NotebookNode:
    """The notebook at ``path``, upgraded to nbformat 4.5 with cell ids; ``notes`` gets what was repaired.
    ``root``: the class folder; the file is read only when it is a regular file reached from there without a
    link (by default its own folder: the file itself is checked)."""
    path = Path(path)
    data = _load_json(path, Path(root) if root is not None else path.parent, settings, notes)
    if not isinstance(data, dict) or "cells" not in data and "worksheets" not in data:
        raise SubmissionProblem(f"{path.name} is JSON but not a Jupyter notebook (no cells)")
    try:
        nb = nbformat.reads(json.dumps(data), as_version=4)
        _, nb = nbformat.validator.normalize(nb)
        nb = nbformat.from_dict(nb)
        _upgrade_to_cell_ids(nb)  # Colab saves nbformat 4.0: no cell ids, which restored cells would carry
        nbformat.validate(nb)
    except Exception as exc:  # nbformat raises several types; all mean "not a valid notebook"
        raise SubmissionProblem(f"{path.name} is not a valid notebook ({_first_line(exc)})") from None
    return nb


def _upgrade_to_cell_ids(nb: nbformat.NotebookNode) -> None:
    """Make the notebook nbformat 4.5 with a unique id on every cell (existing ids are kept)."""
    if nb.nbformat == 4 and nb.nbformat_minor < 5:
        nb.nbformat_minor = 5
    seen: set[str] = set()
    for index, cell in enumerate(nb.cells):
        cell_id = cell.get("id")
        if not isinstance(cell_id, str) or not re.fullmatch(r"[a-zA-Z0-9-_]{1,64}", cell_id) or cell_id in seen:
            cell_id = f"submitted-cell-{index}"
            while cell_id in seen:
                cell_id += "-x"
            cell["id"] = cell_id
        seen.add(cell_id)


def _drop_duplicate_copies(nb: nbformat.NotebookNode) -> list[str]:
    """nbgrader's DeduplicateIds rule: the last copy of a grade id counts; earlier copies lose their metadata."""
    duplicated: list[str] = []
    seen: set[str] = set()
    for cell in reversed(nb.cells):
        gid = grade_id(cell)
        if gid is not None and gid in seen:
            cell.metadata.pop("nbgrader")
            duplicated.append(gid)
        elif gid:
            seen.add(gid)
    return duplicated


def _restore_missing(nb: nbformat.NotebookNode, release_cells: list, present: set[str]) -> tuple[list, int, list]:
    """Put deleted read-only and test cells back after the release cell before them that is present;
    returns (restored test ids, restored read-only count, solution ids without metadata)."""
    restored_tests, restored_other, missing_solutions = [], 0, []
    for index, (gid, rcell) in enumerate(release_cells):
        if gid in present:
            continue
        meta = rcell.metadata["nbgrader"]
        if meta.get("solution"):
            missing_solutions.append(gid)  # the student's code is theirs: never replaced by the stub
            continue
        anchor = next((previous for previous, _ in reversed(release_cells[:index]) if previous in present), None)
        position = 0
        if anchor is not None:
            position = next(i for i, cell in enumerate(nb.cells) if grade_id(cell) == anchor) + 1
        nb.cells.insert(position, copy.deepcopy(rcell))
        present.add(gid)
        if meta.get("grade"):
            restored_tests.append(gid)
        else:
            restored_other += 1
    return restored_tests, restored_other, missing_solutions


def _edited_tests(nb: nbformat.NotebookNode, release_by_id: dict) -> list[str]:
    return [gid for cell in nb.cells if (gid := grade_id(cell)) is not None and gid in release_by_id
            and release_by_id[gid].metadata["nbgrader"].get("grade") and cell.source != release_by_id[gid].source]


def _validate_metadata(nb: nbformat.NotebookNode) -> None:
    try:
        from nbgrader.nbgraderformat import MetadataValidator
        MetadataValidator().validate_nb(nb)
    except Exception as exc:
        raise SubmissionProblem(f"nbgrader metadata is corrupted ({_first_line(exc)})") from None


def restore_cells(nb: nbformat.NotebookNode, release: nbformat.NotebookNode) -> tuple[nbformat.NotebookNode, list[str]]:
    """Check the nbgrader metadata and put deleted test / read-only cells back where the release had them.

    Raises SubmissionProblem when no graded cell carries nbgrader metadata (an editor stripped it): grading that
    notebook would score 0 without saying why. Edited test cells are left for nbgrader to restore from the
    gradebook (it compares checksums); they are only noted here.
    """
    nb = copy.deepcopy(nb)
    release_cells = [(gid, cell) for cell in release.cells if (gid := grade_id(cell))]
    graded = [gid for gid, cell in release_cells if cell.metadata["nbgrader"].get("grade")
              or cell.metadata["nbgrader"].get("solution")]
    duplicated = _drop_duplicate_copies(nb)
    present = {gid for cell in nb.cells if (gid := grade_id(cell))}
    if not present & set(graded):
        raise SubmissionProblem(
            f"nbgrader metadata missing: none of the {len(graded)} graded cells carries it (an editor or a copy-paste "
            "stripped it); ask for a resubmission made from the released notebook")
    restored_tests, restored_other, missing_solutions = _restore_missing(nb, release_cells, present)
    edited = _edited_tests(nb, dict(release_cells))
    notes = []
    if restored_tests:
        notes.append(f"deleted test cells restored: {', '.join(restored_tests)}")
    if restored_other:
        notes.append(f"{restored_other} deleted read-only cell(s) restored")
    if edited:
        notes.append(f"edited test cells restored from the gradebook: {', '.join(sorted(set(edited)))}")
    if duplicated:
        notes.append(f"cells copied with their nbgrader metadata, only the last copy counts: "
                     f"{', '.join(sorted(set(duplicated)))}")
    if missing_solutions:
        notes.append(f"solution cells without nbgrader metadata: {', '.join(missing_solutions)}")
    _validate_metadata(nb)
    return nb, notes


def _code_only(source: str) -> str:
    """``source`` without comments and docstrings (a docstring may name the library to explain it; code that uses
    it, strings passed to ``exec`` or ``__import__`` included, stays). IPython lines (``%``, ``!``) become
    ``pass``; a cell that does not parse is searched as written."""
    masked = "\n".join(re.sub(r"^(\s*)[%!].*", r"\1pass", line) for line in source.splitlines())
    try:
        tree = ast.parse(masked)
    except (SyntaxError, ValueError):
        return source
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            body[0].value.value = ""
    return ast.unparse(tree)


def library_use(nb: nbformat.NotebookNode) -> list[str]:
    """Cells a student could edit (solution cells, cells they added) that name the reference library.

    The hidden tests compare answers with tools.prefixbench, which the lesson imports: a solution that wraps the
    library, or patches it, would pass them. Such a submission is still graded, and flagged for review by hand.
    Read-only cells are skipped: nbgrader restores their source anyway.
    """
    found = []
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader") or {}
        if cell.cell_type == "code" and not meta.get("locked") and LIBRARY_NAMES.search(_code_only(cell.source)):
            found.append(meta.get("grade_id") or f"cell {cell.get('id')}")
    return found
