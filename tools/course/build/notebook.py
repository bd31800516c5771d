"""Write the nbgrader source notebook, solutions/69_prefix_cache_benchmark.ipynb, from the lesson's cells.

The output is deterministic (stable cell ids equal to the nbgrader grade ids, no outputs, no execution
counts), so ``python -m tools.course.release --check`` can compare it byte for byte.
"""

from __future__ import annotations

import nbformat

from ..content.cell import Cell
from ..content.lesson import CELLS

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
