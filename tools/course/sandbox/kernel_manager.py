"""The kernel manager nbgrader uses while grading: every kernel starts inside the sandbox.

Its own module, named by host.KERNEL_MANAGER in nbgrader's config, so that nothing else in the sandbox package
(the launcher above all) imports jupyter_client.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from jupyter_client.manager import AsyncKernelManager

from .host import wrap
from .spec import SPEC_ENV, Spec


class SandboxKernelManager(AsyncKernelManager):
    """Starts the kernel through the sandbox launcher and talks to it over Unix sockets in the sandbox folder
    (a kernel in its own network namespace cannot reach the grader's loopback)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        spec_path = os.environ.get(SPEC_ENV)
        self._sandbox = (Path(spec_path), Spec.read(Path(spec_path))) if spec_path else None
        if self._sandbox:
            self.transport = "ipc"
            self.ip = str(Path(self._sandbox[1].sandbox_dir) / "kernel")

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        cmd = super().format_kernel_cmd(extra_arguments)
        return wrap(cmd, *self._sandbox) if self._sandbox else cmd

    async def _async_interrupt_kernel(self) -> None:
        """SIGINT to the kernel process only. jupyter_client signals the kernel's whole process group, and every
        process the student's code forked is in it: a fork bomb's children would each get KeyboardInterrupt,
        run the kernel's error path in a forked copy and write into its message channels, so the notebook
        could not be graded. (The launcher execs the kernel: the process jupyter_client started is the kernel.)
        Also used by shutdown_kernel, which interrupts before asking the kernel to stop."""
        process = getattr(self.provisioner, "process", None) if self._sandbox else None
        if process is not None and process.poll() is None:
            try:
                os.kill(process.pid, signal.SIGINT)
                return
            except OSError:
                pass
        await super()._async_interrupt_kernel()

    interrupt_kernel = _async_interrupt_kernel
