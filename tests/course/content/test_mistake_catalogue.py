"""The mistake catalogue (tests/course/course_fixtures/mistakes.py): at least 40 plausible wrong answers, 12 or
more per exercise. Each is run here: the visible tests or the self-check name it before grading (or the catalogue
says why nothing visible can), and the hidden tests confirm it by failing exactly the cells listed."""

import contextlib
import io

import pytest

from tools.course import diagnosis as d
from tools.course.content.lesson import CELLS, source as cell_source

from course_fixtures.mistakes import FUNCTION, GRADE_ID, MUTANTS
from course_fixtures.variants import REFERENCE

TESTS = {cell.id: cell.source for cell in CELLS if cell.role == "test"}
IMPORTS = cell_source("exercise-imports")
VISIBLE = [i for i in TESTS if not i.startswith("hidden-")]
HIDDEN = [i for i in TESTS if i.startswith("hidden-")]


@pytest.fixture(autouse=True)
def grading_env(monkeypatch):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")  # a failing visible test does not print the diagnosis


def run_mutant(mutant):
    namespace: dict = {}
    exec(IMPORTS, namespace)
    for grade_id, source in REFERENCE.items():
        exec(mutant.code() if grade_id == GRADE_ID[mutant.exercise] else source, namespace)
    failed, messages = set(), {}
    for grade_id in VISIBLE + HIDDEN:
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(TESTS[grade_id], dict(namespace))
        except Exception as exc:  # noqa: BLE001 - any failure of a test cell loses its points
            failed.add(grade_id)
            messages[grade_id] = f"{type(exc).__name__}: {exc}"
    findings = d.diagnose(namespace, ("visible",), exercises=[FUNCTION[mutant.exercise]])
    return failed, messages, {f.code for f in findings}, findings


def test_the_catalogue_is_big_enough():
    assert len(MUTANTS) >= 40 and len({m.id for m in MUTANTS}) == len(MUTANTS)
    for exercise in FUNCTION:
        assert sum(m.exercise == exercise for m in MUTANTS) >= 12, exercise
    for mutant in MUTANTS:
        assert mutant.reason or mutant.named or mutant.visible_test, f"{mutant.id}: caught by nothing visible"


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.id for m in MUTANTS])
def test_each_mistake_is_named_before_grading_and_confirmed_by_it(mutant):
    failed, messages, codes, findings = run_mutant(mutant)
    visible_failed = failed & set(VISIBLE)
    assert failed & set(HIDDEN) == mutant.hidden, messages
    if mutant.reason:  # listed with its reason: nothing visible names it (keeps the listing honest)
        assert not visible_failed and not codes, (visible_failed, codes)
        return
    assert bool(visible_failed) == mutant.visible_test, messages
    if mutant.named:
        assert mutant.named in codes, codes
        for finding in findings:  # the smallest failing case, from a visible probe
            if finding.code == mutant.named and finding.code not in ("mutates_input",):
                assert finding.details or finding.code == "o_capacity_eviction", finding
    else:
        assert codes <= {"other"}, codes


@pytest.mark.parametrize("mutant_id, cell, says, never", [
    ("sim.capacity_off_by_one", "hidden-ex0-eviction", "capacity_blocks", "tail"),
    ("sum.sorts_in_place", "hidden-ex1-summarize", "runs.sort", None),
    ("rec.tune_without_ttft", "hidden-ex3-decision", "TTFT", None),
])
def test_the_hidden_hint_is_true_of_the_mistake(mutant_id, cell, says, never):
    """Issue 23's three mistakes: the graded hint names what is wrong (the capacity, not the eviction order)."""
    mutant = next(m for m in MUTANTS if m.id == mutant_id)
    _, messages, _, _ = run_mutant(mutant)
    assert says in messages[cell], messages[cell]
    assert never is None or never not in messages[cell], messages[cell]
