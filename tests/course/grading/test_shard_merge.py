"""grade.py --shard and grade.py merge without running any notebook: the slice a student belongs to, bad --shard
values, and every way a set of slices can fail to belong together (one line, exit 1, nothing written).

The slices here are written with the grader's own ``write_results`` (what grade.py --shard leaves); the real
round trip, nbgrader and all, is ``test_shards_merge_to_the_single_run`` in test_autograde_class.py.
"""

import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tools.course import config, grading

from course_fixtures.cli import GRADE, grade_module, one_line, tmpfs

pytestmark = pytest.mark.nbgrader  # real nbgrader / grade.py / kernels: left out by -m "not nbgrader"

CELLS = [{"id": "test-a", "points": 2.0, "hidden": False}, {"id": "hidden-b", "points": 3.0, "hidden": True}]
LIMITS = {"cell_timeout": 10.0, "hung_timeout": 2.0, "after_hang_budget": 40.0, "submission_timeout": 300.0,
          "memory_limit_mb": 3072}
ROSTER = ["ada", "bo", "cy", "dee", "eve", "fay", "gus", "hal"]


def _run(*args):
    return subprocess.run([*GRADE, *map(str, args)], capture_output=True, text=True, timeout=120)


GRADE_MODULE = grade_module()


def _merge(capsys, *args):
    """grade.py merge in this process (its imports are paid once): (exit code, stderr)."""
    capsys.readouterr()
    code = GRADE_MODULE.main(["merge", *map(str, args)])
    return subprocess.CompletedProcess(args, code, "", capsys.readouterr().err)


def _result(sid: str, out: Path) -> grading.Result:
    if sid.startswith("e"):  # a student that could not be graded: a README, no page
        result = grading.Result(sid, "not_graded", max_score=5.0, reason="missing x.ipynb", seconds=0.5)
        grading.write_note(out, result)
        return result
    page = out / "feedback" / sid / f"{config.NOTEBOOK_NAME}.html"
    page.parent.mkdir(parents=True)
    page.write_text(f"<html>{sid}</html>", encoding="utf-8")
    return grading.Result(sid, "graded", 2.0, 5.0, {"test-a": 2.0, "hidden-b": 0.0}, seconds=3.25,
                          feedback=str(page), diagnosis=[])


def write_slice(root: Path, index: int, count: int, *, roster=ROSTER, limits=LIMITS, course="sha256:c",
                students=None, workers=2) -> Path:
    """What grade.py --shard index/count writes for a class with ``roster`` (``students``: override the rows)."""
    out = root / f"out{index}"
    out.mkdir(parents=True)
    (out / grading.MARKER).write_text("x")
    mine = students if students is not None else [s for s in roster if grading.shard_of(s, count) == index]
    results = [_result(sid, out) for sid in mine]
    report = {"workers": workers, "limits": limits, "sandbox": {"user": "u"},
              "shard": grading.shard_record(index, count, roster, course)}
    grading.write_results(out, results, grading.Course("", "", CELLS), report)
    return out


@pytest.fixture
def slices(tmp_path):
    return [write_slice(tmp_path, k, 3) for k in (1, 2, 3)]


def test_the_slice_of_a_student_depends_on_the_id_alone_and_covers_everyone():
    ids = [f"s{i:03d}" for i in range(300)]
    for count in (1, 2, 3, 7):
        slices = [grading.take_slice([grading.Result(i, "graded") for i in ids], k, count) for k in range(1, count + 1)]
        assert sorted(r.student_id for s in slices for r in s) == ids  # each student in exactly one slice
        assert all(len(s) > 300 / count / 2 for s in slices)  # roughly balanced
    roster = [grading.Result(i, "graded") for i in ids]
    late = roster + [grading.Result("late_student", "graded")]
    for k in (1, 2, 3, 4):  # a student added later moves nobody else
        assert [r for r in grading.take_slice(late, k, 4) if r.student_id != "late_student"] == \
            grading.take_slice(roster, k, 4)
    assert grading.shard_of("ada", 3) == int(hashlib.sha256(b"ada").hexdigest()[:16], 16) % 3 + 1
    code = "from tools.course.grading import shard_of; print([shard_of(f's{i}', 5) for i in range(50)])"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": "12345"}).stdout
    assert other == str([grading.shard_of(f"s{i}", 5) for i in range(50)]) + "\n"  # every machine agrees


@pytest.mark.parametrize("value", ["0/2", "3/2", "x", "1/0", "-1/2", "1/2/3", "1.0/2", ""])
def test_a_bad_shard_value_is_one_line_and_exit_1_before_any_work(tmp_path, value):
    out = tmp_path / "out"
    proc = _run(tmp_path / "does-not-exist", "--out", out, f"--shard={value}")
    assert proc.returncode == 1
    assert one_line(proc) == (f"error: --shard must be K/N with 1 <= K <= N (the K-th of N slices, e.g. 1/4), "
                               f"got {value!r} (see python autograde/grade.py --help)")
    assert not out.exists()


