"""The few names every course layer agrees on. Change REPO_SLUG here, then rebuild (see docs/course.md).

It sits below every layer (content, build, sandbox, diagnosis, grading all read it) and stays at this path:
the generated colab_links.md and the notebook's setup cell name ``tools/course/config.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from tools.prefixbench.core.paths import REPO_ROOT

REPO_SLUG = "llm-inference-course/prefixbench-student"
"""owner/name of the public GitHub repository students clone (Colab links, the notebook's setup cell): the
student distribution written by ``python -m tools.course.release --student-dir``, never this course repository
(which holds the solutions and the hidden tests; see docs/course.md, "Publish the student distribution")."""
REPO_BRANCH = "main"

NOTEBOOK_NAME = "69_prefix_cache_benchmark"
NOTEBOOK_FILE = f"{NOTEBOOK_NAME}.ipynb"
ASSIGNMENT_ID = "ch69"
"""nbgrader's assignment name inside the course directory grade.py builds."""


def grade_id(cell: Mapping[str, Any]) -> str | None:
    """nbgrader's name of a notebook cell (``metadata.nbgrader.grade_id``); ``None`` when it has none, or when a
    submission's metadata is not an object where one should be (read from a student's file, never trusted)."""
    meta = cell.get("metadata")
    nbgrader = meta.get("nbgrader") if isinstance(meta, Mapping) else None
    found = nbgrader.get("grade_id") if isinstance(nbgrader, Mapping) else None
    return found if isinstance(found, str) else None


SOLUTIONS_DIR = REPO_ROOT / "solutions"
RELEASE_DIR = REPO_ROOT / "notebooks"
SOURCE_NOTEBOOK = SOLUTIONS_DIR / NOTEBOOK_FILE
RELEASE_NOTEBOOK = RELEASE_DIR / NOTEBOOK_FILE
"""The default (Chinese) edition: what the grader builds its course from."""
LANGUAGES = ("zh", "en")
DEFAULT_LANGUAGE = "zh"
"""The editions built from the one source (tools/course/content): the default one at the top of solutions/ and
notebooks/, every other one in a sub-folder named after its language (notebooks/en/...)."""


def _edition_dir(root: Path, lang: str) -> Path:
    if lang not in LANGUAGES:
        raise ValueError(f"lang must be one of {LANGUAGES}, got {lang!r}")
    return root if lang == DEFAULT_LANGUAGE else root / lang


def source_notebook(lang: str = DEFAULT_LANGUAGE) -> Path:
    return _edition_dir(SOLUTIONS_DIR, lang) / NOTEBOOK_FILE


def release_notebook(lang: str = DEFAULT_LANGUAGE) -> Path:
    return _edition_dir(RELEASE_DIR, lang) / NOTEBOOK_FILE

NBGRADER_CONFIG = REPO_ROOT / "autograde" / "nbgrader_config.py"
COLAB_LINKS = REPO_ROOT / "colab_links.md"

STUB_MESSAGE = "请先完成 TODO 代码！"
STUB_CODE = f'raise NotImplementedError("{STUB_MESSAGE}")'
"""What every exercise body becomes in the student release (the seed's wording, exactly)."""


def colab_url(notebook_path: str, slug: str = REPO_SLUG, branch: str = REPO_BRANCH) -> str:
    return f"https://colab.research.google.com/github/{slug}/blob/{branch}/{notebook_path}"


def clone_url(slug: str = REPO_SLUG) -> str:
    return f"https://github.com/{slug}.git"
