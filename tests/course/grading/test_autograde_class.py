"""The whole round trip, once per module: release -> a class of submissions -> `python autograde/grade.py`.

The class (course_fixtures/make_class.py) holds the stub (0 points), the reference (full marks), partly correct
submissions with the mistakes the hidden tests must catch (partial marks, on the right cells) and every hostile case
of the issue. Cell timeouts are short here (--cell-timeout 10; the whole-submission limit, 300 s, only guards the run).
Part of the class is graded again as two slices (--shard 1/2, 2/2) and merged: the merge must equal the single run.
"""

import csv
import json
import os
import re
import shutil
import subprocess
import sys

import nbformat
import psutil
import pytest

from tools.course import config, grading
from tools.course.grading import feedback as fb

from course_fixtures.make_class import MAX_SCORE, Expected, build_class
from course_fixtures.variants import strip_markers
from course_fixtures.variants import EXPECTED_FAILURES

pytestmark = pytest.mark.nbgrader  # real nbgrader / grade.py / kernels: left out by -m "not nbgrader"

GRADE = [sys.executable, str(config.REPO_ROOT / "autograde" / "grade.py")]
OPTIONS = ["--cell-timeout", "10", "--submission-timeout", "300", "--memory-limit-mb", "3072"]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    submissions, out = root / "submissions", root / "out"
    expected = build_class(submissions)
    expected["english"] = _english_submission(submissions / "english")
    (submissions / "README.md").write_text("not a student folder\n")  # a stray file is warned about, not graded
    # relative paths, as an instructor types them in the class folder (the grading workers run elsewhere)
    proc = subprocess.run([*GRADE, "submissions", "--out", "out", *OPTIONS],
                          capture_output=True, text=True, timeout=1200, cwd=root)
    rows = {}
    with (out / "grades.csv").open(newline="") as handle:
        for row in csv.DictReader(handle):
            rows[row["student_id"]] = row
    cells = [cell["id"] for cell in json.loads((out / "results.json").read_text())["cells"]]
    return {"proc": proc, "rows": rows, "out": out, "expected": expected, "submissions": submissions,
            "cells": cells}


def _english_submission(folder):
    """The English edition with its reference answers: graded by the one (Chinese) course, full marks."""
    release = nbformat.read(config.release_notebook("en"), as_version=4)
    answers = {c.id: strip_markers(c.source) for c in nbformat.read(config.source_notebook("en"), as_version=4).cells
               if c.metadata.get("nbgrader", {}).get("solution")}
    for cell in release.cells:
        cell.source = answers.get(cell.id, cell.source)
    folder.mkdir(parents=True)
    nbformat.write(release, folder / config.NOTEBOOK_FILE)
    return Expected("graded", frozenset())


def test_an_english_submission_gets_english_feedback_and_a_chinese_one_chinese(graded):
    pages = {student: (graded["out"] / "feedback" / student / f"{config.NOTEBOOK_NAME}.html").read_text(
        encoding="utf-8") for student in ("english", "reference")}
    english_title, chinese_intro = "(English edition)", "难度：Hard"
    assert english_title in pages["english"] and chinese_intro not in pages["english"]
    assert chinese_intro in pages["reference"] and english_title not in pages["reference"]
    assert float(graded["rows"]["english"]["score"]) == MAX_SCORE


