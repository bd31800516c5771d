"""The diagnosis engine names each known mistake, only that mistake, and never leaks hidden probes.

Every wrong implementation lives in tests/course/diagnosis/diagnosis_mutants.py next to an independent correct solution.
"""

from __future__ import annotations

import copy
import re
import signal
import threading
import time

import pytest

import diagnosis_mutants as m
from tools.course import diagnosis as d

BOTH = ("visible", "hidden")
SIMULATE, SUMMARIZE, COMPARE, RECOMMEND = d.EXERCISES
CJK = re.compile(r"[\u4e00-\u9fff]")

# (exercise, mutant, the exact codes it must get). Each mutant is diagnosed alone, the other three
# exercises keeping the reference solution.
MUTANTS = [
    (SIMULATE, m.simulate_partial_block_counted, {"partial_block_counted"}),
    (SIMULATE, m.simulate_position_keys, {"position_keys"}),
    # A lookup that does not stop is only visible with keys that do not name the prefix (see the mutant's
    # docstring and test_no_stop_with_prefix_keys_is_harmless), so this mutant carries both mistakes.
    (SIMULATE, m.simulate_no_stop_at_first_miss, {"position_keys", "no_stop_at_first_miss"}),
    (SIMULATE, m.simulate_head_first_eviction, {"head_first_eviction"}),
    (SIMULATE, m.simulate_head_first_release, {"head_first_eviction"}),
    (SIMULATE, m.simulate_o_capacity_eviction, {"o_capacity_eviction"}),
    (SIMULATE, m.simulate_seed_reference, {"position_keys", "head_first_eviction", "o_capacity_eviction"}),
    (SIMULATE, m.simulate_no_hit_refresh, {"hit_not_refreshed"}),
    (SIMULATE, m.simulate_capacity_off_by_one, {"capacity_off_by_one"}),
    (SIMULATE, m.simulate_then_clears_inputs, {"mutates_input"}),
    (SUMMARIZE, m.summarize_missing_metric_as_zero,
     {"missing_metric_as_zero", "invalid_value_accepted", "mixed_workloads_accepted"}),  # no check at all: every value rule fails
    (SUMMARIZE, m.summarize_empty_as_zero, {"missing_metric_as_zero"}),
    (SUMMARIZE, m.summarize_seed_reference,
     {"missing_metric_as_zero", "invalid_value_accepted", "mixed_workloads_accepted"}),  # no check at all: every value rule fails
    (SUMMARIZE, m.summarize_sorts_in_place, {"mutates_input"}),
    (SUMMARIZE, m.summarize_no_range_check, {"invalid_value_accepted"}),
    (SUMMARIZE, m.summarize_mixed_workloads, {"mixed_workloads_accepted"}),
    (COMPARE, m.compare_writes_into_candidate, {"mutates_input"}),
    (COMPARE, m.compare_nan_accepted, {"invalid_value_accepted"}),
    (COMPARE, m.compare_mixed_workloads, {"mixed_workloads_accepted"}),
    (COMPARE, m.compare_missing_metric_as_zero,
     {"missing_metric_as_zero", "invalid_value_accepted", "mixed_workloads_accepted"}),  # no check at all: every value rule fails
    (COMPARE, m.compare_wrong_delta_sign, {"wrong_delta_sign"}),
    (RECOMMEND, m.recommend_ttft_only_accept, {"ttft_only_accept"}),
    (RECOMMEND, m.recommend_unchecked_thresholds, {"unchecked_thresholds"}),
    (RECOMMEND, m.recommend_tune_without_ttft_gain, {"tune_without_ttft_gain"}),
]


def codes(findings):
    return {f.code for f in findings}


def hidden_fragments():
    """repr() of every list / dict a hidden probe passes, unless a visible probe passes the same thing."""

    def fragments(probe):
        out = set()
        for args, kwargs in probe.inputs:
            for value in list(args) + list(kwargs.values()):
                if isinstance(value, (list, dict)):
                    out.add(repr(value))
                if isinstance(value, list):
                    out.update(repr(item) for item in value if isinstance(item, (list, dict)))
        return out

    visible = set().union(*(fragments(p) for p in d.PROBES if p.visibility == "visible"))
    hidden = set().union(*(fragments(p) for p in d.PROBES if p.visibility == "hidden"))
    return hidden - visible


# ------------------------------------------------------------------------------------------ catalogue

def test_probe_set_is_well_formed():
    ids = [p.id for p in d.PROBES]
    assert len(ids) == len(set(ids))
    for probe in d.PROBES:
        assert probe.exercise in d.EXERCISES and probe.visibility in d.VISIBILITIES
        assert probe.targets in d.CATALOGUE
        assert CJK.search(probe.hint_zh) and not CJK.search(probe.hint_en)
    for mistake in d.NAMED_MISTAKES:
        assert any(p.targets == mistake and p.visibility == "visible" for p in d.PROBES), mistake
    for mistake in d.CATALOGUE.values():
        assert CJK.search(mistake.zh) and not CJK.search(mistake.en)
    # every named mistake has a wrong implementation below that must be told apart
    assert set(d.NAMED_MISTAKES) <= set().union(*(expected for _, _, expected in MUTANTS))


