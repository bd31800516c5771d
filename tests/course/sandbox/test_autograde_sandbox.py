"""Sandboxed, parallel grading: hostile submissions, once per module, and serial == parallel on a small class.

The hostile class (course_fixtures/hostile.py) is the reference solution plus one attacking cell each; every
attack must fail or be contained, be reported per student, and leave every other student's grade untouched.
"""

import csv
import json
import os
import re
import subprocess
import sys

import nbformat
import psutil
import pytest

from tools.course import config
from tools.course.grading import feedback as fb
from tools.course import sandbox

from course_fixtures.hostile import FLOOD_REPORT, HOSTILE, LOOT, build_hostile_class
from course_fixtures.make_class import build_class

pytestmark = pytest.mark.nbgrader  # real nbgrader / grade.py / kernels: left out by -m "not nbgrader"

GRADE = [sys.executable, str(config.REPO_ROOT / "autograde" / "grade.py")]
CAPS = sandbox.capabilities()
OPTIONS = ["--cell-timeout", "20", "--submission-timeout", "300", "--memory-limit-mb", "3072"]


def _grade(submissions, out, workers):
    proc = subprocess.run([*GRADE, str(submissions), "--out", str(out), "--workers", str(workers), *OPTIONS],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with (out / "grades.csv").open(newline="") as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)}
    return proc, rows


def _outputs(out, student, marker):
    """Text of the outputs of the cell that printed ``marker`` in the instructor's copy: the stream chunks as the
    kernel sent them, concatenated (a busy kernel may send one print's pieces as two outputs; joining them with a
    newline split "GRADEBOOK rows changed: 0" in two in a run with four workers)."""
    nb = nbformat.read(out / "work" / student / "autograded_full.ipynb", as_version=4)
    for cell in nb.cells:
        text = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
        if marker in text:
            return text
    raise AssertionError(f"{student}: no output with {marker!r}")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    submissions, out = root / "submissions", root / "out"
    students = build_hostile_class(submissions, out)
    proc, rows = _grade(submissions, out, 2)
    return {"proc": proc, "rows": rows, "out": out, "students": students, "submissions": submissions}


def test_the_run_reports_the_protections_in_force(hostile):
    run = json.loads((hostile["out"] / "results.json").read_text())["run"]
    assert run["workers"] == 2
    assert set(run["sandbox"]) == {"user", "filesystem", "network", "limits", "environment"}
    assert "sandbox network:" in hostile["proc"].stderr
    if CAPS["namespaces"]:
        assert "private mount namespace" in run["sandbox"]["filesystem"]


def test_hostile_students_cannot_change_anyone_s_grade(hostile):
    rows = hostile["rows"]
    assert set(rows) == set(hostile["students"])
    assert rows["reference"]["score"] == "26" and rows["stub"]["score"] == "0"
    for student in HOSTILE:  # each is the reference plus an attack: the attack gains nothing and costs nothing
        row = rows[student]
        assert row["status"] in ("graded", "not_graded"), (student, row)
        if row["status"] == "graded":
            assert row["score"] == "26", (student, row["reason"])
        else:
            assert row["score"] == "" and row["reason"], (student, row)
    for student in HOSTILE if CAPS["root"] else ("snoop", "gradebook_rewrite", "read_other", "memory_hog",
                                                  "output_flood"):
        assert rows[student]["status"] == "graded", (student, rows[student]["reason"])


@pytest.mark.skipif(not CAPS["namespaces"], reason="no mount namespace on this machine")
def test_snooping_finds_no_hidden_tests_solutions_or_gradebook(hostile):
    out = hostile["out"]
    text = _outputs(out, "snoop", "SNOOP found")
    assert "SNOOP found 0 files" in text, text[:500]
    secrets = fb.hidden_lines(nbformat.read(config.SOURCE_NOTEBOOK, as_version=4))
    assert not {line.strip() for line in text.splitlines()} & secrets
    loot = out / "work" / "snoop" / "sandbox" / LOOT
    assert loot.is_file() and loot.read_text() == ""


@pytest.mark.skipif(not CAPS["namespaces"], reason="no mount namespace on this machine")
def test_gradebooks_and_other_submissions_are_out_of_reach(hostile):
    out = hostile["out"]
    assert "GRADEBOOK rows changed: 0" in _outputs(out, "gradebook_rewrite", "GRADEBOOK")
    assert "OTHER denied" in _outputs(out, "read_other", "OTHER")


