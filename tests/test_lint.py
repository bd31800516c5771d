"""ruff, with pyflakes' rules, finds nothing in the repository (pyproject.toml ``[tool.ruff]``; docs/types.md).

The check is the documented command, ``ruff check`` in the repository root: undefined names, unused imports and
variables, an import shadowed by a loop variable, in tools/, tests/, autograde/, benchmarks/ and the generated
notebooks (0.1 s here).
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
    assert config["lint"]["select"] == ["F"]
    assert config["extend-exclude"] == ["tools/course/content/cells"]
    assert set(config["lint"]["per-file-ignores"]) == {"*.ipynb"}
    proc = subprocess.run([str(RUFF), "check", "--no-cache", "--show-files", "."], cwd=repo_root,
                          capture_output=True, text=True, timeout=120)
    files = proc.stdout.splitlines()
    assert any(line.endswith("notebooks/69_prefix_cache_benchmark.ipynb") for line in files), proc.stdout[:2000]
    assert any(line.endswith("tools/prefixbench/run/live.py") for line in files)
    assert not any("/.venv/" in line or "content/cells/" in line for line in files)