def test_hidden_probes_have_inputs_to_hide():
    assert hidden_fragments(), "the leak tests below would be vacuous"


# ------------------------------------------------------------------------------------------ right and wrong

@pytest.mark.parametrize("visibility", [("visible",), BOTH], ids=["visible", "visible+hidden"])
def test_reference_solution_gets_no_finding(visibility):
    assert d.diagnose(m.REFERENCE, visibility) == []


@pytest.mark.parametrize("visibility", [("visible",), BOTH], ids=["visible", "visible+hidden"])
@pytest.mark.parametrize("exercise, mutant, expected", MUTANTS, ids=[mu.__name__ for _, mu, _ in MUTANTS])
def test_each_mistake_gets_its_own_diagnosis(exercise, mutant, expected, visibility):
    findings = d.diagnose(m.with_reference(**{exercise: mutant}), visibility)
    assert codes(findings) == expected
    assert {f.exercise for f in findings} == {exercise}
    for finding in findings:
        assert CJK.search(finding.message_zh) and finding.message_en
        assert finding.probes, "the self-check (visible probes) must find it too"


def test_no_stop_with_prefix_keys_is_harmless():
    """Why the no-stop mutant also has position keys: with whole-prefix keys and an LRU that never orphans a
    block, nothing after a miss is cached, so not stopping changes no result."""
    functions = m.with_reference(simulate_prefix_cache=m.simulate_no_stop_with_prefix_keys)
    assert d.diagnose(functions, BOTH, exercises=[SIMULATE]) == []


def test_wrong_compare_is_not_blamed_on_recommend():
    functions = m.with_reference(compare_prefix_cache_to_baseline=m.compare_wrong_delta_sign,
                                 recommend_prefix_cache_run=m.recommend_with_wrong_sign_compare)
    findings = d.diagnose(functions, BOTH)
    assert [(f.exercise, f.code) for f in findings] == [(COMPARE, "wrong_delta_sign"), (RECOMMEND, "fix_compare_first")]


def test_a_mistake_only_hidden_probes_see():
    functions = m.with_reference(summarize_prefix_cache=m.summarize_last_of_ties)
    assert d.diagnose(functions, ("visible",)) == []
    [finding] = d.diagnose(functions, BOTH)
    assert (finding.exercise, finding.code) == (SUMMARIZE, "other")
    assert finding.probes == () and finding.details == () and finding.hidden_probes >= 1


# ------------------------------------------------------------------------------------------ hidden stays hidden

@pytest.mark.parametrize("exercise, mutant", [(e, mu) for e, mu, _ in MUTANTS]
                         + [(SUMMARIZE, m.summarize_last_of_ties), (SIMULATE, m.prints_and_returns_list),
                            (RECOMMEND, m.calls_sys_exit)],
                         ids=lambda x: getattr(x, "__name__", x))
def test_feedback_never_shows_hidden_probe_inputs(exercise, mutant):
    findings = d.diagnose(m.with_reference(**{exercise: mutant}), BOTH)
    text = d.feedback_text(findings)
    assert findings and text
    for fragment in hidden_fragments():
        assert fragment not in text, fragment
    for probe in d.PROBES:
        if probe.visibility == "hidden":
            assert probe.id not in text
            assert all(probe.id not in f.probes for f in findings)


def test_feedback_text_for_no_findings():
    text = d.feedback_text([])
    assert CJK.search(text) and "No known mistake" in text


# ------------------------------------------------------------------------------------------ misbehaving code

def test_not_implemented_yet():
    findings = d.diagnose({name: m.not_implemented for name in d.EXERCISES}, BOTH)
    assert [(f.exercise, f.code) for f in findings] == [(name, "not_implemented") for name in d.EXERCISES]


def test_missing_function():
    findings = d.diagnose({SIMULATE: m.simulate_prefix_cache}, ("visible",))
    assert [(f.exercise, f.code) for f in findings] == [(name, "missing_function") for name in d.EXERCISES[1:]]


@pytest.mark.parametrize("looping", [m.loops_forever, m.loops_forever_swallowing])
def test_endless_loop_times_out(looping):
    start = time.monotonic()
    findings = d.diagnose(m.with_reference(simulate_prefix_cache=looping), BOTH, call_timeout_s=0.3)
    assert time.monotonic() - start < 10
    assert codes(findings) == {"timed_out"} and findings[0].exercise == SIMULATE


def test_endless_loop_times_out_off_the_main_thread():
    """Off the main thread SIGALRM is unavailable; the call is abandoned in a daemon thread instead."""
    stop = threading.Event()
    box = {}
    worker = threading.Thread(target=lambda: box.setdefault("findings", d.diagnose(
        m.with_reference(simulate_prefix_cache=m.make_loop_until(stop)), ("visible",), call_timeout_s=0.3)))
    try:
        worker.start()
        worker.join(20)
        assert not worker.is_alive()
        assert codes(box["findings"]) == {"timed_out"}
    finally:
        stop.set()


