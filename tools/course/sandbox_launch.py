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
import json as _json
from ipykernel import displayhook as _displayhook, iostream, zmqshell
_per_cell = int(sys.argv.pop(1))
_book = {"left": int(sys.argv.pop(1)), "said": False}
_cell = {"id": None, "left": 0, "said": False}
_CELL_NOTE = "\\n[输出超过单元格上限，其余丢弃 | output limit reached: the rest of this cell's output is dropped]\\n"
_BOOK_NOTE = ("\\n[输出超过整个 notebook 的上限，之后的输出都丢弃 | notebook output limit reached: all further output "
              "is dropped]\\n")
def _allow(header, size, whole=False):
    # (characters the cell may send now, note to add or None). One execute request = one cell: each starts
    # with a fresh allowance; the notebook's total runs across cells. whole: all of it or nothing (rich output).
    cell = header.get("msg_id")
    if cell != _cell["id"]:
        _cell.update(id=cell, left=_per_cell, said=False)
    room = max(0, min(_cell["left"], _book["left"]))
    allowed = (size if size <= room else 0) if whole else min(size, room)
    _cell["left"] -= allowed
    _book["left"] -= allowed
    if allowed == size:
        return allowed, None
    _cell["left"] = 0
    note = None
    if _book["left"] <= 0 and not _book["said"]:
        _book["said"] = _cell["said"] = True
        note = _BOOK_NOTE
    elif not _cell["said"] and not _book["said"]:
        _cell["said"] = True
        note = _CELL_NOTE
    return allowed, note
def _size(bundle):
    return sum(len(v) if isinstance(v, (str, bytes)) else len(_json.dumps(v, default=str))
               for v in (bundle or {}).values())
_write = iostream.OutStream.write
def _capped(self, text):
    if not isinstance(text, str):
        return _write(self, text)
    allowed, note = _allow(self.parent_header, len(text))
    if allowed or note:
        _write(self, text[:allowed] + (note or ""))
    return len(text)
_publish = zmqshell.ZMQDisplayPublisher.publish
def _capped_publish(self, data, metadata=None, **kwargs):
    allowed, note = _allow(self.parent_header, _size(data), whole=True)
    if allowed or not data:
        return _publish(self, data, metadata, **kwargs)
    if note:
        _write(sys.stdout, note)
_result = _displayhook.ZMQShellDisplayHook.write_format_data
def _capped_result(self, format_dict, md_dict=None):
    allowed, note = _allow(self.parent_header, _size(format_dict), whole=True)
    if allowed or not format_dict:
        return _result(self, format_dict, md_dict)
    return _result(self, {"text/plain": (note or "").strip()}, {})
iostream.OutStream.write = _capped
zmqshell.ZMQDisplayPublisher.publish = _capped_publish
_displayhook.ZMQShellDisplayHook.write_format_data = _capped_result
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
