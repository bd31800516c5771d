"""Where one submission's code runs and what confines it: its sandbox spec and folder, with the font cache
built once per run copied in (seconds saved per kernel)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from .. import sandbox
from .environment import kernel_env, worker_env
from .model import Settings


def _font_cache(out_dir: Path) -> Path:
    return Path(out_dir) / "sandbox-template" / "matplotlib"


def prepare_sandbox_template(out_dir: Path) -> None:
    """Build matplotlib's font cache once, for every sandboxed kernel to copy."""
    target = _font_cache(out_dir)
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"], env={**worker_env(), "MPLCONFIGDIR":
                   str(target)}, capture_output=True, timeout=300)


def _copy_font_cache(out_dir: Path, spec: sandbox.Spec) -> None:
    fonts = _font_cache(out_dir)
    if not fonts.is_dir():
        return
    shutil.copytree(fonts, spec.env["MPLCONFIGDIR"], dirs_exist_ok=True)
    if spec.uid is not None:
        for path in [Path(spec.env["MPLCONFIGDIR"]), *Path(spec.env["MPLCONFIGDIR"]).rglob("*")]:
            os.chown(path, spec.uid, spec.uid)


def sandbox_spec(out_dir: Path, work: Path, index: int, submission: Path | None, settings: Settings,
                 caps: dict, *, submissions_dir: Path | None = None) -> sandbox.Spec:
    """Where this submission's code runs and what confines it (tools/course/sandbox/). The whole submissions
    folder is hidden: ``submissions_dir``, or else the folder above the submission's student folder."""
    if submissions_dir is None and submission is not None:
        submissions_dir = Path(submission).resolve().parent.parent
    hide = [Path(out_dir)] + ([Path(submissions_dir).resolve()] if submissions_dir is not None else [])
    env = kernel_env()
    trace = env.get("PREFIXBENCH_TRACE_DIR")
    spec = sandbox.make_spec(caps, work / "sandbox", index, hide=hide, memory_mb=settings.memory_limit_mb,
                             cpu_s=settings.submission_timeout, keep_ro=[Path(trace)] if trace else [], env=env)
    spec.env["MPLCONFIGDIR"] = str(Path(spec.sandbox_dir) / ".matplotlib")
    _copy_font_cache(out_dir, spec)
    return spec
