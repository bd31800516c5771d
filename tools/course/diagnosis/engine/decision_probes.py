"""Probes of the three decision functions (summarize, compare, recommend), checked against the library's own.

The oracle is tools.prefixbench.decision, imported on first use.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from .catalogue import COMPARISON_KEYS, DECISION_KEYS
from .probing import Failure, Probe, Runner, call_text, field_diffs, mismatch_detail, same_value


def _oracle(name: str) -> Callable:
    from tools.prefixbench import decision

    return getattr(decision, name)


def value_probe(probe_id: str, exercise: str, visibility: str, args: tuple, keys: Sequence[str],
                hint: tuple[str, str], *, targets: str = "other",
                symptom: Callable[[Mapping, Mapping], bool] | None = None) -> Probe:
    """The student's result must match the library's on ``keys``; ``symptom(got, want)`` names the mistake."""

    def check(run: Runner) -> Failure | None:
        got = run.result(*args, keys=keys)
        want = _oracle(exercise)(*args)
        diffs = field_diffs(got, want, [key for key in keys if key != "reason"])
        if "reason" in keys and not (isinstance(got["reason"], str) and got["reason"].strip()):
            diffs.append(f"reason expected a non-empty string, got {got['reason']!r}")
        if not diffs:
            return None
        code = targets if targets != "other" and symptom is not None and symptom(got, want) else "other"
        return Failure(code, mismatch_detail(call_text(run.name, args, {}), diffs))

    return Probe(probe_id, exercise, visibility, targets, hint[0], hint[1], ((args, {}),), check)


def value_error_probe(probe_id: str, exercise: str, visibility: str, args: tuple, control_args: tuple, *,
                      targets: str, keys: Sequence[str], hint: tuple[str, str]) -> Probe:
    """Must raise ValueError; blamed on ``targets`` when the same call with the bad value fixed (the control)
    returns the library's answer on ``keys``."""

    def control_is_right(run: Runner) -> bool:
        outcome = run.call(*control_args)
        if outcome.timed_out or outcome.error is not None or not isinstance(outcome.value, Mapping):
            return False
        want = _oracle(exercise)(*control_args)
        return all(same_value(outcome.value.get(key), want[key]) for key in keys)

    def check(run: Runner) -> Failure | None:
        ok, did = run.raises_value_error(*args)
        if ok:
            return None
        return Failure(targets if control_is_right(run) else "other", did)

    return Probe(probe_id, exercise, visibility, targets, hint[0], hint[1], ((args, {}), (control_args, {})), check)


def flipped_signs(got: Mapping, want: Mapping) -> bool:
    """Every delta right or exactly negated, at least one negated: a sign mistake, not an arithmetic one."""
    flipped = False
    for key in COMPARISON_KEYS:
        g, w = got.get(key), want[key]
        if same_value(g, w):
            continue
        if w != 0 and same_value(g, -w):
            flipped = True
            continue
        return False
    return flipped


def decision_probe(probe_id: str, visibility: str, args: tuple, hint: tuple[str, str], *, targets: str = "other",
                   symptom: Callable[[Mapping], bool] | None = None, control: tuple | None = None) -> Probe:
    """recommend_prefix_cache_run's decision and next_action must match the library's; ``control`` is a second
    argument tuple that must come out right for the failure to be blamed on ``targets``."""
    exercise = "recommend_prefix_cache_run"

    def failure_for(run: Runner, call_args: tuple) -> tuple[str, Mapping]:
        got = run.result(*call_args, keys=DECISION_KEYS)
        want = _oracle(exercise)(*call_args)
        diffs = field_diffs(got, want, ("decision", "next_action"))
        if not (isinstance(got["reason"], str) and got["reason"].strip()):
            diffs.append(f"reason expected a non-empty string, got {got['reason']!r}")
        detail = mismatch_detail(call_text(run.name, call_args, {}), diffs) if diffs else ""
        return detail, got

    def check(run: Runner) -> Failure | None:
        detail, got = failure_for(run, args)
        if not detail:
            return None
        if targets == "other" or symptom is None or not symptom(got):
            return Failure("other", detail)
        if control is not None and failure_for(run, control)[0]:  # the control fails too: not this mistake
            return Failure("other", detail)
        return Failure(targets, detail)

    inputs: tuple = tuple((a, {}) for a in ([args] + ([control] if control else [])))
    return Probe(probe_id, exercise, visibility, targets, hint[0], hint[1], inputs, check)


def accepts_or_tunes(got: Mapping) -> bool:
    return got.get("decision") in ("accept", "tune")
