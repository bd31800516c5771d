"""grade.py as the tests drive it: the command line, the module loaded in-process, and the one-line error check."""

from __future__ import annotations

import importlib.util
import sys

from tools.course import config

GRADE_PY = config.REPO_ROOT / "autograde" / "grade.py"
GRADE = [sys.executable, str(GRADE_PY)]


def grade_module():
    """autograde/grade.py loaded as a module (it is a script, not a package member)."""
    spec = importlib.util.spec_from_file_location("grade_under_test", GRADE_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def one_line(proc) -> str:
    """The single line a refused command prints on stderr (and no traceback anywhere)."""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    return lines[0]
