"""Run student code where it cannot reach what it must not: the kernel nbgrader starts, and the diagnosis run.

The grading worker itself stays trusted (it runs nbgrader and owns the gradebook); only the processes that execute
student code go through ``python -m tools.course.sandbox_launch SPEC -- CMD...``, which, as far as the machine
allows (``capabilities()`` says what it allows, and the run report records it):

- hides the repository, the grading output (course, gradebook, other students' work), the submissions folder,
  the grader's home and the shared temporary folders behind empty tmpfs mounts in a private mount namespace,
  keeping only the Python installation (less nbgrader itself: the kernel never needs the grader's code),
  ``tools/prefixbench`` and the trace folder (read-only) and the submission's own sandbox folder (read-write);
- runs in a new network namespace (no network at all; the kernel talks to nbgrader over Unix sockets);
- drops to a user id of its own (one per submission, so students cannot read each other's files or signal each
  other's processes) and applies rlimits on address space, CPU time, processes, file size and open files;
- caps the output the kernel sends (printed, displayed or a cell's result), per cell and per notebook (the rest is
  dropped with one note).

Without root or without namespaces the same command still applies the rlimits and the clean environment, and
the report says which protections were missing.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import config

SPEC_ENV = "PREFIXBENCH_SANDBOX_SPEC"
UID_BASE = 2_000_000
"""Sandbox user ids are far above any real account, never in /etc/passwd: a run's block start + the submission's
index."""
UID_BLOCK, UID_BLOCKS = 100_000, 20_000
"""Each run takes a block of UID_BLOCK ids (one of UID_BLOCKS, below 2**31) that no running process uses: two
grading runs on one machine must never share an id, since everything of a sandbox id is killed after grading."""


@dataclass
class Spec:
    """How one submission's student code is confined; written as JSON next to the sandbox folder."""
    sandbox_dir: str
    uid: int | None = None  # None: keep the grader's user (not root, or privileges unavailable)
    isolate: bool = False  # private mount + network namespaces (needs root and unshare)
    hide: list[str] = field(default_factory=list)
    keep_ro: list[str] = field(default_factory=list)
    mask: list[str] = field(default_factory=list)  # folders inside kept paths covered again (the grader's code)
    memory_mb: int = 4096  # 0: no address-space limit
    cpu_s: int = 900
    nproc: int = 128
    fsize_mb: int = 64
    nofile: int = 1024
    output_chars: int = 2_000_000  # per cell (one execute request)
    output_total_chars: int = 20_000_000  # for the whole notebook
    env: dict[str, str] = field(default_factory=dict)

    def write(self, path: Path) -> Path:
        Path(path).write_text(json.dumps(asdict(self), indent=1), encoding="utf-8")
        return Path(path)

    @classmethod
    def read(cls, path: Path) -> "Spec":
        return cls(**json.loads(Path(path).read_text(encoding="utf-8")))


# --- what the machine allows ----------------------------------------------------------------------------------

def capabilities() -> dict:
    """Probe once per run: can we change user, and make private mount and network namespaces?"""
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    unshare = shutil.which("unshare")
    namespaces = False
    if root and unshare:
        probe = subprocess.run([unshare, "--net", "--mount", "true"], capture_output=True)
        namespaces = probe.returncode == 0
    return {"root": root, "namespaces": namespaces, "unshare": unshare, "uid_base": pick_uid_base() if root else None}


def pick_uid_base() -> int:
    """The first id of a block no running process uses, starting from one that depends on this process's id."""
    import psutil

    in_use = set()
    for proc in psutil.process_iter(["uids"]):
        uids = proc.info.get("uids")
        if uids and uids.real >= UID_BASE:
            in_use.add(uids.real)
    first = os.getpid() % UID_BLOCKS
    for step in range(UID_BLOCKS):
        base = UID_BASE + (first + step) % UID_BLOCKS * UID_BLOCK
        if not any(base <= uid < base + UID_BLOCK for uid in in_use):
            return base
    return UID_BASE + first * UID_BLOCK


def protections(caps: dict, spec: Spec) -> dict:
    """What was in force, in words, for the run report (results.json)."""
    limits = (f"address space {spec.memory_mb or 'unlimited'} MB, CPU {spec.cpu_s} s, {spec.nproc} processes, "
              f"files up to {spec.fsize_mb} MB, {spec.nofile} open files, output {spec.output_chars} characters per cell "
              f"and {spec.output_total_chars} per notebook")
    return {
        "user": (f"one unprivileged user id per submission (from {UID_BASE})" if spec.uid is not None
                 else "the grader's own user (not running as root: no user switch)"),
        "filesystem": ("private mount namespace: repository, grading output, submissions, home and /tmp hidden; "
                       "only the Python installation, tools/prefixbench and traces (read-only) and the submission's "
                       "sandbox folder visible" if spec.isolate
                       else "NOT isolated (no mount namespace): student code can read what the grader's user can"),
        "network": ("new network namespace: no network, not even loopback" if spec.isolate
                    else "NOT isolated: no network namespace on this machine"),
        "limits": limits,
        "environment": "clean: only the variables the notebook needs",
    }


