"""``release --student-dir`` removes nothing it did not write: a folder that holds the course repository, one whose
marker was written for another path, and an empty ``--student-dir`` (an unset variable) are refused with one line
and exit 1, and every file is left byte for byte as it was.

The destructive layouts run the real command in a copy of the repository (``python -m tools.course.release`` from
the copy imports the copy, so the repository it protects is the copy); the real repository is never in reach.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tools.course import config
from tools.course.build import owned, student

from course_fixtures.cli import one_line, snapshot

pytestmark = pytest.mark.nbgrader  # real nbgrader / grade.py / kernels: left out by -m "not nbgrader"

COPIED = ("tools", "solutions", "notebooks", "autograde", "benchmarks/workloads", "colab_links.md",
          "requirements.txt")
"""What the release command needs of the repository (it is refused long before it would read more)."""


def copy_repository(dest: Path) -> Path:
    """The parts of this repository the release command uses, copied to ``dest`` (no caches, no .git)."""
    for rel in COPIED:
        source = config.REPO_ROOT / rel
        if source.is_dir():
            shutil.copytree(source, dest / rel, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, dest / rel)
    return dest


def release_in(repo: Path, *args: str) -> subprocess.CompletedProcess:
    """``python -m tools.course.release ARGS`` run from ``repo`` (which it then imports and protects)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "STUDENT_DIR")}
    return subprocess.run([sys.executable, "-m", "tools.course.release", *args], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def workspace(tmp_path):
    """A workspace WS holding the copy of the repository, the instructor's notes and a student-tree marker."""
    ws = tmp_path / "ws"
    copy_repository(ws / "prefixbench")
    (ws / "notes.md").write_text("my notes\n")
    return ws


@pytest.mark.parametrize("marker", ["old", "for_this_path"])
def test_a_student_dir_that_holds_the_repository_is_refused(workspace, marker):
    """The issue's layout: WS holds the repository and a marker (from an older release, or even one written for
    WS itself): the repository, solutions included, must survive."""
    if marker == "old":
        (workspace / student.MARKER_FILE).write_text("written by python -m tools.course.release --student-dir\n")
    else:
        owned.write_marker(workspace, student.MARKER_FILE, student.WRITTEN_BY)
    before = snapshot(workspace)
    proc = release_in(workspace / "prefixbench", "--student-dir", str(workspace))
    assert proc.returncode == 1, proc.stderr
    line = one_line(proc)
    assert line == (f"error: --student-dir: {workspace} holds the course repository ({workspace / 'prefixbench'}); "
                    "publish the student tree in a folder of its own"), line
    assert snapshot(workspace) == before


@pytest.mark.parametrize("value", ["", "   "])
def test_an_empty_student_dir_is_bad_input_and_writes_nothing(tmp_path, value):
    """``--student-dir "$STUDENT_DIR"`` with the variable unset: not "no flag" (which regenerates solutions/,
    notebooks/ and colab_links.md). The copy's files are made stale first, so any rewrite would show."""
    repo = copy_repository(tmp_path / "prefixbench")
    for path in (repo / "colab_links.md", repo / "solutions" / config.NOTEBOOK_FILE):
        path.write_bytes(path.read_bytes() + b"\n")
    before = snapshot(repo)
    proc = release_in(repo, "--student-dir", value)
    assert proc.returncode == 1, proc.stderr
    assert one_line(proc) == ("error: --student-dir: empty path (is the variable it comes from set?); "
                              "give a folder"), proc.stderr
    assert proc.stdout == ""
    assert snapshot(repo) == before


@pytest.mark.parametrize("args", [["--chek"], ["--student-dir"], ["--check", "extra"]])
def test_a_mistyped_option_is_one_line_and_exit_1_and_writes_nothing(tmp_path, args):
    """A usage error answers like every other bad input (argparse's own: the usage text and exit 2), names the
    command as it was typed, and regenerates nothing (the copy's files are stale, so a rewrite would show)."""
    repo = copy_repository(tmp_path / "prefixbench")
    (repo / "colab_links.md").write_bytes((repo / "colab_links.md").read_bytes() + b"\n")
    before = snapshot(repo)
    proc = release_in(repo, *args)
    assert proc.returncode == 1, proc.stderr
    assert one_line(proc).startswith("python -m tools.course.release: error: "), proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    assert snapshot(repo) == before


@pytest.fixture
def fake_repo(tmp_path, monkeypatch):
    """The guard pointed at a stand-in repository in tmp_path (the module reads config.REPO_ROOT when called)."""
    repo = tmp_path / "repo"
    (repo / "solutions").mkdir(parents=True)
    (repo / "solutions" / "answers.ipynb").write_text("{}")
    monkeypatch.setattr(config, "REPO_ROOT", repo)
    return repo


def _refused(dest, needle: str) -> str:
    with pytest.raises(student.StudentTreeError) as caught:
        student.validate_dest(dest)
    message = str(caught.value)
    assert needle in message and "\n" not in message, message
    return message


def test_the_repository_itself_a_folder_in_it_or_around_it_is_refused(fake_repo, tmp_path):
    before = snapshot(tmp_path)
    _refused(fake_repo, "is the course repository")
    _refused(fake_repo / "solutions", "is inside the course repository")
    _refused(fake_repo / "new-tree", "is inside the course repository")
    owned.write_marker(tmp_path, student.MARKER_FILE, student.WRITTEN_BY)  # even marked as ours for this path
    before[student.MARKER_FILE] = snapshot(tmp_path)[student.MARKER_FILE]
    _refused(tmp_path, "holds the course repository")
    link = tmp_path / "link"
    link.symlink_to(fake_repo, target_is_directory=True)
    before["link"] = snapshot(tmp_path)["link"]
    _refused(link, "is the course repository")  # another spelling of the same folder
    assert snapshot(tmp_path) == before


def test_a_marker_written_for_another_folder_does_not_make_a_folder_ours(fake_repo, tmp_path):
    """A tree copied or moved elsewhere, with the user's own files beside it, is not ours to empty."""
    first = tmp_path / "published"
    first.mkdir()
    owned.write_marker(first, student.MARKER_FILE, student.WRITTEN_BY)
    assert student.validate_dest(first) == first  # its own path: ours
    moved = tmp_path / "thesis"
    shutil.copytree(first, moved)
    (moved / "chapter1.tex").write_text("precious")
    before = snapshot(moved)
    _refused(moved, "written for another folder (copied or moved here?)")
    assert snapshot(moved) == before


@pytest.mark.parametrize("content", ["old", "not_json", "link"])
def test_a_marker_that_records_no_folder_is_refused(fake_repo, tmp_path, content):
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "mine.txt").write_text("mine")
    marker = dest / student.MARKER_FILE
    if content == "old":
        marker.write_text("written by python -m tools.course.release --student-dir\n")
    elif content == "not_json":
        marker.write_text('{"path": ')
    else:  # a link to a real marker written for dest: a marker is only read when it is a regular file
        real = tmp_path / "elsewhere"
        real.mkdir()
        (real / "m").write_text(json.dumps({"written_by": student.WRITTEN_BY, "folder": owned.folder_digest(dest)}))
        marker.symlink_to(real / "m")
    before = snapshot(dest)
    _refused(dest, "records no folder")
    assert snapshot(dest) == before


