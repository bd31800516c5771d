"""What makes a release safe to publish: no solution or hidden-test text, and stubs that only raise.

Pure checks on notebooks (no nbgrader run), shared by ``release`` (refuses to write an unsafe release) and
``release --check`` (CI).
"""

from __future__ import annotations

import ast

import nbformat

from .. import config
from ..content.regions import MARKERS, SECRET_REGIONS, lines_only_inside


def secret_lines(source_nb: nbformat.NotebookNode, min_length: int = 12) -> set[str]:
    """Stripped lines that occur only inside solution / hidden-test regions of the source notebook."""
    return lines_only_inside((cell.source for cell in source_nb.cells), SECRET_REGIONS, min_length)


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


def _body_without_docstring(func: ast.FunctionDef) -> list[ast.stmt]:
    body = list(func.body)
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        body = body[1:]
    return body


def _stub_cell_problems(cell: nbformat.NotebookNode, expected: str) -> list[str]:
    where = f"release cell {cell.get('id')}"
    try:
        tree = ast.parse(cell.source)
    except SyntaxError as exc:
        return [f"{where}: stub is not valid Python ({exc.msg}, line {exc.lineno})"]
    if not tree.body or not all(isinstance(node, ast.FunctionDef) for node in tree.body):
        return [f"{where}: a stub cell may only define functions"]
    problems = []
    for func in tree.body:
        body = _body_without_docstring(func)
        if len(body) != 1 or ast.dump(body[0]) != expected:
            problems.append(f"{where}: {func.name}() must only raise {config.STUB_CODE}")
    return problems


def stub_problems(release_nb: nbformat.NotebookNode) -> list[str]:
    """Every solution cell of the release must define functions whose body only raises the seed's stub."""
    expected = ast.dump(ast.parse(config.STUB_CODE).body[0])
    solution_cells = [c for c in release_nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    if not solution_cells:
        return ["release: no solution cells found"]
    return [problem for cell in solution_cells for problem in _stub_cell_problems(cell, expected)]
