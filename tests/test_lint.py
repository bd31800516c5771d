"""ruff, with pyflakes' rules and bugbear's B905, finds nothing in the repository (pyproject.toml ``[tool.ruff]``;
docs/types.md).

The check is the documented command, ``ruff check`` in the repository root: undefined names, unused imports and
variables, an import shadowed by a loop variable, in tools/, tests/, autograde/, benchmarks/ and the generated
notebooks; and in the project's code (not the tests or notebooks) a ``zip()`` that does not say whether its inputs
must have one length (0.1 s here).
"""

import subprocess
import sys
import tomllib
from pathlib import Path

RUFF = Path(sys.executable).with_name("ruff")


def test_ruff_finds_nothing(repo_root):
    proc = subprocess.run([str(RUFF), "check", "--no-cache", "--output-format", "concise", "."], cwd=repo_root,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"ruff (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}"


def test_the_lint_covers_the_notebooks_and_leaves_out_only_the_cell_fragments(repo_root):
    config = tomllib.loads((repo_root / "pyproject.toml").read_text())["tool"]["ruff"]
    assert config["lint"]["select"] == ["F", "B905"]
    assert config["extend-exclude"] == ["tools/course/content/cells"]
    assert config["lint"]["per-file-ignores"] == {"*.ipynb": ["F401", "B905"], "tests/**": ["B905"]}
    proc = subprocess.run([str(RUFF), "check", "--no-cache", "--show-files", "."], cwd=repo_root,
                          capture_output=True, text=True, timeout=120)
    files = proc.stdout.splitlines()
    assert any(line.endswith("notebooks/69_prefix_cache_benchmark.ipynb") for line in files), proc.stdout[:2000]
    assert any(line.endswith("tools/prefixbench/run/live.py") for line in files)
    assert not any("/.venv/" in line or "content/cells/" in line for line in files)


def test_a_zip_without_strict_is_refused_in_the_project_code_only(repo_root):
    def codes(filename: str) -> str:
        proc = subprocess.run([str(RUFF), "check", "--no-cache", "--output-format", "concise", "--stdin-filename",
                               filename, "-"], cwd=repo_root, input="pairs = list(zip([1], [2]))\n",
                              capture_output=True, text=True, timeout=60)
        return proc.stdout

    assert "B905" in codes("tools/prefixbench/simulate/example.py")
    assert "B905" in codes("autograde/example.py")
    assert "B905" not in codes("tests/prefixbench/test_example.py")


def test_every_benchmark_script_imports(repo_root):
    """The benchmark scripts run by hand (their numbers are in the docs), so no test runs them whole; their
    top level is run here without ``main`` (``runpy`` under another name), so a name they import from the library
    that no longer exists fails now, not when someone next measures. One process for all, about 1 s."""
    proc = subprocess.run([sys.executable, "-c", "import glob, runpy\n"
                           "for path in sorted(glob.glob('benchmarks/bench_*.py')):\n"
                           "    runpy.run_path(path, run_name='imported')\n    print(path)"],
                          cwd=repo_root, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert len(proc.stdout.split()) == len(list((repo_root / "benchmarks").glob("bench_*.py"))) >= 6
