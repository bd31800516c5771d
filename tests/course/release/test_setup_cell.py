"""The notebook's first code cell in an empty folder without network: one bilingual message that says what to
do (a mirror in PREFIXBENCH_REPO_URL, or an uploaded checkout in PREFIXBENCH_REPO, set from a notebook cell),
no traceback; and doing what it says then works."""

import os

import nbformat
import pytest
from nbclient import NotebookClient

from tools.course import config

pytestmark = pytest.mark.nbgrader  # real nbgrader / grade.py / kernels: left out by -m "not nbgrader"

CLOSED_PORT_URL = "http://127.0.0.1:9/prefixbench.git"  # nothing listens there: the clone fails at once


def _offline_env(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PREFIXBENCH_REPO", "PREFIXBENCH_REPO_URL", "PYTHONPATH", "NBGRADER_EXECUTION")}
    env.update({"HOME": str(tmp_path / "home"), "PREFIXBENCH_REPO_URL": str(tmp_path / "no-such-mirror"),
                "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9",
                "GIT_CONFIG_NOSYSTEM": "1", "MPLBACKEND": "agg"})
    (tmp_path / "home").mkdir()
    return env


def _stream(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def _error(cell):
    errors = [o for o in cell.outputs if o.output_type == "error"]
    return errors[0] if errors else None


def _assert_explains(cell, reason_fragment):
    error = _error(cell)
    assert error is not None, cell.outputs
    shown = "\n".join(error.traceback)
    assert error.ename == "SetupProblem"
    assert "Traceback" not in shown and 'File "' not in shown and "CalledProcessError" not in shown, shown
    assert "\x1b[" not in shown, "the message is plain text, not a coloured traceback"
    assert shown.startswith("环境准备失败 | Setup failed: "), shown
    for needed in ('os.environ["PREFIXBENCH_REPO_URL"]', 'os.environ["PREFIXBENCH_REPO"]', "重新运行", "re-run",
                   "%env", reason_fragment):
        assert needed in shown, (needed, shown)
    assert "fatal:" not in _stream(cell) and "Traceback" not in _stream(cell), _stream(cell)
    assert [o.output_type for o in cell.outputs] == ["stream", "error"], cell.outputs  # "clone ...", the message


def test_setup_cell_offline_explains_itself_then_works_as_told(tmp_path):
    source = nbformat.read(config.RELEASE_NOTEBOOK, as_version=4)
    setup = next(c for c in source.cells if c.cell_type == "code")
    assert setup.id == "setup"
    empty = tmp_path / "empty"
    empty.mkdir()
    nb = nbformat.v4.new_notebook(metadata=source.metadata)
    nb.cells = [
        nbformat.v4.new_code_cell(setup.source),  # a mirror that does not exist
        nbformat.v4.new_code_cell(f'import os\nos.environ["PREFIXBENCH_REPO_URL"] = "{CLOSED_PORT_URL}"'),
        nbformat.v4.new_code_cell(setup.source),  # an unreachable URL
        nbformat.v4.new_code_cell(f'%env PREFIXBENCH_REPO={tmp_path / "not-a-checkout"}'),
        nbformat.v4.new_code_cell(setup.source),  # PREFIXBENCH_REPO that holds no repository
        nbformat.v4.new_code_cell(f'os.environ["PREFIXBENCH_REPO"] = "{config.REPO_ROOT}"'),
        nbformat.v4.new_code_cell(setup.source),  # as the message says: an uploaded checkout
    ]
    client = NotebookClient(nb, timeout=60, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(empty)}})
    client.execute(env=_offline_env(tmp_path))
    _assert_explains(nb.cells[0], "no-such-mirror")
    _assert_explains(nb.cells[2], "127.0.0.1:9")
    error = _error(nb.cells[4])
    assert error is not None and "holds no tools/prefixbench" in "\n".join(error.traceback)
    assert not any(o.output_type == "error" for o in nb.cells[6].outputs), nb.cells[6].outputs
    assert f"repository: {config.REPO_ROOT}" in _stream(nb.cells[6])
    assert sorted(p.name for p in empty.iterdir()) == [], "a failed clone leaves nothing behind"
