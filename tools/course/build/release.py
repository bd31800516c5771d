"""Regenerate the student release and check it: the committed notebooks/ copy must be exactly what nbgrader makes.

    python -m tools.course.release           # content -> solutions/ -> nbgrader generate_assignment -> notebooks/,
                                             # and colab_links.md
    python -m tools.course.release --check   # exit 1, one line per problem, when anything is stale or leaks
    python -m tools.course.release --student-dir DIR   # write the student distribution (build/student.py)

The checks (also run by tests/course/release/test_course_release.py, so CI fails on them):
  - for every edition (Chinese, the default, at the top of solutions/ and notebooks/; English in en/):
    solutions/ is what tools/course/build/notebook.py writes from the lesson (tools/course/content/);
  - notebooks/ is byte for byte what ``nbgrader generate_assignment`` makes from solutions/ (its output is
    deterministic, so nothing needs to be ignored);
  - the release holds no solution or hidden-test text: no region markers, and no line that only appears inside
    a ``### BEGIN SOLUTION`` or ``### BEGIN HIDDEN TESTS`` region of the source;
  - every exercise stub is a function whose body is its docstring and ``raise NotImplementedError("请先完成 TODO 代码！")``
    and nothing else;
  - the release carries no outputs;
  - colab_links.md is up to date;
  - the student distribution, built into a temporary folder, holds no course source, grading code, solution,
    hidden test or hidden probe (build/student.py).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import nbformat

from tools.prefixbench.core.files import atomic_write_text
from tools.prefixbench.core.usage import OneLineParser

from .. import config
from . import colab_links, notebook, student
from .nbgrader_course import CourseError, prepare_course
from .release_checks import leak_problems, stub_problems

RERUN = "run python -m tools.course.release"


def generate_release_text(source_notebook: Path = config.SOURCE_NOTEBOOK) -> str:
    """Run nbgrader generate_assignment on ``source_notebook`` in a scratch course; return the release's text."""
    with tempfile.TemporaryDirectory(prefix="ch69-release-") as tmp:
        release = prepare_course(Path(tmp) / "course", source_notebook)
        return release.read_text(encoding="utf-8")


def _built_source(lang: str) -> str:
    from ..content.lesson import cells

    return notebook.render(notebook.build_notebook(cells(lang)))


def _staleness(source_path: Path, release_path: Path, lang: str) -> tuple[list[str], str | None]:
    """Problems of solutions/ and notebooks/ being out of date; the committed release's text (None: missing)."""
    if not source_path.is_file():
        return [f"{source_path}: missing; {RERUN}"], None
    problems = []
    if source_path.read_text(encoding="utf-8") != _built_source(lang):
        problems.append(f"{source_path}: out of date with tools/course/content/ ({lang} edition); {RERUN}")
    if not release_path.is_file():
        return problems + [f"{release_path}: missing; {RERUN}"], None
    committed = release_path.read_text(encoding="utf-8")
    if committed != generate_release_text(source_path):
        problems.append(f"{release_path}: out of date with {source_path}; {RERUN}")
    return problems, committed


def check_edition(lang: str, source_path: Path | None = None, release_path: Path | None = None) -> list[str]:
    """One edition's checks: fresh, no solution or hidden-test text, stubs that only raise."""
    source_path = source_path or config.source_notebook(lang)
    release_path = release_path or config.release_notebook(lang)
    problems, committed = _staleness(source_path, release_path, lang)
    if committed is None:
        return problems
    source_nb = nbformat.reads(source_path.read_text(encoding="utf-8"), as_version=4)
    release_nb = nbformat.reads(committed, as_version=4)
    return problems + leak_problems(source_nb, release_nb) + stub_problems(release_nb)


def check(source_path: Path = config.SOURCE_NOTEBOOK, release_path: Path = config.RELEASE_NOTEBOOK,
          links_path: Path = config.COLAB_LINKS) -> list[str]:
    """All the release checks, every edition (``source_path`` / ``release_path``: the default edition's);
    an empty list means the committed files are consistent and safe."""
    problems = check_edition(config.DEFAULT_LANGUAGE, source_path, release_path)
    sources = [source_path]
    for lang in config.LANGUAGES:
        if lang != config.DEFAULT_LANGUAGE:
            problems += check_edition(lang)
            sources.append(config.source_notebook(lang))
    problems += colab_links.problems(links_path)
    problems += student.check_in_temp([p for p in sources if p.is_file()])
    return problems


def release_edition(lang: str) -> None:
    source_path, release_path = config.source_notebook(lang), config.release_notebook(lang)
    source_path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(source_path, _built_source(lang))
    text = generate_release_text(source_path)
    release_nb = nbformat.reads(text, as_version=4)
    source_nb = nbformat.reads(source_path.read_text(encoding="utf-8"), as_version=4)
    problems = leak_problems(source_nb, release_nb) + stub_problems(release_nb)
    if problems:
        raise CourseError(f"the generated {lang} release is not safe to publish: " + "; ".join(problems))
    release_path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(release_path, text)


def release() -> None:
    """Every edition's source notebook and release, then colab_links.md."""
    for lang in config.LANGUAGES:
        release_edition(lang)
    colab_links.write()


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m tools.course.release",
                            description="Regenerate or check the chapter 69 student release.")
    parser.add_argument("--check", action="store_true", help="check only; exit 1 when anything is stale or leaks")
    parser.add_argument("--student-dir", metavar="DIR", help="write the student distribution into DIR (empty, "
                        "or a clone of the student repository: its .git is kept) from the committed release")
    args = parser.parse_args(argv)
    writes_tree = args.student_dir is not None  # "" is a mistake (an unset variable), not the flag left out
    try:
        if writes_tree:
            student.validate_dest(args.student_dir)
        if args.check or writes_tree:
            problems = check()
            for problem in problems:
                print(problem, file=sys.stderr)
            if problems:
                return 1
            if args.check:
                print("release: up to date, no solution or hidden-test text, stubs only raise, student tree clean")
            if writes_tree:
                print(f"wrote the student distribution to {student.write(Path(args.student_dir))}")
            return 0
        release()
        written = [str(config.source_notebook(lang)) for lang in config.LANGUAGES] + [
            str(config.release_notebook(lang)) for lang in config.LANGUAGES]
        print(f"wrote {', '.join(written)} and {config.COLAB_LINKS}")
        return 0
    except (CourseError, student.StudentTreeError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