def test_resource_attacks_are_refused_and_cleaned_up(hostile):
    out = hostile["out"]
    assert "MEMORY refused" in _outputs(out, "memory_hog", "MEMORY")
    flood = _outputs(out, "output_flood", "FLOOD starts")
    assert "output limit reached" in flood  # everything after the cap is dropped, the cell's report included:
    after = _outputs(out, "output_flood", "FLOOD after")  # the cap is per cell: the next cell's output is kept
    assert after.strip() == "FLOOD after: the next cell still shows its output", after[:300]
    report = (out / "work" / "output_flood" / "sandbox" / FLOOD_REPORT).read_text()  # it went to a file
    assert "FLOOD stdout refused" in report and "FLOOD file refused" in report, report
    assert "FLOOD display done" in report
    assert (out / "work" / "output_flood" / "autograded_full.ipynb").stat().st_size < 25 * 2**20
    assert (out / "work" / "output_flood" / "worker.log").stat().st_size < 80 * 2**20
    page = out / "feedback" / "output_flood" / f"{config.NOTEBOOK_NAME}.html"
    assert page.stat().st_size < 3 * 2**20
    if CAPS["root"]:
        fork = hostile["rows"]["fork_bomb"]  # the process limit stops it; the kernel, its threads started, goes on
        assert fork["status"] == "graded" and fork["score"] == "26", fork
        assert "FORK refused" in _outputs(out, "fork_bomb", "FORK")
        # this run's sandbox ids (other grading runs on the machine have blocks of their own)
        uids = {(out / "work" / student / "sandbox").stat().st_uid for student in hostile["students"]
                if (out / "work" / student / "sandbox").is_dir()}
        assert len(uids) >= len(HOSTILE) and min(uids) >= sandbox.UID_BASE
        leftovers = [p.pid for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real in uids]
        assert leftovers == []


def test_feedback_names_the_mistake_without_hidden_inputs(hostile):
    out = hostile["out"]
    stub = (out / "feedback" / "stub" / f"{config.NOTEBOOK_NAME}.html").read_text(encoding="utf-8")
    assert "Diagnosis" in stub and "not_implemented" in stub
    ref = (out / "feedback" / "reference" / f"{config.NOTEBOOK_NAME}.html").read_text(encoding="utf-8")
    assert "No known mistake detected" in ref
    students = {s["student_id"]: s for s in json.loads((out / "results.json").read_text())["students"]}
    assert students["reference"]["diagnosis"] == []


@pytest.fixture(scope="module")
def serial_and_parallel(tmp_path_factory):
    root = tmp_path_factory.mktemp("parallel")
    submissions = root / "submissions"
    build_class(submissions, only=["reference", "stub", "partial_block", "ttft_only", "not_json", "missing_file"])
    return [(_grade(submissions, root / f"out{n}", n), root / f"out{n}") for n in (1, 2)]


def _without_seconds(rows):
    return {sid: {k: v for k, v in row.items() if k != "seconds"} for sid, row in rows.items()}


def test_parallel_grading_equals_serial_grading(serial_and_parallel):
    ((_, serial), out1), ((_, parallel), out2) = serial_and_parallel
    assert _without_seconds(serial) == _without_seconds(parallel)
    assert serial["reference"]["score"] == "26" and serial["not_json"]["score"] == ""
    results = []
    for out in (out1, out2):
        data = json.loads((out / "results.json").read_text())
        for student in data["students"]:
            student.pop("seconds")
            student["feedback"] = student["feedback"] and os.path.relpath(student["feedback"], out)
        data["run"].pop("workers")
        results.append(data)
    assert results[0] == results[1]
    for student in serial:
        files1 = sorted(p.relative_to(out1) for p in (out1 / "feedback" / student).iterdir())
        files2 = sorted(p.relative_to(out2) for p in (out2 / "feedback" / student).iterdir())
        assert files1 == files2
        for rel in files1:
            strip = lambda text, out: re.sub(r"\d+(\.\d+)? s\b", "", text.replace(str(out), "OUT"))  # noqa: E731
            assert strip((out1 / rel).read_text(encoding="utf-8"), out1) == \
                strip((out2 / rel).read_text(encoding="utf-8"), out2), rel
