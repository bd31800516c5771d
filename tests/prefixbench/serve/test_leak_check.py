"""The session's vLLM leak check (``backend_fixtures.vllm_processes``) must see a process it is asked about even
after vLLM renamed it and its API server died: an orphaned engine core keeps its model and KV cache in memory for
the rest of the run. Stand-ins here (a sleeping Python whose command line names ``vllm.entrypoints``), so the
check is exercised without a server; ``test_backend_experiment.py`` orphans a real engine core on purpose."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from backend_fixtures import SESSION_MARK, vllm_processes

ORPHAN = ("import subprocess, sys\n"
          "out = open(sys.argv[1], 'wb') if sys.argv[1] != '-' else subprocess.DEVNULL\n"
          "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)',\n"
          "                          'vllm.entrypoints.openai.api_server'], stdout=out, stderr=subprocess.STDOUT,\n"
          "                         start_new_session=True)\n"
          "print(child.pid)")
"""Starts the stand-in in its own session and exits at once: the stand-in is orphaned, as an engine core is when
its API server is killed."""


def _orphan(log: str) -> psutil.Process:
    unmarked = {k: v for k, v in os.environ.items() if k != SESSION_MARK}  # as vLLM's setproctitle leaves it
    started = subprocess.run([sys.executable, "-c", ORPHAN, log], env=unmarked, capture_output=True, text=True,
                             check=True, timeout=60)
    return psutil.Process(int(started.stdout))


@pytest.mark.parametrize("where, seen", [("session", True), ("nowhere", False), ("beside the session", False)])
def test_an_orphan_without_the_mark_is_ours_when_it_logs_into_the_session(tmp_path, session_temp, where, seen):
    """``beside the session``: a folder whose name begins with the session's (``popen-gw1`` against ``popen-gw10``)."""
    beside = Path(session_temp.rstrip(os.sep) + "-beside")
    log = {"session": str(tmp_path / "vllm.log"), "nowhere": "-", "beside the session": str(beside / "vllm.log")}
    beside.mkdir()  # ours alone: an existing folder of that name fails the test instead of being removed
    proc = _orphan(log[where])
    try:
        assert proc.ppid() != os.getpid() and SESSION_MARK not in proc.environ()
        assert (proc.pid in vllm_processes()) is seen
    finally:
        proc.kill()
        _, alive = psutil.wait_procs([proc], timeout=10)  # a zombie left for PID 1 to reap counts as gone
        shutil.rmtree(beside, ignore_errors=True)
    assert all(p.status() == psutil.STATUS_ZOMBIE for p in alive)
    assert proc.pid not in vllm_processes()
