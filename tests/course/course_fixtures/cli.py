"""grade.py as the tests drive it: the command line, the module loaded in-process, the one-line error check,
small file systems to make writes fail for real, and a snapshot of a tree to prove a refused command changed
nothing."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

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


def tmpfs(folder: Path, options: str):
    """A tmpfs mounted at ``folder`` for the test (skipped where mounting is not permitted), unmounted after;
    ``yield from`` it in a fixture."""
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs ({options}) here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def snapshot(root: Path) -> dict[str, str]:
    """What a user would miss: every entry under ``root`` (links not followed) with the sha256 of its bytes, the
    target of a link, or its kind; equal snapshots mean nothing was removed, added or changed."""
    found = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                found[str(path.relative_to(root))] = "link -> " + os.readlink(path)
            elif stat.S_ISREG(mode):
                found[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                found[str(path.relative_to(root))] = "dir" if stat.S_ISDIR(mode) else f"mode {mode:o}"
    assert found, f"nothing under {root} to compare"
    return found
