"""tools.prefixbench imports in one direction only: each layer from the layers below it, never a cycle."""

import textwrap

from import_layers import long_functions, violations

from tools.prefixbench.core.paths import REPO_ROOT

PACKAGE = "tools.prefixbench"
ROOT = REPO_ROOT / "tools" / "prefixbench"
LAYERS = ["core", "workload", "cache", "simulate", "twin", "serve", "measure", "evidence", "decision", "run", "report",
          "cli"]
FACADES = {PACKAGE, f"{PACKAGE}.traces", f"{PACKAGE}.__main__"}
"""The public face for notebooks and ``python -m``: they may import any layer, no layer may import them."""


def test_every_module_belongs_to_a_layer_or_is_a_facade():
    names = {p.name for p in ROOT.iterdir() if not p.name.startswith(("_", ".")) and p.name != "__pycache__"}
    layer_files = {f"{layer}.py" for layer in LAYERS} | set(LAYERS)
    facades = {"traces.py"}
    assert names - layer_files - facades == set()


def test_no_upward_import_no_facade_import_no_cycle():
    assert violations(ROOT, PACKAGE, LAYERS, FACADES) == []


def test_nothing_outside_cli_imports_cli():
    from import_layers import imports_of

    _, found = imports_of(ROOT, PACKAGE)
    users = {imp.source for imp in found if imp.target.startswith(f"{PACKAGE}.cli")}
    assert {u for u in users if not u.startswith(f"{PACKAGE}.cli")} <= {f"{PACKAGE}.__main__"}


def test_no_function_is_longer_than_60_lines():
    assert long_functions(ROOT, 60) == []


def test_the_checker_finds_an_upward_import_a_function_level_cycle_and_a_facade_import(tmp_path):
    root = tmp_path / "pkg"
    for folder in ("low", "high"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    (root / "__init__.py").write_text("from .high import b\n")
    (root / "low" / "a.py").write_text(textwrap.dedent("""
        def late():
            from ..high import b  # upward, hidden in a function
    """))
    (root / "high" / "b.py").write_text("from ..low import a\nfrom .. import c\n")
    (root / "high" / "c.py").write_text("import pkg\n")
    (root / "c.py").write_text("")
    found = violations(root, "pkg", ["low", "high"], {"pkg"})
    assert any("pkg.low.a line 3 imports pkg.high.b: layer high is above low" in v for v in found), found
    assert any(v.startswith("import cycle: pkg.high.b -> pkg.low.a -> pkg.high.b") for v in found), found
    assert any("pkg.high.c line 1 imports pkg: a facade" in v for v in found), found
