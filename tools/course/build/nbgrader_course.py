"""A headless nbgrader course directory: build it, release the assignment, run nbgrader's converters in-process.

No JupyterHub and no exchange: the converters (GenerateAssignment, Autograde, GenerateFeedback) work on a plain
directory tree ``source/<a>/ -> release/<a>/ -> submitted/<s>/<a>/ -> autograded/ -> feedback/`` with a SQLite
gradebook at its root. The configuration is autograde/nbgrader_config.py, copied into the course directory so an
instructor can also run ``nbgrader ...`` there by hand and get the same behaviour.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from .. import config


class CourseError(RuntimeError):
    """nbgrader could not build or release the course (a problem on the instructor's side)."""


def load_nbgrader_config(path: Path = config.NBGRADER_CONFIG, overrides: Config | None = None) -> Config:
    path = Path(path)
    if not path.is_file():
        raise CourseError(f"{path}: nbgrader config not found")
    cfg = PyFileConfigLoader(path.name, path=str(path.parent)).load_config()
    if overrides is not None:
        cfg.merge(overrides)
    return cfg


def course_config(course_dir: Path, overrides: Config | None = None) -> Config:
    cfg = load_nbgrader_config(Path(course_dir) / "nbgrader_config.py", overrides)
    cfg.CourseDirectory.root = str(Path(course_dir).resolve())
    return cfg


def ensure_venv_on_path() -> None:
    """nbgrader's gradebook runs the ``alembic`` command by name: put this interpreter's bin/ first on PATH
    (running ``.venv/bin/python`` directly does not activate the venv)."""
    bindir = str(Path(sys.executable).parent)
    parts = os.environ.get("PATH", "").split(os.pathsep)
    if parts[:1] != [bindir]:
        os.environ["PATH"] = os.pathsep.join([bindir, *[p for p in parts if p != bindir]])


def run_converter(converter_cls: type[Any], course_dir: Path, *, assignment_id: str = config.ASSIGNMENT_ID,
                  student_id: str | None = None, overrides: Config | None = None, **attrs: Any) -> dict:
    """Run one nbgrader converter in this process; returns nbgrader's ``{"success", "log", "error"}``."""
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.utils import capture_log

    ensure_venv_on_path()
    cfg = course_config(course_dir, overrides)
    coursedir = CourseDirectory(config=cfg)
    coursedir.assignment_id = assignment_id
    if student_id is not None:
        coursedir.student_id = student_id
    app = converter_cls(coursedir=coursedir, config=cfg)
    for name, value in attrs.items():
        setattr(app, name, value)
    app.log.propagate = False  # the log comes back in the result; keep it off the console
    app.log.setLevel(logging.INFO)
    return capture_log(app)


def prepare_course(course_dir: Path, source_notebook: Path = config.SOURCE_NOTEBOOK,
                   nbgrader_config: Path = config.NBGRADER_CONFIG) -> Path:
    """Create ``course_dir`` with the source notebook, release it, and return the release notebook's path.

    The gradebook (``course_dir/gradebook.db``) then knows every graded cell, its points and its full source.
    """
    from nbgrader.converters import GenerateAssignment

    course_dir = Path(course_dir)
    source_notebook = Path(source_notebook)
    if not source_notebook.is_file():
        raise CourseError(f"{source_notebook}: source notebook not found")
    if course_dir.exists():
        shutil.rmtree(course_dir)
    source_dir = course_dir / "source" / config.ASSIGNMENT_ID
    source_dir.mkdir(parents=True)
    shutil.copyfile(nbgrader_config, course_dir / "nbgrader_config.py")
    shutil.copyfile(source_notebook, source_dir / config.NOTEBOOK_FILE)
    result = run_converter(GenerateAssignment, course_dir, force=True, create_assignment=True)
    release = course_dir / "release" / config.ASSIGNMENT_ID / config.NOTEBOOK_FILE
    if not result["success"] or not release.is_file():
        (course_dir / "generate_assignment.log").write_text(result.get("log", "") + result.get("error", ""))
        last = [line for line in result.get("log", "").splitlines() if "ERROR" in line][-1:] or ["no release notebook"]
        raise CourseError(f"nbgrader generate_assignment failed: {last[0]} "
                          f"(log: {course_dir / 'generate_assignment.log'})")
    return release
