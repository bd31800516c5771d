"""Which edition (Chinese or English) a submission was made from, so its feedback reads in that language.

grade.py builds one nbgrader course from the default (Chinese) source; when nbgrader grades, it restores every
locked cell from that source. The editions differ only in their locked Markdown cells (the code, tests included,
is the same, checked in tests/course/release/test_english_edition.py), so the feedback of an English submission
gets its edition's Markdown back by cell id, and nothing a test ran changes.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Mapping

import nbformat

from .. import config


def _locked_markdown(nb: nbformat.NotebookNode) -> dict[str, str]:
    return {cell.get("id"): cell.source for cell in nb.cells
            if cell.cell_type == "markdown" and cell.get("metadata", {}).get("nbgrader", {}).get("locked")}


def edition_of(submitted: nbformat.NotebookNode, releases: Mapping[str, nbformat.NotebookNode]) -> str:
    """The edition whose locked Markdown the submission matches most (ties: the default edition)."""
    mine = _locked_markdown(submitted)

    def matches(lang: str) -> int:
        return sum(mine.get(cell_id) == text for cell_id, text in _locked_markdown(releases[lang]).items())

    return max(releases, key=lambda lang: (matches(lang), lang == config.DEFAULT_LANGUAGE))


def release_editions() -> dict[str, nbformat.NotebookNode]:
    """Every edition's committed release notebook (notebooks/, notebooks/en/) that can be read."""
    found = {}
    for lang in config.LANGUAGES:
        try:
            found[lang] = nbformat.read(config.release_notebook(lang), as_version=4)
        except (OSError, ValueError):
            continue
    return found


def with_edition_text(nb: nbformat.NotebookNode, release: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of ``nb`` whose locked Markdown cells read as in ``release`` (matched by cell id)."""
    text = _locked_markdown(release)
    out = copy.deepcopy(nb)
    for cell in out.cells:
        if cell.get("id") in text and cell.cell_type == "markdown":
            cell.source = text[cell["id"]]
    return out


def submitted_notebook(course: Path, student: str) -> nbformat.NotebookNode | None:
    """The notebook as handed in (before nbgrader restored its locked cells), or ``None`` if unreadable."""
    try:
        return nbformat.read(Path(course) / "submitted" / student / config.ASSIGNMENT_ID / config.NOTEBOOK_FILE,
                             as_version=4)
    except (OSError, ValueError):
        return None