def test_merge_joins_the_slices_as_one_run_would_write_them(tmp_path, slices, capsys):
    out = tmp_path / "merged"
    proc = _run("merge", *reversed(slices), "--out", out)  # the real command; the order given does not matter
    assert proc.returncode == 0, proc.stderr
    assert "merged 3 slices: 8 students, 7 graded, 1 not graded, 0 errors" in one_line(proc)
    data = json.loads((out / "results.json").read_text())
    assert [s["student_id"] for s in data["students"]] == ROSTER
    assert data["run"] == {"workers": 2, "limits": LIMITS, "sandbox": {"user": "u"}}  # no shard left in it
    assert data["cells"] == CELLS and data["max_score"] == 5.0
    for student in data["students"]:
        folder = out / "feedback" / student["student_id"]
        if student["feedback"]:
            assert student["feedback"] == str(folder / f"{config.NOTEBOOK_NAME}.html")
            assert Path(student["feedback"]).read_text() == f"<html>{student['student_id']}</html>"
        else:
            assert "missing x.ipynb" in (folder / "README.txt").read_text(encoding="utf-8")
    lines = (out / "grades.csv").read_text().splitlines()
    assert lines[0] == "student_id,status,score,max_score,test-a,hidden-b,reason,seconds"
    assert [line.split(",")[0] for line in lines[1:]] == ROSTER
    assert [s["shard"] for s in json.loads((out / "shards.json").read_text())] == ["1/3", "2/3", "3/3"]
    for folder in slices:  # the slices are only read
        assert json.loads((folder / "results.json").read_text())["run"]["shard"]["count"] == 3
    again = _merge(capsys, *slices, "--out", out)  # a merge output may be merged into again
    assert again.returncode == 0, again.stderr


def test_slices_that_differ_only_in_workers_keep_each_value(tmp_path, capsys):
    slices = [write_slice(tmp_path, k, 2, workers=k * 2) for k in (1, 2)]
    out = tmp_path / "merged"
    assert _merge(capsys, *slices, "--out", out).returncode == 0
    assert json.loads((out / "results.json").read_text())["run"]["workers"] == {"1/2": 2, "2/2": 4}


def _refused(tmp_path, capsys, *args) -> str:
    out = tmp_path / "merged"
    proc = _merge(capsys, *args, "--out", out)
    assert proc.returncode == 1, proc.stderr
    line = one_line(proc)
    assert line.startswith("error: "), line
    assert not out.exists(), "nothing is written when the slices do not belong together"
    return line


def test_a_missing_slice_is_refused(tmp_path, capsys, slices):
    assert "shard 2 of 3 missing: give all 3 slices (got 1/3, 3/3)" in _refused(tmp_path, capsys, slices[0], slices[2])


def test_the_same_slice_twice_is_refused_as_overlapping(tmp_path, slices, capsys):
    line = _refused(tmp_path, capsys, slices[0], slices[1], slices[1], slices[2])
    assert "OUT_2" in line and "OUT_3" in line and "both shard 2/3 (overlapping slices)" in line


def test_slices_of_different_counts_are_refused(tmp_path, capsys, slices):
    other = write_slice(tmp_path / "two", 2, 2)
    assert "come from different --shard counts" in _refused(tmp_path, capsys, *slices, other)


@pytest.mark.parametrize("change, needle", [
    ({"limits": LIMITS | {"cell_timeout": 120.0}}, "graded with other limits than OUT_1"),
    ({"course": "sha256:other"}, "graded against a different course"),
])
def test_slices_that_do_not_belong_together_are_refused(tmp_path, capsys, change, needle):
    first = write_slice(tmp_path, 1, 2)
    second = write_slice(tmp_path, 2, 2, **change)
    assert needle in _refused(tmp_path, capsys, first, second)


LATE = next(f"late{i}" for i in range(100) if grading.shard_of(f"late{i}", 2) == 2)
"""A student who handed in after the class was graded, and belongs to slice 2 of 2."""


def test_a_slice_graded_again_for_a_late_student_joins_the_others(tmp_path, capsys):
    first, second = write_slice(tmp_path, 1, 2), write_slice(tmp_path, 2, 2, roster=ROSTER + [LATE])
    out = tmp_path / "merged"
    assert _merge(capsys, first, second, "--out", out).returncode == 0
    students = json.loads((out / "results.json").read_text())["students"]
    assert [s["student_id"] for s in students] == sorted(ROSTER + [LATE])