def test_cli_completes_with_progress_and_summary_and_no_traceback(graded):
    proc = graded["proc"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr + proc.stdout
    assert "chapter 69 grades" in proc.stderr  # the summary table
    assert "warning:" in proc.stderr and "README.md" in proc.stderr
    for student in graded["expected"]:
        assert f" {student}: " in proc.stderr  # one progress line per student


def test_every_student_has_a_row_with_the_expected_status(graded):
    rows = graded["rows"]
    assert set(rows) == set(graded["expected"])
    for student, expected in graded["expected"].items():
        row = rows[student]
        assert row["status"] == expected.status, (student, row["reason"])
        assert row["max_score"] == f"{MAX_SCORE:g}"
        for fragment in expected.reason:
            assert fragment in row["reason"], (student, row["reason"])


def test_scores_land_on_the_right_cells(graded):
    rows = graded["rows"]
    cells = json.loads((graded["out"] / "results.json").read_text())["cells"]
    points = {cell["id"]: cell["points"] for cell in cells}
    assert sum(points.values()) == MAX_SCORE
    for student, expected in graded["expected"].items():
        row = rows[student]
        if expected.failing is None:
            assert row["score"] == "" and all(row[cell] == "" for cell in points), (student, row)
            continue
        failing = set(points) if expected.failing == {"*"} else set(expected.failing)
        got_zero = {cell for cell in points if float(row[cell]) == 0.0}
        assert got_zero == failing, (student, row["reason"])
        for cell in set(points) - failing:
            assert float(row[cell]) == points[cell], (student, cell)
        assert float(row["score"]) == sum(points[c] for c in set(points) - failing)


def _points(graded) -> dict[str, float]:
    return {cell["id"]: cell["points"] for cell in json.loads((graded["out"] / "results.json").read_text())["cells"]}


def test_headline_scores(graded):
    rows = graded["rows"]
    assert rows["stub"]["score"] == "0"  # truly zero: graded, not missing
    assert rows["reference"]["score"] == "26"
    seed_points = MAX_SCORE - sum(points for cell, points in _points(graded).items()
                                  if cell in EXPECTED_FAILURES["seed_reference"])
    assert float(rows["seed_reference"]["score"]) == seed_points < 10  # the chapter's original reference code
    assert 0 < float(rows["partial_block"]["score"]) < 26


def test_feedback_is_written_and_never_shows_hidden_tests(graded):
    out = graded["out"]
    source = nbformat.read(config.SOURCE_NOTEBOOK, as_version=4)
    secrets = fb.hidden_lines(source)
    assert len(secrets) > 50
    for student, row in graded["rows"].items():
        folder = out / "feedback" / student
        page = folder / f"{config.NOTEBOOK_NAME}.html"
        if row["status"] == "graded":
            assert page.is_file(), student
            text = page.read_text(encoding="utf-8")
            assert fb.html_leaks(text, secrets) == [], student
            assert "BEGIN HIDDEN" not in text and "### BEGIN SOLUTION" not in text
            assert page.stat().st_size < 3 * 2**20, f"{student}: feedback is {page.stat().st_size} bytes"
            for cell in graded["cells"]:  # the summary at the top names each test cell
                assert f'<a href="#{cell}">Test cell <code>{cell}</code></a>' in text, (student, cell)
        else:
            note = (folder / "README.txt").read_text(encoding="utf-8")
            assert row["reason"] in note
            assert "怎么办 | What to do" in note and "Jupyter" in note and "Colab" in note, note
            assert "重新提交" in note and "Submit that .ipynb file again" in note
    stripped = (out / "feedback" / "stripped_metadata" / "README.txt").read_text(encoding="utf-8")
    assert "download a fresh copy of the released notebook" in stripped and "重新下载发布的作业笔记本" in stripped
    # the failure hint of a hidden test is shown, its code is not
    partial = (out / "feedback" / "partial_block" / f"{config.NOTEBOOK_NAME}.html").read_text(encoding="utf-8")
    assert "尾部不足 block_size 的 token 不能计入命中" in partial
    assert "hidden tests failed" in partial and "hidden tests passed" in partial


def test_the_instructor_copy_keeps_the_hidden_tests(graded):
    full = nbformat.read(graded["out"] / "work" / "reference" / "autograded_full.ipynb", as_version=4)
    hidden = next(c for c in full.cells if c.get("id") == "hidden-ex0-keys")
    assert "### BEGIN HIDDEN TESTS" in hidden.source


def test_no_grading_process_is_left_running(graded):
    out = str(graded["out"])
    leftovers = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            if proc.cwd().startswith(out) or any(out in part for part in proc.info["cmdline"] or []):
                leftovers.append(proc.info)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    assert leftovers == []


SHARDED = ["reference", "partial_block", "stripped_metadata", "missing_as_zero", "not_json", "missing_file"]
"""Part of the class, graded again as two slices: graded pages (with hidden-test hints) and README notes in both."""


@pytest.fixture(scope="module")
def sharded(graded, tmp_path_factory):
    """SHARDED, graded as --shard 1/2 and 2/2 with the single run's options, then merged."""
    root = tmp_path_factory.mktemp("sharded")
    submissions = root / "submissions"
    for student in SHARDED:
        shutil.copytree(graded["submissions"] / student, submissions / student)
    assert {grading.shard_of(s, 2) for s in SHARDED if graded["expected"][s].status == "graded"} == {1, 2}
    procs = [subprocess.run([*GRADE, str(submissions), "--out", str(root / f"out{k}"), "--shard", f"{k}/2", *OPTIONS],
                            capture_output=True, text=True, timeout=900) for k in (1, 2)]
    merge = subprocess.run([*GRADE, "merge", str(root / "out2"), str(root / "out1"), "--out", str(root / "merged")],
                           capture_output=True, text=True, timeout=300)
    return {"procs": procs, "merge": merge, "out": root / "merged", "slices": [root / "out1", root / "out2"]}


def _normalised_results(out, students):
    data = json.loads((out / "results.json").read_text())
    data["students"] = [s for s in data["students"] if s["student_id"] in students]
    for student in data["students"]:
        student.pop("seconds")
        student["feedback"] = student["feedback"] and os.path.relpath(student["feedback"], out)
    return data


def _normalised_text(path, out):
    return re.sub(r"\d+(\.\d+)? s\b", "", path.read_text(encoding="utf-8").replace(str(out), "OUT"))


def test_shards_merge_to_the_single_run(graded, sharded):
    """The merged grades.csv, results.json and feedback equal the single run's for the same students (seconds
    and the output folder's path aside): each submission is graded on its own, so a slice grades it as a
    single run does."""
    for proc in [*sharded["procs"], sharded["merge"]]:
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "Traceback" not in proc.stderr
    assert "merged 2 slices: 6 students" in sharded["merge"].stderr
    single, merged = graded["out"], sharded["out"]
    with (merged / "grades.csv").open(newline="") as handle:
        reader = csv.DictReader(handle)
        merged_rows = list(reader)
        assert reader.fieldnames == ["student_id", "status", "score", "max_score", *graded["cells"], "reason",
                                     "seconds"]
    drop = lambda row: {k: v for k, v in row.items() if k != "seconds"}  # noqa: E731
    assert [drop(row) for row in merged_rows] == [drop(graded["rows"][s]) for s in sorted(SHARDED)]
    assert _normalised_results(merged, SHARDED) == _normalised_results(single, SHARDED)
    assert sorted(p.name for p in (merged / "feedback").iterdir()) == sorted(SHARDED)
    for student in SHARDED:
        files = sorted(p.name for p in (single / "feedback" / student).iterdir())
        assert sorted(p.name for p in (merged / "feedback" / student).iterdir()) == files
        for name in files:
            assert _normalised_text(merged / "feedback" / student / name, merged) == \
                _normalised_text(single / "feedback" / student / name, single), (student, name)


def test_merge_refuses_an_incomplete_or_overlapping_set_of_real_slices(sharded, tmp_path):
    out1, out2 = sharded["slices"]
    cases = [([out1], "shard 2 of 2 missing: give all 2 slices (got 1/2)"),
             ([out1, out2, out1], "are both shard 1/2 (overlapping slices)"),
             ([out1, sharded["out"]], "not graded with --shard K/N")]
    for slices, needle in cases:
        proc = subprocess.run([*GRADE, "merge", *map(str, slices), "--out", str(tmp_path / "m")],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert needle in proc.stderr and "Traceback" not in proc.stderr
        assert not (tmp_path / "m").exists()