def make_spec(caps: dict, sandbox_dir: Path, index: int, *, hide: list[Path], memory_mb: int, cpu_s: float,
              keep_ro: list[Path] = (), env: dict | None = None) -> Spec:
    """A spec for submission number ``index``; creates its sandbox folder, owned by the sandbox user."""
    sandbox_dir = Path(sandbox_dir)
    sandbox_dir.mkdir(parents=True, exist_ok=True)
    uid = (caps.get("uid_base") or UID_BASE) + index if caps["root"] else None
    if uid is not None:
        os.chown(sandbox_dir, uid, uid)
    sandbox_dir.chmod(0o700)
    repo = config.REPO_ROOT
    keep = [Path(sys.base_prefix).resolve(), Path(sys.prefix), repo / "tools" / "__init__.py",
            repo / "tools" / "prefixbench", *keep_ro]
    hidden = [repo, repo.parent, Path.home(), Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"), *hide]
    hidden = [str(p.resolve()) for p in hidden if p.exists() and p.resolve() != Path("/")]
    return Spec(sandbox_dir=str(sandbox_dir), uid=uid, isolate=caps["namespaces"], hide=sorted(set(hidden)),
                keep_ro=[str(p) for p in keep if p.exists()], mask=grader_packages(), memory_mb=memory_mb,
                cpu_s=int(cpu_s) + 1, env=dict(env or {}))


def grader_packages() -> list[str]:
    """Folders of the grader's own packages inside the kept Python installation, hidden from student code."""
    import importlib.util

    found = []
    for name in ("nbgrader",):
        spec = importlib.util.find_spec(name)
        for location in (spec.submodule_search_locations or []) if spec else []:
            if Path(location).is_dir():
                found.append(str(Path(location).resolve()))
    return found


def wrap(cmd: list[str], spec_path: Path, spec: Spec) -> list[str]:
    """The command that runs ``cmd`` confined by the spec."""
    launcher = [sys.executable, "-m", "tools.course.sandbox_launch", str(spec_path), "--", *cmd]
    if spec.isolate:
        return [shutil.which("unshare") or "unshare", "--net", "--mount", "--", *launcher]
    return launcher


def count_user_processes(uid: int | None) -> int:
    """How many processes the sandbox user has now (0 without a user of its own)."""
    if uid is None:
        return 0
    import psutil

    return sum(1 for p in psutil.process_iter(["uids"]) if p.info.get("uids") and p.info["uids"].real == uid)


def kill_user_processes(uid: int | None, rounds: int = 3) -> None:
    """Kill every process of the sandbox user (a fork bomb's children included; they may have left the tree).

    A child process becomes the sandbox user and sends SIGKILL to everything that user runs (``kill(-1)``), a few
    rounds apart (a fork bomb may fork between two), and stops as soon as nothing is left to signal: with nothing
    running, that is one system call. (Not "until nothing is left": unreaped zombies still count as signalled.)"""
    if uid is None:
        return
    pid = os.fork()
    if pid == 0:
        try:
            os.setgid(uid)
            os.setuid(uid)
            for _ in range(rounds):
                os.kill(-1, signal.SIGKILL)
                time.sleep(0.02)
        except BaseException:  # ProcessLookupError: nothing of this user is left
            pass
        os._exit(0)
    os.waitpid(pid, 0)


# --- inside the launcher (root, before the student code) ------------------------------------------------------

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


def hide_paths(spec: Spec) -> None:
    """Empty tmpfs over every hidden root, then bind the kept paths back (by open descriptor: their old path
    is gone once the roots are covered)."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    keeps = [(p, False) for p in spec.keep_ro] + [(spec.sandbox_dir, True)]
    handles = []
    for path, writable in keeps:
        if any(_under(path, root) for root in spec.hide):
            handles.append((path, writable, os.open(path, os.O_PATH)))
    roots = []
    for root in sorted(spec.hide, key=len):
        if not any(_under(root, done) for done in roots):
            roots.append(root)
            _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=0755")
    for path, writable, fd in handles:
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            os.makedirs(path, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            Path(path).touch()
        _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        if not writable:
            _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID)
        os.close(fd)
    for root in roots:  # the tmpfs skeletons go read-only: the only writable place is the sandbox folder
        _mount(None, root, None, MS_REMOUNT | MS_NOSUID | MS_NODEV | MS_RDONLY, "size=64m,mode=0755")
    for path in spec.mask:  # inside a kept (read-only) path: an empty read-only tmpfs on top
        if os.path.isdir(path):
            _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "size=1m,mode=0755")


def apply_limits(spec: Spec) -> None:
    import resource

    def cap(kind, value):
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
