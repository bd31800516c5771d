"""The course a class is graded against: built once per run from solutions/, and the settings it implies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat

from .. import config
from ..build.nbgrader_course import course_config, prepare_course
from ..content.regions import HIDDEN_BEGIN
from .model import Course, Settings


def prepare(out_dir: Path, source_notebook: Path = config.SOURCE_NOTEBOOK) -> Course:
    """Build ``out_dir/course`` (source, release, gradebook) and describe its graded cells. Its paths are absolute:
    the grading workers run in another folder."""
    out_dir = Path(out_dir).absolute()
    release = prepare_course(out_dir / "course", source_notebook)
    source_nb = nbformat.read(source_notebook, as_version=4)
    cells = []
    for cell in source_nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade"):
            cells.append({"id": meta["grade_id"], "points": float(meta["points"]),
                          "hidden": HIDDEN_BEGIN in cell.source})
    return Course(str(out_dir / "course"), str(release), cells)


def load_settings(cell_timeout: float | None = None, **kwargs: Any) -> Settings:
    """Defaults from autograde/nbgrader_config.py (per-cell timeout), overridden by explicit values."""
    if cell_timeout is None:
        cell_timeout = float(course_config(config.NBGRADER_CONFIG.parent).Execute.get("timeout", 120))
    return Settings(cell_timeout=float(cell_timeout), **kwargs)