def test_a_tree_written_by_release_records_its_path_and_is_rewritten(tmp_path):
    dest = tmp_path / "published"
    student.write(dest)
    marker = json.loads((dest / student.MARKER_FILE).read_text())
    assert marker == {"written_by": student.WRITTEN_BY, "folder": owned.folder_digest(dest)}
    assert str(tmp_path) not in (dest / student.MARKER_FILE).read_text()  # published: no instructor path in it
    (dest / "stale.txt").write_text("from an older release")
    student.write(dest)
    assert not (dest / "stale.txt").exists() and (dest / student.MARKER_FILE).is_file()


def _git(folder, *args):
    subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@x"})


def test_a_clone_of_the_student_repository_made_elsewhere_is_ours_only_when_all_is_committed(fake_repo, tmp_path):
    """The published tree carries the marker of the machine that wrote it; a clone elsewhere may be rewritten
    when every file is committed (nothing replaced is lost), and is refused with an uncommitted file."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    published = tmp_path / "published"
    published.mkdir()
    owned.write_marker(published, student.MARKER_FILE, student.WRITTEN_BY)
    (published / "README.md").write_text("student edition\n")
    _git(published, "init", "-q")
    _git(published, "add", "-A")
    _git(published, "commit", "-qm", "release")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(published), str(clone)], check=True, capture_output=True)
    assert student.validate_dest(clone) == clone
    (clone / "my-notes.txt").write_text("not committed")
    before = snapshot(clone)
    _refused(clone, "written for another folder")
    assert snapshot(clone) == before