def test_sys_exit_is_a_finding_not_an_exit():
    findings = d.diagnose(m.with_reference(simulate_prefix_cache=m.calls_sys_exit), ("visible",))
    assert codes(findings) == {"raised_exception"}
    assert "SystemExit" in findings[0].message_en


def test_student_prints_are_swallowed(capsys):
    findings = d.diagnose(m.with_reference(simulate_prefix_cache=m.prints_and_returns_list), ("visible",))
    assert codes(findings) == {"missing_keys"}
    assert "debug output" not in capsys.readouterr().out


def test_student_code_cannot_corrupt_the_probes():
    before = copy.deepcopy([p.inputs for p in d.PROBES])
    functions = m.with_reference(simulate_prefix_cache=m.simulate_then_clears_inputs)
    assert codes(d.diagnose(functions, BOTH, exercises=[SIMULATE])) == {"mutates_input"}  # named, not absorbed
    assert [p.inputs for p in d.PROBES] == before


def test_an_outer_alarm_survives():
    """A grader may run its own SIGALRM timer around the diagnosis."""
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *_: fired.append(True))
    signal.setitimer(signal.ITIMER_REAL, 30.0)
    try:
        d.diagnose(m.REFERENCE, ("visible",), exercises=[SUMMARIZE])
        assert signal.getsignal(signal.SIGALRM) is not None and 0 < signal.getitimer(signal.ITIMER_REAL)[0] <= 30
        assert not fired
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ------------------------------------------------------------------------------------------ the notebook side

def test_self_check_on_a_correct_notebook(capsys):
    assert d.self_check(dict(m.REFERENCE, unrelated_global=42)) == []
    out = capsys.readouterr().out
    assert "All visible probes pass" in out and CJK.search(out)


def test_self_check_names_the_mistake_with_a_visible_example(capsys):
    findings = d.self_check(m.with_reference(simulate_prefix_cache=m.simulate_position_keys))
    out = capsys.readouterr().out
    assert codes(findings) == {"position_keys"} and "[position_keys]" in out
    assert "simulate_prefix_cache([[" in out, "a visible probe may show its inputs"
    assert all(f.hidden_probes == 0 for f in findings)


def test_arguments_are_checked():
    with pytest.raises(ValueError):
        d.diagnose(m.REFERENCE, ("secret",))
    with pytest.raises(ValueError):
        d.diagnose(m.REFERENCE, exercises=["no_such_exercise"])


def test_self_check_of_one_exercise(capsys):
    findings = d.self_check(m.with_reference(compare_prefix_cache_to_baseline=m.compare_wrong_delta_sign),
                            exercises=COMPARE)
    out = capsys.readouterr().out
    assert codes(findings) == {"wrong_delta_sign"}
    assert SIMULATE not in out and "ttft_delta_ms" in out


def test_graded_run_refuses_an_engine_without_hidden_probes(tmp_path, monkeypatch):
    """The student distribution's engine has visible probes only; grading with such a copy would silently
    drop the hidden diagnosis, so staging refuses it."""
    from tools.course.diagnosis import graded

    assert d.HIDDEN_AVAILABLE and any(p.visibility == "hidden" for p in d.PROBES)
    monkeypatch.setattr(graded.d, "HIDDEN_AVAILABLE", False)
    with pytest.raises(RuntimeError, match="no hidden probes"):
        graded.stage(tmp_path, [])


def test_graded_findings_keep_the_note_their_message_needs():
    """The hang page used to read "Did not return within : ..." (the note was dropped): the graded report
    carries it and the grader rebuilds it from what it may be, never from free text."""
    from tools.course.diagnosis import graded

    report = [{"exercise": SIMULATE, "code": "timed_out", "probes": ["simulate.smoke"], "note": "5 s"},
              {"exercise": SUMMARIZE, "code": "raised_exception", "probes": ["summarize.basic"],
               "note": "KeyError"},
              {"exercise": COMPARE, "code": "missing_keys", "probes": ["compare.signs"],
               "note": "missing ['overhead_delta', 'secret <script>']"},
              {"exercise": RECOMMEND, "code": "timed_out", "probes": ["recommend.accept"], "note": "forever; rm -rf"}]
    found = {f.exercise: f for f in graded.findings_from_report(report)}
    assert "within 5 s:" in found[SIMULATE].message_en and "5 s" in found[SIMULATE].message_zh
    assert "(KeyError)" in found[SUMMARIZE].message_en
    assert "missing ['overhead_delta']" in found[COMPARE].message_en and "script" not in found[COMPARE].message_en
    assert f"within {graded.d.DEFAULT_CALL_TIMEOUT_S:g} s:" in found[RECOMMEND].message_en
    assert "rm -rf" not in d.feedback_text(found.values())
