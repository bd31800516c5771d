"""The grader's side of the sandbox: what this machine allows, the spec for one submission, the wrapped command.

Only the processes that execute student code (the kernel nbgrader starts, the diagnosis run) go through
``python -m tools.course.sandbox.launch SPEC -- CMD...``; the grading worker around them stays trusted.

The dotted names below are the ones nbgrader and the command line resolve at run time; they live here, once,
and tests/course/test_course_dotted_names.py imports each of them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Sequence

from .spec import Spec
from .users import UID_BASE, pick_uid_base

LAUNCH_MODULE = "tools.course.sandbox.launch"
"""Run with ``python -m`` to enter the sandbox (sandbox/launch.py)."""
KERNEL_MANAGER = "tools.course.sandbox.kernel_manager.SandboxKernelManager"
"""nbgrader's ``Execute.kernel_manager_class`` while grading (sandbox/kernel_manager.py)."""
KEPT_REPO_PATHS = ("tools/__init__.py", "tools/prefixbench")
"""Parts of the repository that stay visible (read-only) in the sandbox: the lesson imports tools.prefixbench."""
SYSTEM_ROOTS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "proc", "dev", "sys")
"""Top-level folders student code sees (read-only for its user). Every other top-level folder is hidden whole: a
copy of the course elsewhere on the machine (a second checkout, a CI workspace, a mounted share) holds the hidden
tests too, and the grader cannot know every place one lies."""
GRADER_PACKAGES = ("nbgrader",)
"""Packages of the grader covered again inside the kept Python installation: the kernel never needs them."""


def capabilities() -> dict:
    """Probe once per run: can we change user, and make private mount and network namespaces?"""
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    unshare = shutil.which("unshare")
    namespaces = False
    if root and unshare:
        probe = subprocess.run([unshare, "--net", "--mount", "true"], capture_output=True)
        namespaces = probe.returncode == 0
    return {"root": root, "namespaces": namespaces, "unshare": unshare, "uid_base": pick_uid_base() if root else None}


def protections(caps: dict, spec: Spec) -> dict:
    """What was in force, in words, for the run report (results.json)."""
    limits = (f"address space {spec.memory_mb or 'unlimited'} MB, CPU {spec.cpu_s} s, {spec.nproc} processes, "
              f"files up to {spec.fsize_mb} MB, {spec.nofile} open files, output {spec.output_chars} characters per cell "
              f"and {spec.output_total_chars} per notebook")
    return {
        "user": (f"one unprivileged user id per submission (from {UID_BASE})" if spec.uid is not None
                 else "the grader's own user (not running as root: no user switch)"),
        "filesystem": ("private mount namespace: every top-level folder but the system ones ("
                       + ", ".join("/" + r for r in SYSTEM_ROOTS) + ") hidden, the repository, grading output, "
                       "submissions, home and /tmp with them; "
                       "only the Python installation, tools/prefixbench and traces (read-only) and the submission's "
                       "sandbox folder visible" if spec.isolate
                       else "NOT isolated (no mount namespace): student code can read what the grader's user can"),
        "network": ("new network namespace: no network, not even loopback" if spec.isolate
                    else "NOT isolated: no network namespace on this machine"),
        "limits": limits,
        "environment": "clean: only the variables the notebook needs",
    }


def outside_system_roots(root: Path = Path("/")) -> list[Path]:
    """Every top-level folder that is not a system one (SYSTEM_ROOTS), links followed to their folder."""
    system = [(root / name).resolve() for name in SYSTEM_ROOTS if (root / name).exists()]
    found = []
    for entry in sorted(root.iterdir()):
        if entry.name in SYSTEM_ROOTS:
            continue
        try:
            target = entry.resolve()
            if not target.is_dir():
                continue
        except OSError:
            continue
        if target == root.resolve() or any(target == s or s in target.parents for s in system):
            continue  # /lib -> usr/lib and the like
        found.append(target)
    return sorted(set(found))


def _layout(keep_ro: list[Path], hide: list[Path]) -> tuple[list[str], list[str]]:
    """(kept read-only, hidden): the Python installation and KEPT_REPO_PATHS stay; every top-level folder but the
    system ones goes, and the repository, its parent, home and the shared temporary folders with them (named
    too, in case one lies inside a system folder)."""
    # Imported here, not at the top: the launcher imports this package and must stay light (config imports
    # tools.prefixbench, and with it numpy).
    from ..config import REPO_ROOT

    keep = [Path(sys.base_prefix).resolve(), Path(sys.prefix), *(REPO_ROOT / p for p in KEPT_REPO_PATHS), *keep_ro]
    hidden = [REPO_ROOT, REPO_ROOT.parent, Path.home(), Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"),
              *outside_system_roots(), *hide]
    shown = {str(p.resolve()) for p in hidden if p.exists() and p.resolve() != Path("/")}
    return [str(p) for p in keep if p.exists()], sorted(shown)


def make_spec(caps: dict, sandbox_dir: Path, index: int, *, hide: list[Path], memory_mb: int, cpu_s: float,
              keep_ro: Sequence[Path] = (), env: dict | None = None) -> Spec:
    """A spec for submission number ``index``; creates its sandbox folder, owned by the sandbox user."""
    sandbox_dir = Path(sandbox_dir)
    sandbox_dir.mkdir(parents=True, exist_ok=True)
    uid = (caps.get("uid_base") or UID_BASE) + index if caps["root"] else None
    if uid is not None:
        os.chown(sandbox_dir, uid, uid)
    sandbox_dir.chmod(0o700)
    kept, hidden = _layout(list(keep_ro), hide)
    return Spec(sandbox_dir=str(sandbox_dir), uid=uid, isolate=caps["namespaces"], hide=hidden, keep_ro=kept,
                mask=grader_packages(), memory_mb=memory_mb, cpu_s=int(cpu_s) + 1, env=dict(env or {}))


def grader_packages() -> list[str]:
    """Folders of the grader's own packages inside the kept Python installation, hidden from student code."""
    import importlib.util

    found = []
    for name in GRADER_PACKAGES:
        spec = importlib.util.find_spec(name)
        for location in (spec.submodule_search_locations or []) if spec else []:
            if Path(location).is_dir():
                found.append(str(Path(location).resolve()))
    return found


def wrap(cmd: list[str], spec_path: Path, spec: Spec) -> list[str]:
    """The command that runs ``cmd`` confined by the spec."""
    launcher = [sys.executable, "-m", LAUNCH_MODULE, str(spec_path), "--", *cmd]
    if spec.isolate:
        return [shutil.which("unshare") or "unshare", "--net", "--mount", "--", *launcher]
    return launcher
