"""The student's feedback page: render it from a sanitised copy of the autograded notebook, check the page,
and withhold it when either check still finds hidden-test text (feedback.py does the sanitising)."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

from tools.prefixbench.core.files import atomic_write_text

from .. import config
from ..build.nbgrader_course import run_converter
from ..content.regions import HIDDEN_BEGIN
from . import feedback as fb
from .phases import phase

SUMMARY_ENTRY = re.compile(r'(<li><a href="#([^"<>]+)">)(Test cell|Coding free-response|Written response|Task)(</a>)')
"""An entry of the summary nbgrader's feedback template puts at the top of the page: a link to the cell, its kind
and its score, but not the cell's name."""


def name_summary_cells(page: str) -> tuple[str, int]:
    """The page with each summary entry naming its cell's grade id (``Test cell test-ex0-visible``), so a
    student can match a score to the test it comes from; and how many entries were named."""
    return SUMMARY_ENTRY.subn(lambda m: f"{m[1]}{m[3]} <code>{m[2]}</code>{m[4]}", page)


def sanitised(autograded: nbformat.NotebookNode, source_nb: nbformat.NotebookNode,
              release_nb: nbformat.NotebookNode, max_chars: int) -> tuple[nbformat.NotebookNode, set[str]]:
    """The copy of ``autograded`` that is safe to render, and the hidden-test lines the page must not show."""
    hidden_ids = {c.metadata["nbgrader"]["grade_id"] for c in source_nb.cells
                  if HIDDEN_BEGIN in c.source and "nbgrader" in c.metadata}
    hints = set().union(*(fb.hint_strings(c.source) for c in source_nb.cells))
    return fb.sanitize(autograded, release_nb, hidden_ids, hints, max_chars), fb.hidden_lines(source_nb)


def _render(course: Path, student: str, work: Path, secrets: set[str]) -> tuple[str | None, list[str]]:
    from nbgrader.converters import GenerateFeedback

    with phase("feedback"):
        result = run_converter(GenerateFeedback, course, student_id=student, force=True)
    html_path = course / "feedback" / student / config.ASSIGNMENT_ID / f"{config.NOTEBOOK_NAME}.html"
    if not result["success"] or not html_path.is_file():
        atomic_write_text(work / "feedback.log", (result.get("log") or "") + (result.get("error") or ""))
        return None, ["feedback could not be generated (see the worker's feedback.log)"]
    page, _ = name_summary_cells(html_path.read_text(encoding="utf-8"))
    atomic_write_text(html_path, page)
    page_leaks = fb.html_leaks(page, secrets)
    if page_leaks:
        return None, ["feedback withheld: the rendered page shows hidden-test text (" + page_leaks[0] + ")"]
    return str(html_path), []


def feedback_page(course: Path, student: str, work: Path, autograded: nbformat.NotebookNode, autograded_path: Path,
                  *, safe: nbformat.NotebookNode, secrets: set[str]) -> tuple[str | None, list[str]]:
    """(path of the page to hand back or None, notes). nbgrader renders what sits at ``autograded_path``: the
    sanitised copy goes there for the rendering, and the real autograded notebook goes back afterwards."""
    leaks = fb.notebook_leaks(safe, secrets)
    if leaks:
        return None, ["feedback withheld: the sanitised notebook still shows hidden-test text (" + leaks[0] + ")"]
    nbformat.write(safe, autograded_path)
    try:
        return _render(course, student, work, secrets)
    finally:
        nbformat.write(autograded, autograded_path)  # the course copy keeps the real autograded notebook
