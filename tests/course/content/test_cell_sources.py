"""The notebook's cells are files (tools/course/content/cells/): the manifest names exactly the files there,
every code cell is Python that compiles, and the notebook's code, cell after cell as its kernel runs it, uses no
name it never binds and imports nothing it never uses (a pyflakes-level check, with ast)."""

from __future__ import annotations

import ast
import builtins
import tomllib

import pytest

from tools.course import config
from tools.course.content import lesson

CELL_DIR = lesson.CELL_DIR
NOTEBOOK_NAMES = {"__name__", "__file__", "get_ipython", "display"}
"""Names a Jupyter kernel binds before any cell runs."""
FOR_STUDENTS = {"11_exercise-imports: Optional"}
"""Imported for the students' answers (the exercises' toolbox), not used by the reference solutions."""


def _code_files() -> list:
    return sorted(CELL_DIR.glob("*.py"))


def test_the_manifest_names_exactly_the_files_there_are():
    named = {path for entry in lesson.entries() for path in entry.files()}
    present = {path for path in CELL_DIR.iterdir() if path.is_file() and path != lesson.MANIFEST}
    assert sorted(p.name for p in present - named) == [], "cell files the manifest does not name"
    assert sorted(p.name for p in named - present) == [], "cells the manifest names without their file"
    parts = {f"links.{lang}.md" for lang in config.LANGUAGES} | {"chapter-map.md"}
    assert {p.name for p in lesson.PARTS.iterdir()} == parts
    assert {p for p in CELL_DIR.iterdir() if p.is_dir()} == {lesson.PARTS}


def test_the_files_are_numbered_in_notebook_order():
    stems = [entry.stem for entry in lesson.entries()]
    assert stems == sorted(stems) and stems[0].startswith("01_")
    assert len(lesson.entries()) == len(lesson.CELLS) == len(lesson.cells("en"))


@pytest.mark.parametrize("path", _code_files(), ids=lambda p: p.name)
def test_every_code_cell_compiles(path):
    compile(path.read_text(encoding="utf-8"), str(path), "exec")


def test_the_english_heads_are_the_chinese_signatures():
    for entry in lesson.entries():
        if entry.role == "solution":
            zh, en = (entry.path(suffix).read_text(encoding="utf-8") for suffix in (".py", ".en.py"))
            assert zh.split("\n", 1)[0] == en.split("\n", 1)[0], entry.stem
            assert lesson.SOLUTION_START in zh and lesson.SOLUTION_START not in en, entry.stem


class _Names(ast.NodeVisitor):
    """The names a tree binds (anywhere: module, functions, comprehensions) and the names it reads."""

    def __init__(self) -> None:
        self.bound: set[str] = set()
        self.read: set[str] = set()
        self.imported: dict[str, int] = {}

    def visit_Name(self, node: ast.Name) -> None:
        (self.read if isinstance(node.ctx, ast.Load) else self.bound).add(node.id)

    def visit_arg(self, node: ast.arg) -> None:
        self.bound.add(node.arg)
        self.generic_visit(node)  # its annotation

    def _define(self, node) -> None:
        self.bound.add(node.name)
        self.generic_visit(node)

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _define

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self.bound.add(node.name)
        self.generic_visit(node)

    def visit_Import(self, node) -> None:
        for alias in node.names:
            name = alias.asname or alias.name.split(".")[0]
            self.bound.add(name)
            self.imported[name] = node.lineno

    visit_ImportFrom = visit_Import


def _notebook_names() -> tuple[_Names, dict[str, str]]:
    names, where = _Names(), {}
    for entry in lesson.entries():
        if entry.kind == "code":
            before = set(names.imported)
            names.visit(ast.parse(lesson.source(entry.id), filename=entry.stem))
            where.update({name: entry.stem for name in set(names.imported) - before})
    return names, where


def test_the_notebook_reads_no_name_it_never_binds():
    names, _ = _notebook_names()
    unbound = names.read - names.bound - set(dir(builtins)) - NOTEBOOK_NAMES
    assert sorted(unbound) == []


def test_the_notebook_imports_nothing_it_never_uses():
    names, where = _notebook_names()
    unused = {f"{where[name]}: {name}" for name in names.imported if name not in names.read}
    assert sorted(unused - FOR_STUDENTS) == []


def test_a_placeholder_is_filled_once_and_an_unknown_one_refused():
    assert lesson.fill("a <<X>> b <<X>>", {"X": "<<Y>>"}, "t") == "a <<Y>> b <<Y>>"  # values are not read again
    assert lesson.fill("{{braces}} {x} <<lower>>", {}, "t") == "{{braces}} {x} <<lower>>"  # nothing else is special
    with pytest.raises(lesson.ManifestError, match="t: unknown placeholder <<NOPE>>"):
        lesson.fill("<<NOPE>>", {"X": ""}, "t")
    setup = lesson.source("setup")
    assert f'REPO_SLUG = "{config.REPO_SLUG}"' in setup and "<<" not in setup


def test_a_bad_manifest_entry_is_refused_with_its_place():
    good = {"id": "t", "kind": "code", "role": "test", "points": 1, "edition": "shared"}
    assert lesson._entry(3, good).stem == "03_t"
    for bad in ({"points": 0}, {"role": "readonly"}, {"kind": "markdown"}, {"edition": "head"}, {"id": "T_1"},
                {"colour": "red"}, {"points": True}):
        with pytest.raises(lesson.ManifestError, match=r"manifest.toml: cell 3"):
            lesson._entry(3, {**good, **bad})


def test_the_manifest_parses_with_the_standard_library():
    with lesson.MANIFEST.open("rb") as handle:
        data = tomllib.load(handle)
    assert set(data) == {"cells", "en_code_line"}
