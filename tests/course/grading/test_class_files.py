"""The grader reads only regular files inside the class folder: a notebook that is a link (to solutions/, to a
file outside the repository), a student folder that is a link, a FIFO, a hard link, is never read, and the entry
still gets a row saying "not a regular file inside the class folder". Student ids are the whole name, and two
spellings of one id are one ambiguous row.

The unit checks call the roster and the intake directly; ``test_grade_py_reads_nothing_outside_the_class`` runs
grade.py on such a class (every entry refused before any notebook runs, so it only builds the course)."""

import json
import os
import subprocess
import threading

import nbformat
import pytest

from tools.course import config
from tools.course.grading import Settings, SubmissionProblem, find_submissions, read_submission
from tools.course.grading.class_files import NOT_REGULAR

from course_fixtures.cli import GRADE

pytestmark = pytest.mark.nbgrader  # real nbgrader / grade.py / kernels: left out by -m "not nbgrader"

SOLUTION = config.SOURCE_NOTEBOOK


@pytest.fixture
def outside(tmp_path):
    """A notebook outside the class and outside the repository: another class's, or a secret."""
    path = tmp_path / "elsewhere" / config.NOTEBOOK_FILE
    path.parent.mkdir()
    nbformat.write(nbformat.read(config.RELEASE_NOTEBOOK, as_version=4), path)
    return path


@pytest.fixture
def subs(tmp_path):
    folder = tmp_path / "submissions"
    folder.mkdir()
    return folder


def _refused(path, root, needle):
    with pytest.raises(SubmissionProblem) as caught:
        read_submission(path, Settings(), root=root)
    reason = str(caught.value)
    assert NOT_REGULAR in reason and needle in reason, reason
    return reason


@pytest.mark.parametrize("target", ["solutions", "outside"])
def test_a_notebook_that_is_a_link_is_not_read(subs, outside, target):
    notebook = subs / "alice" / config.NOTEBOOK_FILE
    notebook.parent.mkdir()
    notebook.symlink_to(SOLUTION if target == "solutions" else outside)
    found, _, _ = find_submissions(subs)
    assert [(e.student_id, e.notebook) for e in found] == [("alice", notebook)]  # a row, never missing
    _refused(notebook, subs, f"alice/{config.NOTEBOOK_FILE} is a symbolic link")


def test_a_student_folder_that_is_a_link_is_not_listed_or_read(subs, outside):
    (subs / "mallory").symlink_to(outside.parent, target_is_directory=True)
    found, bad, _ = find_submissions(subs)
    assert found == []
    assert [(r.student_id, r.status) for r in bad] == [("mallory", "not_graded")]
    assert f"{NOT_REGULAR} (it is a symbolic link)" in bad[0].reason
    assert config.NOTEBOOK_FILE not in bad[0].reason  # what the link points to is not even listed
    _refused(subs / "mallory" / config.NOTEBOOK_FILE, subs, "mallory is a symbolic link")


def test_a_folder_on_the_way_that_is_a_link_is_not_followed(subs, outside):
    (subs / "alice").mkdir()
    (subs / "alice" / "sub").symlink_to(outside.parent, target_is_directory=True)
    _refused(subs / "alice" / "sub" / config.NOTEBOOK_FILE, subs, "alice/sub is a symbolic link")


def test_a_fifo_is_not_opened_for_a_blocking_read(subs):
    fifo = subs / "carol" / config.NOTEBOOK_FILE
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    found, _, _ = find_submissions(subs)
    assert [e.notebook for e in found] == [fifo]
    outcome = {}
    reader = threading.Thread(target=lambda: outcome.update(reason=_refused(fifo, subs, "is a FIFO")), daemon=True)
    reader.start()
    reader.join(10)
    if reader.is_alive():  # the old reader blocks for a writer that never comes: let it go, then fail
        with open(fifo, "wb"):
            pass
        pytest.fail("reading the FIFO blocked")
    assert outcome, "the FIFO was read"


def test_a_hard_link_is_not_read(subs, outside):
    notebook = subs / "dave" / config.NOTEBOOK_FILE
    notebook.parent.mkdir()
    os.link(outside, notebook)
    _refused(notebook, subs, "is a hard link (the file has 2 names")


def test_links_and_fifos_at_the_top_get_a_row_each(subs, outside):
    (subs / "zed.ipynb").symlink_to(outside)
    os.mkfifo(subs / "pipe")
    (subs / "ok").mkdir()
    nbformat.write(nbformat.read(config.RELEASE_NOTEBOOK, as_version=4), subs / "ok" / config.NOTEBOOK_FILE)
    found, bad, warnings = find_submissions(subs)
    assert [e.student_id for e in found] == ["ok"] and warnings == []
    reasons = {r.student_id: r.reason for r in bad}
    assert reasons == {
        "pipe": f'found "pipe" at the top of the submissions folder: {NOT_REGULAR} (it is a FIFO): not graded',
        "zed.ipynb": f'found "zed.ipynb" at the top of the submissions folder: {NOT_REGULAR} (it is a symbolic '
                     'link): not graded'}
    read_submission(found[0].notebook, Settings(), root=subs)  # a regular file inside the class is read


