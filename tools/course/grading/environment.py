"""The environments grading runs in: the worker's (trusted: the repository, this venv's kernel, local traces)
and the kernel's (only what the notebook needs; the sandbox launcher drops everything else)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tools.prefixbench.core.paths import local_trace_dir

from .. import config
from ..build.nbgrader_course import ensure_venv_on_path


def _prepend(value: str, path_list: str) -> str:
    return os.pathsep.join([value, *[p for p in path_list.split(os.pathsep) if p]])


def worker_env() -> dict[str, str]:
    """Environment of the worker and the kernel: the repository importable, traces local, no downloads."""
    ensure_venv_on_path()
    env = dict(os.environ)
    repo = str(config.REPO_ROOT)
    env["PYTHONPATH"] = _prepend(repo, env.get("PYTHONPATH", ""))
    env["PREFIXBENCH_REPO"] = repo
    traces = local_trace_dir()
    if traces is not None:
        env["PREFIXBENCH_TRACE_DIR"] = str(traces)
    # Resolve the "python3" kernel to this environment's own kernelspec before any user-level one.
    env["JUPYTER_PATH"] = _prepend(str(Path(sys.prefix) / "share" / "jupyter"), env.get("JUPYTER_PATH", ""))
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    return env


def kernel_env() -> dict[str, str]:
    """The only variables student code sees (the sandbox launcher drops everything else)."""
    env = {"PYTHONPATH": str(config.REPO_ROOT), "PREFIXBENCH_REPO": str(config.REPO_ROOT),
           "PYDEVD_DISABLE_FILE_VALIDATION": "1", "MPLCONFIGDIR": ".matplotlib", "PYTHONDONTWRITEBYTECODE": "1",
           # Figures are built but not drawn while grading: no cell is graded on a picture, and rendering the
           # lesson's PNGs (and carrying them into the feedback page) cost about 0.45 s per submission.
           "MPLBACKEND": "agg"}
    traces = local_trace_dir()
    if traces is not None:
        env["PREFIXBENCH_TRACE_DIR"] = str(traces)
    return env


def kernel_problem() -> str | None:
    """None when the 'python3' kernel the grader runs resolves to this environment."""
    code = ("from jupyter_client.kernelspec import KernelSpecManager as K; import sys; "
            "s=K().get_kernel_spec('python3'); print(s.argv[0])")
    proc = subprocess.run([sys.executable, "-c", code], env=worker_env(), capture_output=True, text=True)
    if proc.returncode != 0:
        return ("no 'python3' Jupyter kernel in this environment; run: "
                f"{sys.executable} -m ipykernel install --sys-prefix --name python3")
    return None
