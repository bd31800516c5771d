"""From probe failures to findings: one per (exercise, mistake), a named mistake hiding the general ``other``.

A probe is blamed on its mistake only when it fails with the symptom and its control passes (the probe
builders decide that); here failures are grouped, and messages filled from the catalogue.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from .catalogue import CATALOGUE, DEFAULT_CALL_TIMEOUT_S, EXERCISES, VISIBILITIES
from .probe_set import HIDDEN_AVAILABLE, PROBES
from .probing import Failure, Probe, Runner, Stop


@dataclass(frozen=True)
class Finding:
    code: str
    exercise: str
    message_zh: str
    message_en: str
    probes: tuple[str, ...] = ()
    """Ids of the visible probes behind this finding."""
    hidden_probes: int = 0
    """How many hidden probes agree with it (their ids and inputs are not shown)."""
    details: tuple[str, ...] = ()
    """What a visible probe called and what came back; never from a hidden probe."""


def make_finding(exercise: str, code: str, failures: list[tuple[Probe, Failure]]) -> Finding:
    mistake = CATALOGUE[code]
    note = next((f.note for _, f in failures if f.note), "")
    zh, en = mistake.zh.format(note=note), mistake.en.format(note=note)
    if code in ("other", "raised_exception"):
        probe = failures[0][0]  # what to look at: the first failing probe's hint
        zh, en = f"{zh} 重点看：{probe.hint_zh}", f"{en} Look at: {probe.hint_en}"
    visible = [(p, f) for p, f in failures if p.visibility == "visible"]
    return Finding(
        code=code, exercise=exercise, message_zh=zh, message_en=en,
        probes=tuple(dict.fromkeys(p.id for p, _ in visible)),
        hidden_probes=sum(1 for p, _ in failures if p.visibility != "visible"),
        details=tuple(dict.fromkeys(f.detail for _, f in visible if f.detail))[:3],
    )


def findings_for(exercise: str, failures: list[tuple[Probe, Failure]]) -> list[Finding]:
    """One finding per code; 'other' only when nothing more specific explains the failures."""
    by_code: dict[str, list[tuple[Probe, Failure]]] = {}
    for probe, failure in failures:
        by_code.setdefault(failure.code, []).append((probe, failure))
    if "not_implemented" in by_code:
        return [make_finding(exercise, "not_implemented", by_code["not_implemented"])]
    specific = [code for code in by_code if code != "other"]
    codes = specific or list(by_code)
    return [make_finding(exercise, code, by_code[code]) for code in codes]


def probe_function(name: str, fn: Callable, probes: list[Probe], call_timeout_s: float) -> list[tuple[Probe, Failure]]:
    runner = Runner(name, fn, call_timeout_s)
    failures: list[tuple[Probe, Failure]] = []
    for probe in probes:
        try:
            failure = probe.check(runner)
        except Stop as stop:
            failure = stop.failure
        except Exception as exc:  # noqa: BLE001 - a result too odd to compare is a failure, not a crash
            failure = Failure("other", f"{name}: result could not be compared ({type(exc).__name__})")
        if failure is not None:
            failures.append((probe, failure))
            if failure.code in ("not_implemented", "timed_out"):
                break  # an unfinished or hanging function would fail every later probe the same way
    return failures


def _as_namespace(functions: Any) -> Mapping:
    return functions if isinstance(functions, Mapping) else vars(functions)


def diagnose(functions: Any, visibility: Iterable[str] | str = ("visible",), *,
             exercises: Iterable[str] | None = None,
             call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S) -> list[Finding]:
    """Run the probes of the given visibilities against the student's functions and name their mistakes.

    ``functions``: a mapping from exercise name to function (``globals()`` of the notebook works) or a module.
    Returns one Finding per (exercise, mistake), in exercise order; an empty list means no probe failed.
    """
    namespace = _as_namespace(functions)
    wanted = {visibility} if isinstance(visibility, str) else set(visibility)
    if isinstance(exercises, str):
        exercises = [exercises]
    if not wanted or not wanted <= set(VISIBILITIES):
        raise ValueError(f"visibility must be a non-empty subset of {VISIBILITIES}, got {sorted(wanted)}")
    if "hidden" in wanted and not HIDDEN_AVAILABLE:
        raise ValueError("this copy of the diagnosis has no hidden probes (the student distribution)")
    selected = list(EXERCISES) if exercises is None else [e for e in EXERCISES if e in set(exercises)]
    if exercises is not None and len(selected) != len(set(exercises)):
        raise ValueError(f"unknown exercise in {sorted(set(exercises))}; choose from {EXERCISES}")
    findings: list[Finding] = []
    for exercise in selected:
        fn = namespace.get(exercise)
        if not callable(fn):
            findings.append(make_finding(exercise, "missing_function", []))
            continue
        probes = [p for p in PROBES if p.exercise == exercise and p.visibility in wanted]
        found = findings_for(exercise, probe_function(exercise, fn, probes, call_timeout_s))
        if exercise == "recommend_prefix_cache_run" and found and found[0].code not in (
                "not_implemented", "missing_function"):
            compare_failed = any(f.exercise == "compare_prefix_cache_to_baseline" for f in findings)
            if compare_failed:  # its failures may be compare's; say so instead of guessing
                found = [make_finding(exercise, "fix_compare_first", [])]
        findings.extend(found)
    return findings
