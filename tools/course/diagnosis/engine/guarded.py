"""Calling student code without letting it hang, exit or print over the diagnosis.

A time limit (SIGALRM in the main thread, else a daemon thread), prints swallowed, and any exception caught,
``SystemExit`` included.
"""

from __future__ import annotations

import contextlib
import io
import signal
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping

from .catalogue import DEFAULT_CALL_TIMEOUT_S

if TYPE_CHECKING:
    from types import FrameType


class _Deadline(BaseException):
    """Raised into student code by the alarm; a BaseException, so `except Exception` in student code cannot
    swallow it."""


@dataclass
class Outcome:
    value: Any = None
    error: BaseException | None = None
    timed_out: bool = False
    cpu_s: float = 0.0
    """CPU time of the call's own thread: unlike wall time, not inflated when other processes take the CPU."""
    raised_in_function: bool = False
    """The exception came from the function's own body, not from a helper it called."""


def _raised_in(fn: Callable, exc: BaseException) -> bool:
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code is getattr(fn, "__code__", None)


def _timed(fn: Callable, args: tuple, kwargs: dict, box: Outcome) -> None:
    start = time.thread_time()
    try:
        box.value = fn(*args, **kwargs)
    finally:
        box.cpu_s = time.thread_time() - start


def _swallowing_prints() -> contextlib.ExitStack[bool | None]:
    """Student prints would bury the diagnosis; the redirect is process-wide, so always enter it in the
    caller's thread (an abandoned worker thread would never leave it)."""
    stack = contextlib.ExitStack()
    stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
    stack.enter_context(contextlib.redirect_stderr(io.StringIO()))
    return stack


def _call_with_alarm(fn: Callable, args: tuple, kwargs: dict, timeout_s: float) -> Outcome:
    box = Outcome()
    armed = True

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        if armed:
            raise _Deadline()

    previous_handler = signal.signal(signal.SIGALRM, on_alarm)
    previous_timer = (0.0, 0.0)
    started = time.monotonic()
    try:
        with _swallowing_prints():  # entered before the timer starts, left after it stops
            try:
                # The timer re-fires every 50 ms until disarmed: a loop that catches one alarm meets the next.
                previous_timer = signal.setitimer(signal.ITIMER_REAL, timeout_s, 0.05)
                _timed(fn, args, kwargs, box)
            finally:
                armed = False
                signal.setitimer(signal.ITIMER_REAL, 0)
    except _Deadline:
        box.timed_out = True
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - SystemExit and friends from student code are findings
        box.error, box.raised_in_function = exc, _raised_in(fn, exc)
    finally:
        signal.signal(signal.SIGALRM, previous_handler)
        if previous_timer[0] > 0:  # give an outer timer (a grader's own) its remaining time back
            left = max(previous_timer[0] - (time.monotonic() - started), 1e-3)
            signal.setitimer(signal.ITIMER_REAL, left, previous_timer[1])
    return box


def _call_in_thread(fn: Callable, args: tuple, kwargs: dict, timeout_s: float) -> Outcome:
    """Fallback off the main thread or without SIGALRM: a runaway call is abandoned in a daemon thread."""
    box = Outcome()

    def target() -> None:
        try:
            _timed(fn, args, kwargs, box)
        except BaseException as exc:  # noqa: BLE001
            box.error, box.raised_in_function = exc, _raised_in(fn, exc)

    worker = threading.Thread(target=target, name="diagnosis-probe", daemon=True)
    with _swallowing_prints():
        worker.start()
        worker.join(timeout_s)
    if worker.is_alive():
        return Outcome(timed_out=True)
    return box


def call_guarded(fn: Callable, args: tuple = (), kwargs: Mapping | None = None,
                 timeout_s: float = DEFAULT_CALL_TIMEOUT_S) -> Outcome:
    """Call student code without letting it hang, exit or print over the diagnosis."""
    kwargs = dict(kwargs or {})
    if hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread():
        return _call_with_alarm(fn, args, kwargs, timeout_s)
    return _call_in_thread(fn, args, kwargs, timeout_s)
