"""tools/course imports in one direction only, in the layer order tools/course/__init__.py declares: no module
imports a later layer (function-level imports included), nothing forms an import cycle, no function is longer
than 60 lines, and the diagnosis engine, copied into the sandbox on its own, imports nothing of the course
outside itself."""

from __future__ import annotations

import re
import sys

from import_layers import imports_of, long_functions, violations

import tools.course
from tools.prefixbench.core.paths import REPO_ROOT

PACKAGE = "tools.course"
ROOT = REPO_ROOT / "tools" / "course"
FACADES = {PACKAGE}
"""tools/course/__init__.py is documentation only; nothing imports it."""
ENTRY_POINTS = {"release.py"}
"""Top-level modules that are commands, not layers: they may import any layer (``python -m tools.course.release``)."""
ENGINE = f"{PACKAGE}.diagnosis.engine"
NOTEBOOK_CELLS = f"{PACKAGE}.content.cells."
"""tools/course/content/cells/*.py are the notebook's code cells, not modules of the package: the notebook's kernel
runs them with the whole repository importable, and the self-check cells import tools.course.diagnosis, as the
student notebook must. Their imports are no layer's; tests/course/content/test_cell_sources.py checks the cells.
The 60-line rule holds for them too, but for the exercises: each is one function, as the student writes it,
whose docstring is its whole contract (simulate_prefix_cache's is 30 lines)."""


def declared_layers() -> list[str]:
    """config, then the order the package docstring declares ("Data flows one way: a -> b -> ...")."""
    match = re.search(r"Data flows one way: ([a-z ->]+)\.", tools.course.__doc__)
    assert match, "tools/course/__init__.py must declare 'Data flows one way: a -> b -> ...'"
    return ["config", *[name.strip() for name in match.group(1).split("->")]]


def test_every_module_belongs_to_a_declared_layer_or_is_an_entry_point():
    layers = declared_layers()
    names = {p.name for p in ROOT.iterdir() if not p.name.startswith(("_", ".")) and p.name != "__pycache__"}
    assert names - {f"{layer}.py" for layer in layers} - set(layers) - ENTRY_POINTS == set()
    assert all((ROOT / layer / "__init__.py").is_file() for layer in layers[1:]), "each layer is a package"


def test_no_later_layer_import_no_facade_import_no_cycle():
    found = violations(ROOT, PACKAGE, declared_layers(), FACADES)
    assert [problem for problem in found if not problem.startswith(NOTEBOOK_CELLS)] == []


def test_no_function_is_longer_than_60_lines():
    from tools.course.content.lesson import entries

    exercises = {f"{entry.path('.py').relative_to(ROOT)}:" for entry in entries() if entry.role == "solution"}
    assert [found for found in long_functions(ROOT, 60) if not found.startswith(tuple(exercises))] == []


def test_the_diagnosis_engine_imports_only_itself_the_library_and_the_standard_library():
    _, found = imports_of(ROOT, PACKAGE)
    outside = sorted(f"{imp.source} line {imp.line} imports {imp.target}" for imp in found
                     if imp.source.startswith(ENGINE)
                     and not (imp.target.startswith(ENGINE) or imp.target == "__future__"
                              or imp.target.split(".")[0] in sys.stdlib_module_names
                              or imp.target == "tools.prefixbench" or imp.target.startswith("tools.prefixbench.")))
    assert outside == [], "the engine is copied into the sandbox alone"


def test_the_walk_sees_the_function_level_and_relative_imports_the_code_makes():
    """The checks above only mean something if the walk finds these imports."""
    _, found = imports_of(ROOT, PACKAGE)
    edges = {(imp.source, imp.target) for imp in found}
    assert (f"{PACKAGE}.grading.worker_pool", f"{PACKAGE}.grading.worker") in edges  # in a function
    assert (f"{PACKAGE}.grading.feedback_page", f"{PACKAGE}.grading.feedback") in edges  # from . import x
    assert (f"{PACKAGE}.sandbox.host", f"{PACKAGE}.config") in edges  # in a function, two dots
