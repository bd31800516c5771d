"""The grading worker's life: forked from the warmed worker server, stopped with its whole process tree at the
submission limit, and recording where its time went. Real nbgrader, real kernels, one course for the module."""

import json
from multiprocessing import forkserver

import nbformat
import psutil
import pytest

from course_fixtures.make_class import _insert_after, with_solutions
from tools.course import config, grading, sandbox

pytestmark = pytest.mark.nbgrader  # real nbgrader / grade.py / kernels: left out by -m "not nbgrader"


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    out = tmp_path_factory.mktemp("worker") / "out"
    grading.prepare_out_dir(out, out.parent / "submissions")
    grading.start_worker_server()
    return out, grading.prepare(out), sandbox.capabilities()


def _submit(tmp_path, nb, student):
    path = tmp_path / "submissions" / student / config.NOTEBOOK_FILE
    path.parent.mkdir(parents=True)
    nbformat.write(nb, path)
    return path


def _server_pid() -> int:
    pid = getattr(forkserver._forkserver, "_forkserver_pid", None)
    assert pid is not None, "the worker server is not running"
    return pid


def _server_children() -> list[int]:
    return [p.pid for p in psutil.Process(_server_pid()).children(recursive=True)]


def _running_for(work) -> list[str]:
    """Processes whose command line names the submission's work folder (its kernel, its diagnosis run)."""
    return [" ".join(p.info["cmdline"])[:120] for p in grading.processes_of(work)]


def test_a_correct_submission_is_graded_by_a_forked_worker_that_records_its_phases(course, tmp_path):
    out, prepared, caps = course
    release = nbformat.read(config.RELEASE_NOTEBOOK, as_version=4)
    path = _submit(tmp_path, with_solutions(release, {}), "alice")
    result = grading.grade_submission(prepared, "alice", path, out, grading.Settings(cell_timeout=60),
                                      index=0, caps=caps)
    assert (result.status, result.score) == ("graded", 26.0), result.reason
    outcome = json.loads((out / "work" / "alice" / "result.json").read_text())
    assert outcome["worker"]["parent_pid"] == _server_pid()  # forked from the warmed server, not a new interpreter
    phases = outcome["phases"]
    assert {"autograde", "diagnosis", "feedback", "total"} <= set(phases)
    assert all(value > 0 for value in phases.values())
    assert phases["autograde"] + phases["diagnosis"] + phases["feedback"] <= phases["total"] <= result.seconds
    assert _server_children() == [] and _running_for(out / "work" / "alice") == []
    assert "SAWarning" not in (out / "work" / "alice" / "worker.log").read_text()  # nbgrader's gradebook noise


def test_the_submission_limit_stops_the_worker_and_everything_it_started(course, tmp_path):
    out, prepared, caps = course
    release = nbformat.read(config.RELEASE_NOTEBOOK, as_version=4)
    looping = _insert_after(with_solutions(release, {}), "setup", "while True:\n    pass")
    path = _submit(tmp_path, looping, "bob")
    settings = grading.Settings(cell_timeout=600, submission_timeout=12)  # the cell limit would come far later
    result = grading.grade_submission(prepared, "bob", path, out, settings, index=1, caps=caps)
    assert result.status == "not_graded" and result.score is None
    assert "timed out: grading took longer than 12 s" in result.reason
    assert 12 <= result.seconds < 45
    assert _server_children() == []  # the worker is gone, and so is its kernel:
    assert _running_for(out / "work" / "bob") == []
    spec = sandbox.Spec.read(out / "work" / "bob" / "sandbox.json")
    assert sandbox.count_user_processes(spec.uid) == 0
    assert (out / "feedback" / "bob" / "README.txt").read_text().count("timed out") == 1
