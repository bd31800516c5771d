"""Grading workers: forked, one per submission, from a server that has already imported nbgrader.

Python's multiprocessing forkserver gives a fresh, single-purpose process per submission without paying about
2.5 s of imports each time. The server runs no student code and holds no kernel; a worker over the wall-clock
limit is killed with its whole process tree.

The dotted names the server imports are in WORKER_PRELOAD, here only; tests/course/test_course_dotted_names.py
imports each of them.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import resource
import sys
from multiprocessing import forkserver
from pathlib import Path
from typing import Any

from tools.prefixbench.core.processes import handle, kill_tree

from .. import config
from .environment import worker_env
from .model import Settings
from .strays import kill_strays

WORKER_PRELOAD = ["__main__", "tools.course.grading.worker", "nbgrader.converters", "nbgrader.api",
                  "nbconvert.exporters.html", "jupyter_client.manager", "nbclient",
                  "tools.course.sandbox.kernel_manager", "psutil", "tools.course.grading.warmup"]
"""What the worker server imports once per run; each submission's worker is a fork of it. ``__main__``
(grade.py) too: a worker would otherwise import it again, as multiprocessing does for its children. The server
finds ``tools`` through the project's install into the venv (``pip install -e .``), from any working folder."""


def _worker_context() -> Any:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(WORKER_PRELOAD)
    return context


def start_worker_server() -> None:
    """Start the worker server now, so its imports overlap with building the course (optional: the first
    submission starts it otherwise)."""
    _worker_context()
    forkserver.ensure_running()


def _apply_limits(memory_limit_mb: int, cpu_seconds: float) -> None:
    if memory_limit_mb > 0:
        limit = memory_limit_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    cpu = int(cpu_seconds) + 1  # a backstop: the wall-clock limit normally fires first
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))


def _redirect_stdio(log: str) -> None:
    """stdout and stderr to the worker log, stdin from /dev/null."""
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdout = open(1, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)


def _worker_main(job: str, log: str, env: dict, cwd: str, memory_limit_mb: int, cpu_seconds: float) -> None:
    """Entry point of a forked worker: what ``Popen(start_new_session=True, preexec_fn=limits, stdout=log,
    stderr=log, env=env, cwd=cwd)`` would set up, then the worker's main."""
    os.setsid()
    _apply_limits(memory_limit_mb, cpu_seconds)
    _redirect_stdio(log)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    from . import worker

    code = worker.main([job])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip the server's inherited exit handlers


def _failed_worker(work: Path, exitcode: int | None) -> dict:
    tail = (work / "worker.log").read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
    why = f"killed by signal {-exitcode}" if exitcode is not None and exitcode < 0 else f"exit status {exitcode}"
    return {"status": "error", "reason": f"grading worker failed ({why}; memory limit?): {tail[0][:200]}"}


def run_worker(work: Path, settings: Settings) -> dict:
    """Grade the job in ``work/job.json`` in a forked worker; its outcome (``work/result.json``) or a reason."""
    proc = _worker_context().Process(
        target=_worker_main, name=f"grade-worker-{work.name}", daemon=False,
        args=(str(work / "job.json"), str(work / "worker.log"), worker_env(), str(config.REPO_ROOT),
              settings.memory_limit_mb, settings.submission_timeout * 2))
    proc.start()
    worker = handle(proc.pid)
    try:
        proc.join(timeout=settings.submission_timeout)
        if proc.exitcode is None:
            kill_tree(worker)
            proc.join()
            return {"status": "not_graded",
                    "reason": f"timed out: grading took longer than {settings.submission_timeout:g} s and was stopped"}
    finally:
        if proc.exitcode is None:  # interrupted while waiting
            kill_tree(worker)
            proc.join()
        exitcode = proc.exitcode
        proc.close()
        kill_strays(work)  # a kernel left behind by a crashed worker
    out = work / "result.json"
    if not out.is_file():
        return _failed_worker(work, exitcode)
    return json.loads(out.read_text(encoding="utf-8"))
