"""Inside the launcher, as root and before any student code: hide paths, apply rlimits, drop to the sandbox user.

Kept apart from the grader's side (host.py): this is the only code that runs in the new namespaces with
privileges, and it must not depend on anything the grader imports.
"""

from __future__ import annotations

import ctypes
import os
import signal
from pathlib import Path

from .spec import Spec

_libc = None
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    global _libc
    _libc = _libc or ctypes.CDLL(None, use_errno=True)
    enc = lambda s: None if s is None else s.encode()  # noqa: E731
    if _libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _cover_roots(spec: Spec) -> list[str]:
    """An empty tmpfs over each outermost hidden root; returns those roots."""
    roots: list[str] = []
    for root in sorted(spec.hide, key=len):
        if not any(_under(root, done) for done in roots):
            roots.append(root)
            _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=0755")
    return roots


def _bind_back(path: str, writable: bool, fd: int) -> None:
    """Bind a kept path (held open as ``fd``) back at its old place on the covering tmpfs."""
    if os.path.isdir(f"/proc/self/fd/{fd}"):
        os.makedirs(path, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        Path(path).touch()
    _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
    if not writable:
        _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID)
    os.close(fd)


def hide_paths(spec: Spec) -> None:
    """Empty tmpfs over every hidden root, then bind the kept paths back (by open descriptor: their old path
    is gone once the roots are covered)."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    keeps = [(p, False) for p in spec.keep_ro] + [(spec.sandbox_dir, True)]
    handles = [(path, writable, os.open(path, os.O_PATH)) for path, writable in keeps
               if any(_under(path, root) for root in spec.hide)]
    roots = _cover_roots(spec)
    for path, writable, fd in handles:
        _bind_back(path, writable, fd)
    for root in roots:  # the tmpfs skeletons go read-only: the only writable place is the sandbox folder
        _mount(None, root, None, MS_REMOUNT | MS_NOSUID | MS_NODEV | MS_RDONLY, "size=64m,mode=0755")
    for path in spec.mask:  # inside a kept (read-only) path: an empty read-only tmpfs on top
        if os.path.isdir(path):
            _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "size=1m,mode=0755")


def apply_limits(spec: Spec) -> None:
    import resource

    def cap(kind: int, value: int) -> None:
        soft_hard = resource.getrlimit(kind)
        hard = value if soft_hard[1] == resource.RLIM_INFINITY else min(value, soft_hard[1])
        resource.setrlimit(kind, (hard, hard))

    if spec.memory_mb > 0:
        cap(resource.RLIMIT_AS, spec.memory_mb * 2**20)
    cap(resource.RLIMIT_CPU, spec.cpu_s)
    cap(resource.RLIMIT_FSIZE, spec.fsize_mb * 2**20)
    cap(resource.RLIMIT_NOFILE, spec.nofile)
    cap(resource.RLIMIT_CORE, 0)
    if spec.uid is not None:  # counted per user: only meaningful with a user id of the submission's own
        cap(resource.RLIMIT_NPROC, spec.nproc)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversized write fails with EFBIG instead of killing


def drop_privileges(spec: Spec) -> None:
    if spec.uid is None:
        return
    os.setgroups([])
    os.setgid(spec.uid)
    os.setuid(spec.uid)