def test_a_slice_graded_from_a_stale_copy_of_the_class_is_refused(tmp_path, capsys):
    first, second = write_slice(tmp_path, 1, 2, roster=ROSTER + [LATE]), write_slice(tmp_path, 2, 2)
    line = _refused(tmp_path, capsys, first, second)
    assert f"{LATE}, in the class as OUT_1 ({first}) saw it, has no result in OUT_2 ({second}), shard 2/2" in line
    assert "grade that slice again from the current submissions folder" in line


def test_an_interrupted_slice_is_refused_as_incomplete(tmp_path, capsys):
    mine = [s for s in ROSTER if grading.shard_of(s, 2) == 2]
    first, second = write_slice(tmp_path, 1, 2), write_slice(tmp_path, 2, 2, students=mine[:-1])
    line = _refused(tmp_path, capsys, first, second)
    assert f"is incomplete: no result for {mine[-1]} (1 of its students; interrupted?)" in line


def test_a_student_in_two_slices_is_refused_as_overlapping(tmp_path, capsys):
    stray = next(s for s in ROSTER if grading.shard_of(s, 2) == 1)
    mine = [s for s in ROSTER if grading.shard_of(s, 2) == 2]
    line = _refused(tmp_path, capsys, write_slice(tmp_path, 1, 2), write_slice(tmp_path, 2, 2, students=mine + [stray]))
    assert f"is in both OUT_1 ({tmp_path / 'out1'}) and OUT_2" in line and stray in line


def test_a_student_graded_in_a_slice_it_does_not_belong_to_is_refused(tmp_path, capsys):
    stray = next(s for s in ROSTER if grading.shard_of(s, 2) == 1)
    first = write_slice(tmp_path, 1, 2, students=[s for s in ROSTER if grading.shard_of(s, 2) == 1 and s != stray])
    second = write_slice(tmp_path, 2, 2, students=[s for s in ROSTER if grading.shard_of(s, 2) == 2] + [stray])
    assert f"holds {stray}, who belongs to shard 1/2" in _refused(tmp_path, capsys, first, second)


def test_a_missing_feedback_page_is_refused(tmp_path, capsys, slices):
    page = next(slices[0].glob(f"feedback/*/{config.NOTEBOOK_NAME}.html"))
    page.unlink()
    assert f"the feedback page of {page.parent.name} is missing" in _refused(tmp_path, capsys, *slices)


@pytest.mark.parametrize("case, needle", [
    ("not_a_folder", "no such folder"),
    ("foreign", "not a grade.py output"),
    ("torn_json", "results.json cannot be read"),
    ("nan_json", "results.json cannot be read (NaN is not JSON)"),
    ("whole_class", "not graded with --shard K/N"),
    ("old_fields", "is not a result of this grade.py"),
    ("bad_id", "unusable student_id '../x'"),
])
def test_a_folder_that_is_not_a_slice_is_refused(tmp_path, capsys, slices, case, needle):
    bad = slices[1]
    data = json.loads((bad / "results.json").read_text())
    if case == "not_a_folder":
        bad = tmp_path / "nope"
    elif case == "foreign":
        (bad / grading.MARKER).unlink()
    elif case == "torn_json":
        (bad / "results.json").write_text('{"max_score": 5')
    elif case == "nan_json":
        (bad / "results.json").write_text('{"max_score": NaN}')
    elif case == "whole_class":
        del data["run"]["shard"]
    elif case == "old_fields":
        data["students"][0]["grade"] = 1
    elif case == "bad_id":
        data["students"][0]["student_id"] = "../x"
    if case in ("whole_class", "old_fields", "bad_id"):
        (bad / "results.json").write_text(json.dumps(data))
    line = _refused(tmp_path, capsys, slices[0], bad, slices[2])
    assert line.startswith(f"error: OUT_2 ({bad})") and needle in line, line


@pytest.mark.parametrize("where", ["a_slice", "inside_a_slice", "foreign"])
def test_an_out_folder_that_would_touch_a_slice_or_foreign_files_is_refused(tmp_path, capsys, slices, where):
    out = {"a_slice": slices[0], "inside_a_slice": slices[0] / "merged", "foreign": tmp_path / "thesis"}[where]
    if where == "foreign":
        out.mkdir()
        (out / "thesis.tex").write_text("precious")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    proc = _merge(capsys, *slices, "--out", out)
    assert proc.returncode == 1
    line = one_line(proc)
    assert ("not empty and was not written by grade.py" if where == "foreign" else "must be a folder of its own") \
        in line, line
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


@pytest.fixture
def small_disk(tmp_path):
    yield from tmpfs(tmp_path / "small", "size=64k")


