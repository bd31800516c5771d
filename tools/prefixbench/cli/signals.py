"""One signal policy for every command: SIGTERM unwinds like Ctrl-C.

Why: a benchmark killed by a scheduler or ``timeout`` must stop the servers it started and write what it
measured, exactly as after Ctrl-C. So SIGTERM raises ``Terminated`` (a ``KeyboardInterrupt``) in the main
thread; every ``except KeyboardInterrupt`` / ``finally`` on the way out runs. A command that turns the
interrupt into a written partial result exits 3; one that lets it reach ``main`` exits 128 + the signal.
An exception a finalizer swallowed is raised again at the command's next step (``core.termination``).
"""

from __future__ import annotations

import signal
import sys
import threading
from contextlib import contextmanager
from typing import Any, Iterator

from ..core.termination import Terminated, forget_arrivals, note_swallowed, raise_terminated, swallowed

__all__ = ["Terminated", "terminate_as_interrupt"]


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """While inside, SIGTERM raises ``Terminated``; the previous handler comes back afterwards.

    A ``Terminated`` (or a Ctrl-C's ``KeyboardInterrupt``) that Python could only report as "Exception ignored"
    (raised inside a finalizer) is not printed: ``core.termination.check_terminated`` raises it again where the
    command goes on. One that no later step raised is named in one line as the block ends, not raised: the
    command writes its results after the block, and a run that had ended keeps them. A ``Terminated`` the caller
    caught itself is its own business.

    Signal handlers can only be set from the main thread: elsewhere (a test calling ``main`` from a thread)
    this does nothing; nor does a block inside another (the outer one keeps the policy and its arrivals).
    """
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGTERM) is raise_terminated):
        yield
        return
    forget_arrivals()
    previous_hook = sys.unraisablehook

    def unraisable(report: Any) -> None:
        if isinstance(report.exc_value, Terminated):
            note_swallowed(report.exc_value.signum)
        elif type(report.exc_value) is KeyboardInterrupt:  # Ctrl-C, from Python's own handler
            note_swallowed(signal.SIGINT)
        else:
            previous_hook(report)

    previous = signal.signal(signal.SIGTERM, raise_terminated)
    sys.unraisablehook = unraisable
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        sys.unraisablehook = previous_hook
        lost = swallowed()
        forget_arrivals()
    if lost is not None:  # a finalizer dropped it after the command's last step: the run had ended
        print(f"note: a {signal.Signals(lost).name} came after the run's last step (a finalizer dropped its exception);"
              " the results are written as they stand", file=sys.stderr)
