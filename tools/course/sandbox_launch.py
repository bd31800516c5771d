"""Enter the sandbox described by SPEC, then run CMD as the sandbox user (see tools/course/sandbox.py).

    python -m tools.course.sandbox_launch SPEC.json -- CMD...

A Jupyter kernel command (``... -m ipykernel_launcher -f CONNECTION_FILE``) gets its connection file copied into
the sandbox folder (the original sits in the grader's private runtime folder) and starts through a short boot
that caps the output the kernel sends, per cell and for the whole notebook, and starts the threads the kernel
needs later while the process limit still allows it.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
from pathlib import Path

from .sandbox import Spec, apply_limits, drop_privileges, hide_paths

KERNEL_BOOT = """\
import sys
sys.modules["debugpy"] = None  # no debugger while grading: ipykernel runs without it, 0.1 s sooner
from ipykernel import iostream
_write = iostream.OutStream.write
_per_cell, _total = int(sys.argv.pop(1)), [int(sys.argv.pop(1))]
_cell = {"id": None, "left": 0}
def _capped(self, text):
    if not isinstance(text, str):
        return _write(self, text)
    cell = self.parent_header.get("msg_id")  # one execute request = one cell: each starts with a fresh budget
    if cell != _cell["id"]:
        _cell["id"], _cell["left"] = cell, _per_cell
    allowed = min(_cell["left"], _total[0])
    if allowed <= 0:
        return len(text)
    kept = text[:allowed]
    _cell["left"] -= len(kept)
    _total[0] -= len(kept)
    if len(kept) < len(text):
        whole = _total[0] <= 0
        _cell["left"] = 0
        kept += ("\\n[输出超过整个 notebook 的上限，之后的输出都丢弃 | notebook output limit reached: all further output "
                 "is dropped]\\n" if whole else
                 "\\n[输出超过单元格上限，其余丢弃 | output limit reached: the rest of this cell's output is dropped]\\n")
    _write(self, kept)
    return len(text)
iostream.OutStream.write = _capped
try:  # pyzmq starts this thread on the first large message; threads count against the process limit, so a
    from zmq.utils.garbage import gc as _zmq_gc  # fork bomb would leave the kernel unable to send its output:
    _zmq_gc.start()  # start it now, before any student code runs
except Exception:
    pass
from ipykernel import kernelapp
kernelapp.launch_new_instance()
"""


def _kernel_command(cmd: list[str], spec: Spec) -> list[str]:
    """Move the connection file into the sandbox and swap ipykernel_launcher for the capped boot."""
    if "-f" not in cmd or "ipykernel_launcher" not in cmd:
        return cmd
    index = cmd.index("-f") + 1
    private = Path(spec.sandbox_dir) / "connection.json"
    shutil.copyfile(cmd[index], private)
    if spec.uid is not None:
        os.chown(private, spec.uid, spec.uid)
    private.chmod(0o600)
    # capture_fd_output off: ipykernel would otherwise pipe fd 1/2 through a thread that echoes them to the
    # kernel's own stdout; once that write hits the file-size limit the thread dies, the pipe fills and the
    # student's next os.write(1, ...) blocks forever. Without it, fd writes go straight to that file and fail
    # with EFBIG at the limit; what reaches the notebook still goes through the capped sys.stdout.
    # History in memory: IPython stops its history thread before every fork and restarts it on the next cell,
    # which fails once a fork bomb has used up the process limit (threads count); grading needs no history file.
    return [cmd[0], "-c", KERNEL_BOOT, str(spec.output_chars), str(spec.output_total_chars), "-f", str(private),
            "--IPKernelApp.capture_fd_output=False", "--HistoryManager.hist_file=:memory:"]


def main(argv: list[str]) -> int:
    spec_path, separator, *cmd = argv
    if separator != "--" or not cmd:
        print("usage: python -m tools.course.sandbox_launch SPEC -- CMD...", file=sys.stderr)
        return 2
    spec = Spec.read(Path(spec_path))
    cmd = _kernel_command(cmd, spec)
    if spec.isolate:
        hide_paths(spec)
    os.chdir(spec.sandbox_dir)
    os.umask(0o077)
    apply_limits(spec)
    drop_privileges(spec)
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin", "HOME": spec.sandbox_dir,
           "TMPDIR": spec.sandbox_dir, "LANG": os.environ.get("LANG", "C.UTF-8"), "PYTHONNOUSERSITE": "1",
           "IPYTHONDIR": str(Path(spec.sandbox_dir) / ".ipython"), **spec.env}
    for name in ("JPY_PARENT_PID", "JPY_SESSION_NAME", "NBGRADER_EXECUTION"):
        if name in os.environ:
            env[name] = os.environ[name]
    for signum in (signal.SIGINT, signal.SIGTERM):  # nbclient interrupts a cell past its timeout with SIGINT
        signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    os.execve(cmd[0] if os.path.isabs(cmd[0]) else shutil.which(cmd[0], path=env["PATH"]) or cmd[0], cmd, env)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
