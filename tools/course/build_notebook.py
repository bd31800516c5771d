"""Write the nbgrader source notebook, solutions/69_prefix_cache_benchmark.ipynb, from lesson_69.py.

    python -m tools.course.build_notebook           # (re)write the notebook
    python -m tools.course.build_notebook --check   # exit 1 if the committed notebook differs from lesson_69.py

The output is deterministic: stable cell ids (equal to the nbgrader grade ids), no outputs, no execution counts.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

from tools.prefixbench.fileio import atomic_write_text

from . import config
from .lesson_69 import CELLS, Cell

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def nbgrader_metadata(cell: Cell) -> dict:
    meta = {"grade": cell.role == "test", "grade_id": cell.id, "locked": cell.role != "solution",
            "schema_version": 3, "solution": cell.role == "solution", "task": False}
    if cell.role == "test":
        meta["points"] = cell.points
    return meta


def build_notebook(cells: list[Cell] = CELLS) -> nbformat.NotebookNode:
    ids = [cell.id for cell in cells]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"cell ids must be unique, duplicated: {', '.join(duplicates)}")
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": KERNELSPEC, "language_info": {"name": "python"}}
    for cell in cells:
        if cell.role == "test" and (cell.kind != "code" or cell.points <= 0):
            raise ValueError(f"{cell.id}: a test cell must be code with points > 0")
        make = nbformat.v4.new_code_cell if cell.kind == "code" else nbformat.v4.new_markdown_cell
        node = make(source=cell.source, id=cell.id)
        node.metadata = {"nbgrader": nbgrader_metadata(cell)} if cell.role != "plain" else {}
        nb.cells.append(node)
    nbformat.validate(nb)
    return nb


def render(nb: nbformat.NotebookNode) -> str:
    return nbformat.writes(nb) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare with the committed notebook")
    parser.add_argument("--out", type=Path, default=config.SOURCE_NOTEBOOK, help="where to write the notebook")
    args = parser.parse_args(argv)
    text = render(build_notebook())
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.is_file() else None
        if current != text:
            print(f"{args.out}: out of date with tools/course/lesson_69.py; run python -m tools.course.build_notebook",
                  file=sys.stderr)
            return 1
        print(f"{args.out}: up to date")
        return 0
    atomic_write_text(args.out, text)
    print(f"wrote {args.out} ({len(CELLS)} cells)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