def test_a_student_id_is_the_whole_name(subs):
    (subs / "eve\n").mkdir()
    (subs / "eve\n" / config.NOTEBOOK_FILE).write_text("{}")
    (subs / "ada\n.ipynb").write_text("{}")
    found, bad, _ = find_submissions(subs)
    assert found == []
    reasons = {r.student_id: r.reason for r in bad}
    assert "folder name 'eve\\n' is not a usable student id" in reasons["eve\n"], reasons
    assert "'ada\\n' is not a usable student id" in reasons["ada\n.ipynb"], reasons


@pytest.mark.parametrize("names, student, shown", [
    (["frank.ipynb", "frank.IPYNB"], "frank", '"frank.IPYNB", "frank.ipynb"'),
    (["frank/", "frank.ipynb"], "frank", '"frank/", "frank.ipynb"'),
    (["Frank/", "frank/"], "Frank", '"Frank/", "frank/"'),
])
def test_two_spellings_of_one_id_are_one_ambiguous_row(subs, names, student, shown):
    for name in names:
        if name.endswith("/"):
            (subs / name).mkdir()
            (subs / name / config.NOTEBOOK_FILE).write_text("{}")
        else:
            (subs / name).write_text("{}")
    found, bad, _ = find_submissions(subs)
    assert found == []
    assert [(r.student_id, r.status) for r in bad] == [(student, "not_graded")]
    assert bad[0].reason.startswith(f"2 entries name student {student!r} (ids that differ only in case are one "
                                    f"student, a folder and a notebook at the top too): {shown}: not graded"), \
        bad[0].reason


def _rows(out):
    return {s["student_id"]: s for s in json.loads((out / "results.json").read_text())["students"]}


def test_grade_py_reads_nothing_outside_the_class(tmp_path, subs, outside):
    """The issue's case end to end: a link to solutions/ used to be graded 26/26 with no review flag."""
    layout = {"alice": SOLUTION, "bob": outside}
    for student, target in layout.items():
        (subs / student).mkdir()
        (subs / student / config.NOTEBOOK_FILE).symlink_to(target)
    (subs / "mallory").symlink_to(SOLUTION.parent, target_is_directory=True)
    (subs / "carol").mkdir()
    os.mkfifo(subs / "carol" / config.NOTEBOOK_FILE)
    (subs / "dave").mkdir()
    os.link(outside, subs / "dave" / config.NOTEBOOK_FILE)
    out = tmp_path / "out"
    proc = subprocess.run([*GRADE, str(subs), "--out", str(out), "--workers", "1"], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = _rows(out)
    assert sorted(rows) == ["alice", "bob", "carol", "dave", "mallory"]
    for student, row in rows.items():
        assert (row["status"], row["score"]) == ("not_graded", None), (student, row)
        assert NOT_REGULAR in row["reason"], (student, row["reason"])
        assert "review by hand" not in row["reason"]
        assert NOT_REGULAR in (out / "feedback" / student / "README.txt").read_text(encoding="utf-8")
    assert not (out / "work").exists() or not list((out / "work").rglob("submission.ipynb"))  # nothing was copied


def test_the_worker_is_handed_the_copy_read_here_never_the_class_folder(tmp_path, subs, monkeypatch):
    """The worker (and the sandboxed kernel under it) reads work/<id>/submission.ipynb, written by the trusted side
    from the bytes it checked; no path into the class folder reaches it."""
    from tools.course import sandbox
    from tools.course.grading import Course, grade_submission, submission

    notebook = subs / "alice" / config.NOTEBOOK_FILE
    notebook.parent.mkdir()
    nbformat.write(nbformat.read(config.RELEASE_NOTEBOOK, as_version=4), notebook)
    handed = {}

    def worker(work, settings):
        handed["job"] = (work / "job.json").read_text()
        handed["copy"] = json.loads(handed["job"])["submission"]
        return {"status": "not_graded", "reason": "stopped by the test"}

    monkeypatch.setattr(submission, "run_worker", worker)
    monkeypatch.setattr(submission, "sandbox_spec", lambda out, work, *rest, **kw: sandbox.Spec(str(work / "sandbox")))
    course = Course(str(tmp_path / "template"), str(config.RELEASE_NOTEBOOK), [{"id": "a", "points": 1.0}])
    out = tmp_path / "out"
    row = grade_submission(course, "alice", notebook, out, submissions_dir=subs)
    assert row.reason == "stopped by the test"
    assert handed["copy"] == str(out / "work" / "alice" / "submission.ipynb")
    assert str(subs) not in handed["job"]
    copy = os.lstat(handed["copy"])
    assert copy.st_nlink == 1 and not os.path.islink(handed["copy"])
    assert nbformat.read(handed["copy"], as_version=4).cells[0].source == \
        nbformat.read(notebook, as_version=4).cells[0].source
