"""grade.py removes nothing of the user's: an OUT from an earlier run that holds the submissions, an OUT whose
marker was written for another folder, an OUT that holds the course repository, and an empty path argument are
refused with one line and exit 1, every file left byte for byte as it was."""

import json
import shutil
import subprocess

import pytest

from tools.course import config
from tools.course.build import owned
from tools.course.grading import MARKER, SubmissionProblem, prepare_out_dir

from course_fixtures.cli import GRADE, one_line, snapshot

pytestmark = pytest.mark.nbgrader  # real nbgrader / grade.py / kernels: left out by -m "not nbgrader"


def _grade(*args, cwd=None):
    return subprocess.run([*GRADE, *map(str, args)], capture_output=True, text=True, timeout=300, cwd=cwd)


@pytest.fixture
def earlier_out(tmp_path):
    """An OUT from an earlier run (marked for its path), with its course, work, feedback and results."""
    out = tmp_path / "out"
    elsewhere = tmp_path / "first-class"
    elsewhere.mkdir()
    prepare_out_dir(out, elsewhere)
    for rel in ("course/gradebook.db", "work/alice/worker.log", "feedback/alice/README.txt", "grades.csv"):
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(f"earlier {rel}\n")
    return out


@pytest.mark.parametrize("where", ["course/submitted", "feedback/class", "work", "submissions"])
def test_a_class_folder_under_an_earlier_out_is_refused_and_kept(tmp_path, earlier_out, where):
    """The issue's case: ``grade.py OUT/course/submitted --out OUT`` used to delete the submissions."""
    subs = earlier_out / where
    (subs / "zoe").mkdir(parents=True)
    (subs / "zoe" / config.NOTEBOOK_FILE).write_text("{}")
    before = snapshot(tmp_path)
    proc = _grade(subs, "--out", earlier_out)
    assert proc.returncode == 1, proc.stderr
    line = one_line(proc)
    assert line == (f"error: --out {earlier_out} holds the submissions folder ({subs}): it must be a folder of its "
                    "own"), line
    assert snapshot(tmp_path) == before


def test_an_out_whose_marker_was_written_for_another_folder_is_refused(tmp_path, earlier_out):
    """An earlier OUT copied, marker and all, into a folder with the user's own files: not ours to clear."""
    subs = tmp_path / "subs"
    subs.mkdir()
    copy = tmp_path / "thesis"
    shutil.copytree(earlier_out, copy)
    (copy / "chapter1.tex").write_text("precious")
    before = snapshot(tmp_path)
    proc = _grade(subs, "--out", copy)
    assert proc.returncode == 1, proc.stderr
    line = one_line(proc)
    assert line == (f"error: --out {copy} is not empty and was not written by grade.py for this folder (it holds a "
                    f"{MARKER} written for another folder (copied or moved here?)); choose an empty or new folder"), line
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("args, field", [
    (("SUBS", "--out", ""), "--out"),
    (("SUBS", "--out", "  "), "--out"),
    (("", "--out", "OUT"), "SUBMISSIONS_DIR"),
    (("merge", "", "--out", "OUT"), "OUT_K"),
    (("merge", "OUT", "--out", ""), "--out"),
])
def test_an_empty_path_is_bad_input_not_the_current_folder(tmp_path, args, field):
    """``--out "$OUT"`` with the variable unset would be the current folder: refused, nothing written there."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "SUBS").mkdir()
    (cwd / "SUBS" / "keep.txt").write_text("mine")
    before = snapshot(cwd)
    proc = _grade(*args, cwd=cwd)
    assert proc.returncode == 1, proc.stderr
    line = one_line(proc)
    assert line.startswith(f"error: argument {field}: empty path (is the variable it comes from set?)"), line
    assert snapshot(cwd) == before


@pytest.fixture
def fake_repo(tmp_path, monkeypatch):
    """The guard pointed at a stand-in repository (roster reads config.REPO_ROOT when called)."""
    repo = tmp_path / "ws" / "repo"
    (repo / "solutions").mkdir(parents=True)
    (repo / "solutions" / "answers.ipynb").write_text("{}")
    monkeypatch.setattr(config, "REPO_ROOT", repo)
    return repo


def test_an_out_that_is_or_holds_the_repository_is_refused(tmp_path, fake_repo):
    subs = tmp_path / "subs"
    subs.mkdir()
    ws = fake_repo.parent
    owned.write_marker(ws, MARKER, "autograde/grade.py")  # marked as a grading output for this very path
    (ws / "course").mkdir()
    (ws / "course" / "precious.txt").write_text("mine")
    before = snapshot(tmp_path)
    for out, needle in ((ws, "holds the course repository"), (fake_repo, "is the course repository")):
        with pytest.raises(SubmissionProblem, match=needle):
            prepare_out_dir(out, subs)
    assert snapshot(tmp_path) == before
    prepare_out_dir(fake_repo / "grading-2025-fall", subs)  # a new folder inside the repository is fine
    assert json.loads((fake_repo / "grading-2025-fall" / MARKER).read_text())["folder"] == \
        owned.folder_digest(fake_repo / "grading-2025-fall")


def test_a_link_left_in_an_earlier_out_is_removed_not_followed(tmp_path, earlier_out):
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "data.txt").write_text("mine")
    shutil.rmtree(earlier_out / "work")
    (earlier_out / "work").symlink_to(keep, target_is_directory=True)
    prepare_out_dir(earlier_out, tmp_path / "first-class")
    assert not (earlier_out / "work").exists() and (keep / "data.txt").read_text() == "mine"
