"""Run student code where it cannot reach what it must not: the kernel nbgrader starts, and the diagnosis run.

The grading worker itself stays trusted (it runs nbgrader and owns the gradebook); only the processes that execute
student code go through the launcher (``host.wrap``), which, as far as the machine allows (``capabilities()`` says
what it allows, and the run report records it):

- hides every top-level folder but the system ones (host.SYSTEM_ROOTS), and with them the repository, any other
  copy of the course, the grading output (course, gradebook, other students' work), the submissions folder,
  the grader's home and the shared temporary folders, behind empty tmpfs mounts in a private mount namespace,
  keeping only the Python installation (less nbgrader itself: the kernel never needs the grader's code),
  ``tools/prefixbench`` and the trace folder (read-only) and the submission's own sandbox folder (read-write);
- runs in a new network namespace (no network at all; the kernel talks to nbgrader over Unix sockets);
- drops to a user id of its own (one per submission, so students cannot read each other's files or signal each
  other's processes) and applies rlimits on address space, CPU time, processes, file size and open files;
- caps the output the kernel sends (printed, displayed or a cell's result), per cell and per notebook (the rest is
  dropped with one note).

Without root or without namespaces the same command still applies the rlimits and the clean environment, and
the report says which protections were missing.

    spec.py            the Spec (JSON the launcher reads)
    users.py           one user id per submission: pick, count, kill
    host.py            the grader's side: capabilities, make_spec, wrap, the dotted names run at run time
    confine.py         the launcher's side, as root: hide paths, rlimits, drop privileges
    launch.py          python -m tools.course.sandbox.launch SPEC -- CMD...
    kernel_boot.py     the capped boot a sandboxed kernel starts with
    kernel_manager.py  nbgrader's kernel manager while grading (the only module here importing jupyter_client)

This package exports the grader's side only; importing it stays light (the launcher imports it too).
"""

from .host import KERNEL_MANAGER, LAUNCH_MODULE, capabilities, make_spec, protections, wrap
from .spec import SPEC_ENV, Spec
from .users import UID_BASE, count_user_processes, kill_user_processes

__all__ = ["KERNEL_MANAGER", "LAUNCH_MODULE", "SPEC_ENV", "UID_BASE", "Spec", "capabilities",
           "count_user_processes", "kill_user_processes", "make_spec", "protections", "wrap"]
