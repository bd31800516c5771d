"""Every dotted name the course resolves at run time, read from the constant the code itself uses, resolves:
the worker server's preload list, the kernel manager named in nbgrader's config, the launcher run with ``-m``,
the paths the sandbox keeps visible, the engine staged into the sandbox, and the course imports in the lesson."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from tools.course import config, sandbox
from tools.course.content.lesson import CELLS
from tools.course.diagnosis import graded as gd
from tools.course.grading.worker_pool import WORKER_PRELOAD
from tools.course.sandbox.host import KEPT_REPO_PATHS


@pytest.mark.parametrize("name", [n for n in WORKER_PRELOAD if n != "__main__"])
def test_every_module_the_worker_server_preloads_imports(name):
    importlib.import_module(name)


def test_the_kernel_manager_named_in_nbgrader_config_is_a_kernel_manager():
    from jupyter_client.manager import KernelManager

    module, _, cls = sandbox.KERNEL_MANAGER.rpartition(".")
    assert issubclass(getattr(importlib.import_module(module), cls), KernelManager)


def test_the_launcher_runs_with_dash_m_from_any_folder(tmp_path):
    proc = subprocess.run([sys.executable, "-m", sandbox.LAUNCH_MODULE, "spec.json", "no-separator"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert proc.returncode == 2 and f"python -m {sandbox.LAUNCH_MODULE} SPEC" in proc.stderr, proc.stderr


def _module_of(kept: str) -> str:
    return kept.removesuffix("/__init__.py").removesuffix(".py").replace("/", ".")


@pytest.mark.parametrize("kept", KEPT_REPO_PATHS)
def test_every_path_the_sandbox_keeps_exists_and_its_module_imports(kept):
    assert (config.REPO_ROOT / kept).exists(), kept
    module = importlib.import_module(_module_of(kept))
    assert Path(module.__file__).resolve().is_relative_to((config.REPO_ROOT / kept).resolve())


def test_the_kept_packages_import_nothing_of_the_repository_that_the_sandbox_hides():
    """Inside the sandbox only KEPT_REPO_PATHS of the repository exist: an import of another tools.* module
    from there would fail in every graded kernel."""
    kept = [_module_of(p) for p in KEPT_REPO_PATHS]
    hidden = set()
    for root in (config.REPO_ROOT / p for p in KEPT_REPO_PATHS):
        for path in ([root] if root.is_file() else sorted(root.rglob("*.py"))):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module] if isinstance(node, ast.ImportFrom) and not node.level and node.module
                         else [])
                hidden.update(f"{path.name}: {n}" for n in names
                              if n.split(".")[0] == "tools" and not any(n == k or n.startswith(k + ".") for k in kept))
    assert hidden == set(), sorted(hidden)


def test_the_staged_engine_imports_without_the_course_or_site_packages(tmp_path):
    """What the diagnosis run imports inside the sandbox (graded.STAGED_PACKAGE), where tools/course is hidden:
    the copy must be whole on its own (-S: no site-packages, so no installed tools.course either)."""
    folder, _ = gd.stage(tmp_path, [])
    code = (f"import sys; sys.path.insert(0, {str(folder)!r}); import {gd.STAGED_PACKAGE} as d; "
            "print(len(d.PROBES), 'tools' in sys.modules)")
    proc = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr
    count, course_loaded = proc.stdout.split()
    assert int(count) > 0 and course_loaded == "False"
    assert all(hasattr(importlib.import_module("tools.course.diagnosis.engine"), name)
               for name in ("call_guarded", "EXERCISES", "PROBES", "probe_function", "findings_for",
                            "DEFAULT_CALL_TIMEOUT_S", "make_finding", "Failure", "CATALOGUE"))


def _course_imports_in_lesson() -> list[tuple[str, str, list[str]]]:
    found = []
    for cell in CELLS:
        if cell.kind != "code":
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tools.course"):
                found.append((cell.id, node.module, [a.name for a in node.names]))
    return found


def test_the_course_modules_the_lesson_imports_exist():
    found = _course_imports_in_lesson()
    assert found, "the notebook's self-check imports tools.course.diagnosis"
    for cell_id, module, names in found:
        imported = importlib.import_module(module)
        assert all(hasattr(imported, name) for name in names), (cell_id, module, names)
