"""Warm the grading worker server once per run, so that each forked worker starts with hot caches.

Imported (by name) into the server that grading workers are forked from (``worker_pool.WORKER_PRELOAD``). Importing it
renders the released notebook to HTML with nbgrader's feedback template and validates it with nbformat: that
compiles the regular expressions, Pygments lexer tables and Markdown parser state that every submission's
autograde and feedback steps would otherwise build again (about half a second of CPU per submission). It starts
no thread, kernel or event loop: the server must stay safe to fork.
"""

from __future__ import annotations

import nbformat
from nbconvert.exporters import HTMLExporter

from .. import config


def feedback_exporter() -> HTMLExporter:
    """An HTML exporter configured by nbgrader's own GenerateFeedback (its feedback template and paths)."""
    from nbgrader.converters import GenerateFeedback
    from nbgrader.coursedir import CourseDirectory

    return HTMLExporter(config=GenerateFeedback(coursedir=CourseDirectory()).config)


def warm_up() -> None:
    try:
        nb = nbformat.read(config.RELEASE_NOTEBOOK, as_version=4)
        nbformat.validate(nb)
        for cell in nb.cells:  # what nbgrader's GetGrades adds before rendering
            if "nbgrader" in cell.metadata:
                cell.metadata.nbgrader.update(score=0.0, points=cell.metadata.nbgrader.get("points", 0.0))
        resources = {"nbgrader": {"notebook": "warmup", "score": 0.0, "max_score": 0.0, "late_penalty": 0.0}}
        feedback_exporter().from_notebook_node(nb, resources=resources)
        from sqlalchemy.orm import configure_mappers

        import nbgrader.api  # noqa: F401  (the gradebook's tables: configured once here, not per submission)
        configure_mappers()
    except Exception:  # a cold cache costs time, never correctness
        pass


warm_up()
