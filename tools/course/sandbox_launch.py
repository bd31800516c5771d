"""Enter the sandbox described by SPEC, then run CMD as the sandbox user (see tools/course/sandbox.py).

    python -m tools.course.sandbox_launch SPEC.json -- CMD...

A Jupyter kernel command (``... -m ipykernel_launcher -f CONNECTION_FILE``) gets its connection file copied into
the sandbox folder (the original sits in the grader's private runtime folder) and starts through a short boot
that caps the output the kernel sends.
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
from ipykernel import iostream
_write, _budget = iostream.OutStream.write, [int(sys.argv.pop(1))]
def _capped(self, text):
    if _budget[0] <= 0:
        return len(text) if isinstance(text, str) else 0
    if isinstance(text, str) and len(text) > _budget[0]:
        text = text[:_budget[0]] + "\\n[输出超过上限，其余丢弃 | output limit reached: the rest is dropped]\\n"
        _budget[0] = 0
        return _write(self, text)
    _budget[0] -= len(text) if isinstance(text, str) else 0
    return _write(self, text)
iostream.OutStream.write = _capped
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
    return [cmd[0], "-c", KERNEL_BOOT, str(spec.output_chars), "-f", str(private),
            "--IPKernelApp.capture_fd_output=False"]


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
