"""One user id per submission: picked so that no running process has it, counted and killed after grading.

Why a user of its own: students cannot read each other's files or signal each other's processes, and
everything that user runs can be killed at once, even processes that left the kernel's tree.
"""

from __future__ import annotations

import os
import signal
import time

UID_BASE = 2_000_000
"""Sandbox user ids are far above any real account, never in /etc/passwd: a run's block start + the submission's
index."""
UID_BLOCK, UID_BLOCKS = 100_000, 20_000
"""Each run takes a block of UID_BLOCK ids (one of UID_BLOCKS, below 2**31) that no running process uses: two
grading runs on one machine must never share an id, since everything of a sandbox id is killed after grading."""


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
