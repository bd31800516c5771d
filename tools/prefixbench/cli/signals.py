"""One signal policy for every command: SIGTERM unwinds like Ctrl-C.

Why: a benchmark killed by a scheduler or ``timeout`` must stop the servers it started and write what it
measured, exactly as after Ctrl-C. So SIGTERM raises ``Terminated`` (a ``KeyboardInterrupt``) in the main
thread; every ``except KeyboardInterrupt`` / ``finally`` on the way out runs. A command that turns the
interrupt into a written partial result exits 3; one that lets it reach ``main`` exits 128 + the signal.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from types import FrameType
from typing import Iterator


class Terminated(KeyboardInterrupt):
    """SIGTERM (or another terminating signal) arrived; ``signum`` says which."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated(signum)


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """While inside, SIGTERM raises ``Terminated``; the previous handler comes back afterwards.

    Signal handlers can only be set from the main thread: elsewhere (a test calling ``main`` from a thread)
    this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
