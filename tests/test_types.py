"""mypy finds no error in tools/ (pyproject.toml ``[tool.mypy]``; docs/types.md).

The check is the documented command, ``python -m mypy`` in the repository root, run in-process: 10 to 20 s on
2 cores with a cold cache (``.mypy_cache``, which mypy keeps out of git), about 1 s warm.
"""

import tomllib

import mypy.api
import pytest

pytestmark = pytest.mark.long_unit  # mypy over tools/ with a cold cache: 10-20 s

CHECKED = ["core", "workload", "cache", "simulate", "twin", "serve", "measure", "evidence", "decision", "run",
           "report", "cli", "__init__", "__main__", "traces", "tools/course", "tools/inference_project_runtime"]
"""The layers mypy checks, bottom up (``tests/prefixbench/test_layers.py`` has them all), the package's facades,
the course package (its notebook cells excluded) and the notebook's runtime helper: all of ``tools/``."""


def _config(repo_root):
    return tomllib.loads((repo_root / "pyproject.toml").read_text())["tool"]["mypy"]


def test_mypy_finds_no_error_in_tools(repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)  # the config's ``files`` are relative to the root
    stdout, stderr, status = mypy.api.run(["--config-file", str(repo_root / "pyproject.toml")])
    assert status == 0, f"mypy (exit {status}):\n{stdout}{stderr}"
    assert "Success: no issues found" in stdout, stdout


def test_the_config_checks_those_layers_and_any_exemption_is_written_down(repo_root):
    config = _config(repo_root)
    files = config["files"]
    names = [path.removeprefix("tools/prefixbench/").removesuffix(".py") for path in files]
    assert names == CHECKED and config["python_version"] == "3.11"
    assert config["disallow_untyped_defs"] is True  # every function under tools/ is annotated in full
    assert not [o for o in config["overrides"] if "disallow_untyped_defs" in o]  # and no module is let off
    assert all((repo_root / path).exists() for path in files), files
    note = (repo_root / "docs" / "types.md").read_text()
    exempt = [module for override in config["overrides"] if override.get("ignore_errors")
              for module in override["module"]]
    for module in exempt:  # a file left out is named in the note, as a path
        assert module.replace(".", "/") + ".py" in note, module
