"""What a probe is, and the runner it calls a student function through.

A probe returns a ``Failure`` (a catalogue code and what went wrong) or None; a call that gives no usable
result ends the probe early (``Stop``). The comparison helpers never raise, whatever the student returned.
"""

from __future__ import annotations

import copy
import math
import numbers
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, NoReturn

from .catalogue import EXERCISE_BUDGET_S
from .guarded import Outcome, call_guarded


@dataclass(frozen=True)
class Failure:
    code: str
    detail: str = ""
    """May quote the probe's inputs and expected values: shown for visible probes only."""
    note: str = ""
    """Safe for any probe (an exception type, missing key names, a time limit): fills the message's {note}."""


class Stop(Exception):
    """A call gave no usable result (not implemented, timed out, crashed): ends the probe with ``failure``."""

    def __init__(self, failure: Failure):
        super().__init__(failure.code)
        self.failure = failure


def call_text(name: str, args: tuple, kwargs: Mapping, limit: int = 220) -> str:
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    text = f"{name}({', '.join(parts)})"
    return text if len(text) <= limit else text[:limit - 4] + " ...)"


class Runner:
    """One student function, its time limits, and the ways a probe may call it."""

    def __init__(self, name: str, fn: Callable, call_timeout_s: float, budget_s: float = EXERCISE_BUDGET_S):
        self.name, self.fn, self.call_timeout_s = name, fn, call_timeout_s
        self.deadline = time.monotonic() + budget_s

    def call(self, *args: Any, _timeout_s: float | None = None, _copy: bool = True, **kwargs: Any) -> Outcome:
        if _copy:  # student code may mutate its inputs; probes reuse theirs
           args, kwargs = copy.deepcopy((args, kwargs))
        limit = min(_timeout_s or self.call_timeout_s, max(self.deadline - time.monotonic(), 0.0))
        if limit <= 0:
           return Outcome(timed_out=True)
        return call_guarded(self.fn, args, kwargs, limit)

    def stop_failure(self, outcome: Outcome, args: tuple, kwargs: Mapping) -> Failure | None:
        """The finding for a call that gave no result, or None when it returned normally."""
        where = call_text(self.name, args, kwargs)
        if outcome.timed_out:
           return Failure("timed_out", f"{where} did not return", f"{self.call_timeout_s:g} s")
        if outcome.error is None:
           return None
        kind = type(outcome.error).__name__
        if isinstance(outcome.error, NotImplementedError) and outcome.raised_in_function:
           return Failure("not_implemented")  # the call itself adds nothing: every call raises
        return Failure("raised_exception", f"{where} raised {kind}: {outcome.error}", kind)

    def stop(self, outcome: Outcome, args: tuple, kwargs: Mapping) -> NoReturn:
        """End the probe with the finding for a call that gave no result (timed out, not implemented, raised)."""
        failure = self.stop_failure(outcome, args, kwargs)
        assert failure is not None, "stop is called only for an outcome without a result"
        raise Stop(failure)

    def result(self, *args: Any, keys: Iterable[str] = (), **kwargs: Any) -> Mapping:
        """The call's dict result; anything else ends the probe (``Stop``)."""
        outcome = self.call(*args, **kwargs)
        failure = self.stop_failure(outcome, args, kwargs)
        if failure:
            raise Stop(failure)
        value = outcome.value
        if not isinstance(value, Mapping):
            raise Stop(Failure("missing_keys", f"{call_text(self.name, args, kwargs)} returned "
                                               f"{type(value).__name__}", f"got {type(value).__name__}"))
        missing = [key for key in keys if key not in value]
        if missing:
            raise Stop(Failure("missing_keys", f"{call_text(self.name, args, kwargs)} lacks {missing}",
                               f"missing {missing}"))
        return value

    def raises_value_error(self, *args: Any, **kwargs: Any) -> tuple[bool, str]:
        """(True, "") when the call raises ValueError; else (False, what it did instead)."""
        outcome = self.call(*args, **kwargs)
        if outcome.timed_out or (isinstance(outcome.error, NotImplementedError) and outcome.raised_in_function):
            self.stop(outcome, args, kwargs)
        if isinstance(outcome.error, ValueError):
            return True, ""
        did = "returned normally" if outcome.error is None else f"raised {type(outcome.error).__name__}"
        return False, f"{call_text(self.name, args, kwargs)} {did}, expected ValueError"


@dataclass(frozen=True)
class Probe:
    id: str
    exercise: str
    visibility: str
    targets: str
    """The mistake this probe exists to reveal ('other' for a general check)."""
    hint_zh: str
    hint_en: str
    inputs: tuple
    """Every (args, kwargs) the probe may pass, for audits (the hidden-leak test); generated cases excluded."""
    check: Callable[[Runner], Failure | None]


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def same_value(got: Any, want: Any) -> bool:
    """Equal, floats within rounding; never raises whatever the student returned (numpy arrays included)."""
    if want is None or got is None:
        return got is want
    try:
        if _is_number(want):
            return _is_number(got) and math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12)
        return bool(got == want)
    except Exception:  # noqa: BLE001 - an odd value is simply not equal
        return False


def field_diffs(got: Mapping, want: Mapping, keys: Iterable[str]) -> list[str]:
    return [f"{key} expected {want[key]!r}, got {got.get(key)!r}" for key in keys
            if not same_value(got.get(key), want[key])]


def mismatch_detail(call: str, diffs: list[str]) -> str:
    return f"{call}: {'; '.join(diffs[:2])}"


def _short(value: Any, limit: int = 160) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 4] + " ..."


def mutation_probe(probe_id: str, exercise: str, visibility: str, args: tuple, hint: tuple[str, str],
                   kwargs: Mapping | None = None) -> "Probe":
    """The contract says no function modifies its arguments: call on a private copy of ``args``, then compare
    that copy with the original (an in-place sort, a pop, a key written into a dict all show)."""
    kwargs = dict(kwargs or {})

    def check(run: Runner) -> Failure | None:
        mine_args, mine_kwargs = copy.deepcopy((args, kwargs))
        outcome = run.call(*mine_args, _copy=False, **mine_kwargs)
        if outcome.timed_out or (isinstance(outcome.error, NotImplementedError) and outcome.raised_in_function):
            run.stop(outcome, args, kwargs)
        for index, (before, after) in enumerate(zip(args, mine_args, strict=True)):
            try:
                changed = not bool(before == after)
            except Exception:  # noqa: BLE001 - something too odd to compare has changed
                changed = True
            if changed:
                return Failure("mutates_input", f"{call_text(run.name, args, kwargs)} changed argument {index + 1}: "
                                                f"before {_short(before)}, after {_short(after)}")
        for key, before in kwargs.items():
            if not bool(before == mine_kwargs[key]):
                return Failure("mutates_input", f"{call_text(run.name, args, kwargs)} changed {key}")
        return None

    return Probe(probe_id, exercise, visibility, "mutates_input", *hint, ((args, kwargs),), check)
