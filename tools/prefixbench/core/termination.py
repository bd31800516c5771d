"""SIGTERM as an exception that is never lost: raised where the signal lands, and again at the next step if that
first one was swallowed.

Why: a Python signal handler runs wherever the main thread is, finalizers included, and Python cannot pass on an
exception raised inside one: urllib3 closes a pool's sockets from a ``weakref.finalize`` ("Exception ignored in")
and ``io``'s finalizer asks a response whether it is ``closed`` and drops any error silently. So a SIGTERM that
arrived while ``requests`` was finishing a scrape could vanish, and a ``g0g1`` the project's CI signalled as its
servers came up ran to the end and exited 0 (twice, 2026-12-05). A stress of the scrape loop alone lost 19 of 650
signals so. Here the handler also notes each signal, and ``check_terminated`` (called where a command starts new
work: a batch of requests, a server, the end of a run) raises it again if it was never delivered. Where a command
catches the interrupt it forgets the arrivals, so a signal whose exception did arrive is not raised twice. A Ctrl-C
that Python reported as swallowed ("Exception ignored": ``note_swallowed``) is raised again the same way, as a
``KeyboardInterrupt``; one ``io``'s finalizer dropped silently is not seen (Python's own handler notes nothing).
One that Python reported after the command's last step is named as the command ends (``cli.signals``), not raised:
the command's results are written after that point.
"""

from __future__ import annotations

import signal
from types import FrameType


class Terminated(KeyboardInterrupt):
    """SIGTERM (or another terminating signal) arrived; ``signum`` says which."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


_arrived: list[int] = []
"""Signals ``raise_terminated`` raised for (and Ctrl-Cs Python reported swallowed) that no ``check_terminated``
has raised again and no command has handled since."""
_swallowed: list[int] = []
"""Those of them whose exception Python reported as raised inside a finalizer, so certainly lost."""


def raise_terminated(signum: int, frame: FrameType | None) -> None:
    """The SIGTERM handler of a command (``cli.signals``): noted, then raised where the main thread is."""
    _arrived.append(signum)
    raise Terminated(signum)


def check_terminated() -> None:
    """Raise the interruption of a signal that arrived and whose exception may have been swallowed (see the
    module): ``Terminated``, or ``KeyboardInterrupt`` for a Ctrl-C; a SIGTERM wins over a Ctrl-C, as the one that
    stops a command for good. Each arrival is raised here once at most. Without the command's handler (a notebook,
    a script) nothing arrives."""
    signum = _weightiest(_arrived)
    if signum is not None:
        forget_arrivals()
        raise KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)


def _weightiest(noted: list[int]) -> int | None:
    """The last signal of ``noted`` other than Ctrl-C, else a Ctrl-C, else ``None``."""
    return next((s for s in reversed(noted) if s != signal.SIGINT), noted[-1] if noted else None)


def note_swallowed(signum: int) -> None:
    """Python reported the interruption of ``signum`` as unraisable: a finalizer dropped it (``cli.signals``'
    hook), so the next step raises it again."""
    _swallowed.append(signum)
    if signum not in _arrived:  # a Ctrl-C: Python's own handler noted nothing
        _arrived.append(signum)


def forget_arrivals() -> None:
    """Where an interruption is caught and handled, and where a command starts (tests call several in one
    process)."""
    _arrived.clear()
    _swallowed.clear()


def arrived() -> int | None:
    """The signal ``check_terminated`` would raise now (``None``: none)."""
    return _weightiest(_arrived)


def swallowed() -> int | None:
    """Of the signals known lost in a finalizer and not yet raised again or handled, the one that counts (a
    SIGTERM before a Ctrl-C; ``None``: none)."""
    return _weightiest(_swallowed)
