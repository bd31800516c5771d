"""Enter the sandbox described by SPEC, then run CMD as the sandbox user (see tools/course/sandbox/__init__.py).

    python -m tools.course.sandbox.launch SPEC.json -- CMD...

A Jupyter kernel command (``... -m ipykernel_launcher -f CONNECTION_FILE``) gets its connection file copied into
the sandbox folder (the original sits in the grader's private runtime folder) and starts through the capped boot
of kernel_boot.py.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
from pathlib import Path

from .confine import apply_limits, drop_privileges, hide_paths
from .host import LAUNCH_MODULE
from .kernel_boot import KERNEL_BOOT
from .spec import Spec

PASSED_ON = ("JPY_PARENT_PID", "JPY_SESSION_NAME", "NBGRADER_EXECUTION")
"""Variables of the grader's environment the kernel still gets (everything else is dropped)."""


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


def _environment(spec: Spec) -> dict[str, str]:
    """The only variables student code sees: a minimal base, the spec's own, and PASSED_ON."""
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin", "HOME": spec.sandbox_dir,
           "TMPDIR": spec.sandbox_dir, "LANG": os.environ.get("LANG", "C.UTF-8"), "PYTHONNOUSERSITE": "1",
           "IPYTHONDIR": str(Path(spec.sandbox_dir) / ".ipython"), **spec.env}
    for name in PASSED_ON:
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def main(argv: list[str]) -> int:
    spec_path, separator, *cmd = argv
    if separator != "--" or not cmd:
        print(f"usage: python -m {LAUNCH_MODULE} SPEC -- CMD...", file=sys.stderr)
        return 2
    spec = Spec.read(Path(spec_path))
    cmd = _kernel_command(cmd, spec)
    if spec.isolate:
        hide_paths(spec)
    os.chdir(spec.sandbox_dir)
    os.umask(0o077)
    apply_limits(spec)
    drop_privileges(spec)
    env = _environment(spec)
    for signum in (signal.SIGINT, signal.SIGTERM):  # nbclient interrupts a cell past its timeout with SIGINT
        signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    os.execve(cmd[0] if os.path.isabs(cmd[0]) else shutil.which(cmd[0], path=env["PATH"]) or cmd[0], cmd, env)
    # execve replaces this process or raises OSError: nothing after it runs


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