def test_a_disk_that_fills_up_during_the_merge_is_exit_2_and_one_line(tmp_path, small_disk, capsys):
    big = "x" * 40_000  # three pages of 40 kB do not fit in 64 kB
    slices = [write_slice(tmp_path, k, 3) for k in (1, 2, 3)]
    for page in tmp_path.glob(f"out*/feedback/*/{config.NOTEBOOK_NAME}.html"):
        page.write_text(big)
    before = {p: p.read_bytes() for p in tmp_path.glob("out*/**/*") if p.is_file()}
    proc = _merge(capsys, *slices, "--out", small_disk / "merged")
    assert proc.returncode == 2
    line = one_line(proc)
    assert line.startswith(f"error: --out: {small_disk / 'merged'} cannot be written (No space left on device)")
    assert line.endswith("the slices are untouched")
    assert {p: p.read_bytes() for p in tmp_path.glob("out*/**/*") if p.is_file()} == before
    assert sorted(p.name for p in (small_disk / "merged").iterdir()) == [grading.MARKER]  # no half-copied feedback


@pytest.mark.parametrize("field, value", [("score", "26"), ("score", True), ("cells", {"test-a": "2"}),
                                          ("status", "passed"), ("seconds", "3"), ("reason", "\ud800"),
                                          ("diagnosis", "x:y")])
def test_a_slice_with_a_value_of_the_wrong_type_is_refused_before_anything_is_written(tmp_path, capsys, slices,
                                                                                      field, value):
    """``score: "26"`` used to fail with a TypeError after OUT/feedback was written."""
    data = json.loads((slices[1] / "results.json").read_text())
    data["students"][0][field] = value
    (slices[1] / "results.json").write_text(json.dumps(data))
    line = _refused(tmp_path, capsys, *slices)
    assert line.startswith(f"error: OUT_2 ({slices[1]})"), line
    assert f"unusable {field}" in line or "cannot be read" in line, line


def test_every_result_field_is_checked_when_a_slice_is_read():
    from tools.course.grading import merge

    assert set(merge.FIELD_CHECKS) == {f.name for f in dataclasses.fields(grading.Result)}


SECRET = "the instructor's private notes\n"


def _secret(tmp_path) -> Path:
    folder = tmp_path / "private"
    folder.mkdir(exist_ok=True)
    (folder / "notes.txt").write_text(SECRET)
    return folder


def test_links_in_a_slices_feedback_are_not_copied_and_the_row_says_so(tmp_path, capsys, slices):
    secret = _secret(tmp_path)
    graded = next(slices[0].glob(f"feedback/*/{config.NOTEBOOK_NAME}.html")).parent
    (graded / "notes.txt").symlink_to(secret / "notes.txt")  # a link to a file
    (graded / "more").symlink_to(secret, target_is_directory=True)  # a link to a folder
    ungraded = next(p for s in slices for p in s.glob("feedback/e*"))
    shutil.rmtree(ungraded)
    ungraded.symlink_to(secret, target_is_directory=True)  # a student's whole feedback folder
    out = tmp_path / "merged"
    proc = _merge(capsys, *slices, "--out", out)
    assert proc.returncode == 0, proc.stderr
    warning = f"feedback in OUT_1 ({slices[0]}) not copied, not a regular file inside the slice"
    assert f"warning: {graded.name}: {warning}: feedback/{graded.name}/more is a symbolic link" in proc.stderr
    assert f"warning: {ungraded.name}: feedback in OUT_" in proc.stderr
    assert f"feedback/{ungraded.name} is a symbolic link" in proc.stderr
    assert SECRET not in "".join(p.read_text() for p in out.rglob("*") if p.is_file())
    assert not [p for p in out.rglob("*") if p.is_symlink()]
    rows = {s["student_id"]: s["reason"] for s in json.loads((out / "results.json").read_text())["students"]}
    assert "not copied, not a regular file inside the slice" in rows[graded.name]
    assert f"feedback/{graded.name}/notes.txt is a symbolic link" in rows[graded.name]
    assert "not copied" in rows[ungraded.name]
    assert (out / "feedback" / graded.name / f"{config.NOTEBOOK_NAME}.html").is_file()


@pytest.mark.parametrize("what", ["page", "folder"])
def test_a_feedback_page_behind_a_link_is_refused_before_anything_is_written(tmp_path, capsys, slices, what):
    secret = _secret(tmp_path)
    page = next(slices[0].glob(f"feedback/*/{config.NOTEBOOK_NAME}.html"))
    if what == "page":
        page.unlink()
        page.symlink_to(secret / "notes.txt")
    else:
        shutil.move(page.parent, tmp_path / "moved")
        page.parent.symlink_to(tmp_path / "moved", target_is_directory=True)
    line = _refused(tmp_path, capsys, *slices)
    assert f"the feedback page of {page.parent.name} is not a regular file inside the slice" in line, line
    assert "is a symbolic link" in line, line
