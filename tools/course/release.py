"""Regenerate the student release and check it: the committed notebooks/ copy must be exactly what nbgrader makes.

    python -m tools.course.release           # lesson_69.py -> solutions/ -> nbgrader generate_assignment -> notebooks/,
                                             # and colab_links.md
    python -m tools.course.release --check   # exit 1, one line per problem, when anything is stale or leaks

The checks (also run by tests/test_course_release.py, so CI fails on them):
  - solutions/ is what tools/course/build_notebook.py writes from lesson_69.py;
  - notebooks/ is byte for byte what ``nbgrader generate_assignment`` makes from solutions/ (its output is
    deterministic, so nothing needs to be ignored);
  - the release holds no solution or hidden-test text: no region markers, and no line that only appears inside
    a ``### BEGIN SOLUTION`` or ``### BEGIN HIDDEN TESTS`` region of the source;
  - every exercise stub is a function whose body is its docstring and ``raise NotImplementedError("请先完成 TODO 代码！")``
    and nothing else;
  - the release carries no outputs;
  - colab_links.md is up to date.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import tempfile
from pathlib import Path

import nbformat

from tools.prefixbench.fileio import atomic_write_text

from . import build_notebook, colab_links, config
from .nbgrader_course import CourseError, prepare_course

MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
_REGION = re.compile(r"^[ \t]*### BEGIN (SOLUTION|HIDDEN TESTS)[ \t]*$(.*?)^[ \t]*### END \1[ \t]*$", re.M | re.S)


def generate_release_text(source_notebook: Path = config.SOURCE_NOTEBOOK) -> str:
    """Run nbgrader generate_assignment on ``source_notebook`` in a scratch course; return the release's text."""
    with tempfile.TemporaryDirectory(prefix="ch69-release-") as tmp:
        release = prepare_course(Path(tmp) / "course", source_notebook)
        return release.read_text(encoding="utf-8")


def secret_lines(source_nb: nbformat.NotebookNode, min_length: int = 12) -> set[str]:
    """Stripped lines that occur only inside solution / hidden-test regions of the source notebook."""
    inside, outside = set(), set()
    for cell in source_nb.cells:
        text = cell.source
        for match in _REGION.finditer(text):
            inside.update(line.strip() for line in match.group(2).splitlines())
        outside.update(line.strip() for line in _REGION.sub("", text).splitlines())
    return {line for line in inside - outside if len(line) >= min_length}


def leak_problems(source_nb: nbformat.NotebookNode, release_nb: nbformat.NotebookNode) -> list[str]:
    problems = []
    secrets = secret_lines(source_nb)
    for cell in release_nb.cells:
        texts = [cell.source]
        for output in cell.get("outputs", []):
            texts.append(str(output))
        blob = "\n".join(texts)
        for marker in MARKERS:
            if marker in blob:
                problems.append(f"release cell {cell.get('id')}: contains the marker {marker!r}")
        lines = {line.strip() for line in blob.splitlines()}
        leaked = sorted(lines & secrets)
        if leaked:
            problems.append(f"release cell {cell.get('id')}: contains {len(leaked)} solution/hidden line(s), "
                            f"e.g. {leaked[0][:60]!r}")
        if cell.get("outputs") or cell.get("execution_count"):
            problems.append(f"release cell {cell.get('id')}: has outputs; the release must be committed without them")
    return problems


def stub_problems(release_nb: nbformat.NotebookNode) -> list[str]:
    """Every solution cell of the release must define functions whose body only raises the seed's stub."""
    problems = []
    expected = ast.dump(ast.parse(config.STUB_CODE).body[0])
    solution_cells = [c for c in release_nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    if not solution_cells:
        problems.append("release: no solution cells found")
    for cell in solution_cells:
        where = f"release cell {cell.get('id')}"
        try:
            tree = ast.parse(cell.source)
        except SyntaxError as exc:
            problems.append(f"{where}: stub is not valid Python ({exc.msg}, line {exc.lineno})")
            continue
        if not tree.body or not all(isinstance(node, ast.FunctionDef) for node in tree.body):
            problems.append(f"{where}: a stub cell may only define functions")
            continue
        for func in tree.body:
            body = list(func.body)
            if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                    and isinstance(body[0].value.value, str):
                body = body[1:]  # the docstring
            if len(body) != 1 or ast.dump(body[0]) != expected:
                problems.append(f"{where}: {func.name}() must only raise {config.STUB_CODE}")
    return problems


def check(source_path: Path = config.SOURCE_NOTEBOOK, release_path: Path = config.RELEASE_NOTEBOOK,
          links_path: Path = config.COLAB_LINKS) -> list[str]:
    """All the release checks; an empty list means the committed files are consistent and safe."""
    problems = []
    expected_source = build_notebook.render(build_notebook.build_notebook())
    if not source_path.is_file():
        return [f"{source_path}: missing; run python -m tools.course.release"]
    if source_path.read_text(encoding="utf-8") != expected_source:
        problems.append(f"{source_path}: out of date with tools/course/lesson_69.py; run python -m tools.course.release")
    if not release_path.is_file():
        return problems + [f"{release_path}: missing; run python -m tools.course.release"]
    committed = release_path.read_text(encoding="utf-8")
    if committed != generate_release_text(source_path):
        problems.append(f"{release_path}: out of date with {source_path.name}; run python -m tools.course.release")
    source_nb = nbformat.reads(source_path.read_text(encoding="utf-8"), as_version=4)
    release_nb = nbformat.reads(committed, as_version=4)
    problems += leak_problems(source_nb, release_nb)
    problems += stub_problems(release_nb)
    problems += colab_links.problems(links_path)
    return problems


def release(source_path: Path = config.SOURCE_NOTEBOOK, release_path: Path = config.RELEASE_NOTEBOOK) -> None:
    atomic_write_text(source_path, build_notebook.render(build_notebook.build_notebook()))
    text = generate_release_text(source_path)
    release_nb = nbformat.reads(text, as_version=4)
    source_nb = nbformat.reads(source_path.read_text(encoding="utf-8"), as_version=4)
    problems = leak_problems(source_nb, release_nb) + stub_problems(release_nb)
    if problems:
        raise CourseError("the generated release is not safe to publish: " + "; ".join(problems))
    atomic_write_text(release_path, text)
    colab_links.write()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate or check the chapter 69 student release.")
    parser.add_argument("--check", action="store_true", help="check only; exit 1 when anything is stale or leaks")
    args = parser.parse_args(argv)
    try:
        if args.check:
            problems = check()
            for problem in problems:
                print(problem, file=sys.stderr)
            if not problems:
                print("release: up to date, no solution or hidden-test text, stubs only raise")
            return 1 if problems else 0
        release()
        print(f"wrote {config.SOURCE_NOTEBOOK}, {config.RELEASE_NOTEBOOK} and {config.COLAB_LINKS}")
        return 0
    except CourseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
