"""The English edition: built from the same source as the Chinese one (same cells, grade ids, points and test
code, English prose and docstrings), and graded by the same autograder: nbgrader's autograde with the course
built from the Chinese source notebook, as autograde/grade.py builds it, gives the English notebook with the
answers full marks and the English stub 0."""

import re

import nbformat
import pytest

from tools.course import config
from tools.course.build import notebook as build_notebook
from tools.course.build.nbgrader_course import course_config, prepare_course, run_converter
from tools.course.content import lesson

from course_fixtures.variants import strip_markers

pytestmark = pytest.mark.nbgrader  # real nbgrader / grade.py / kernels: left out by -m "not nbgrader"

HAN = re.compile(r"[\u4e00-\u9fff]")


def _graded(nb):
    return {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"].get("points")
            for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")}


def test_english_source_and_release_are_built_from_the_one_source():
    zh = nbformat.read(config.source_notebook("zh"), as_version=4)
    en = nbformat.read(config.source_notebook("en"), as_version=4)
    assert config.source_notebook("en").read_text(encoding="utf-8") == build_notebook.render(
        build_notebook.build_notebook(lesson.cells("en")))
    assert [c.id for c in en.cells] == [c.id for c in zh.cells]
    assert [c.metadata for c in en.cells] == [c.metadata for c in zh.cells], "same nbgrader roles, ids and points"
    assert _graded(en) == _graded(zh) and sum(_graded(en).values()) == 26
    from tools.course.content.lesson import english_code

    for a, b in zip(zh.cells, en.cells):
        if a.cell_type == "code" and not a.metadata.get("nbgrader", {}).get("solution"):
            assert english_code(a.source) == b.source, f"{a.id}: code is shared but for EN_CODE_LINES"
    prose = [c for c in en.cells if c.cell_type == "markdown"]
    for cell in prose:  # English prose; Chinese only in bilingual titles and a few quoted names
        chinese = len(HAN.findall(cell.source))
        assert chinese < 0.05 * len(cell.source), (cell.id, chinese)
    for cell_id in ("ex0-simulate", "ex1-summarize", "ex2-compare", "ex3-recommend"):
        source = next(c.source for c in en.cells if c.id == cell_id)
        docstring = source.split('"""')[1]
        assert not HAN.search(docstring), (cell_id, "the English docstring is English")
    intro = en.cells[0].source
    assert config.colab_url("notebooks/en/" + config.NOTEBOOK_FILE) in intro
    assert config.release_notebook("en").is_file() and config.release_notebook("zh") == config.RELEASE_NOTEBOOK


def _submit(course, student, nb):
    folder = course / "submitted" / student / config.ASSIGNMENT_ID
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / config.NOTEBOOK_FILE)


def test_english_notebook_scores_full_marks_and_its_stub_zero(tmp_path, monkeypatch):
    from nbgrader.api import Gradebook
    from nbgrader.converters import Autograde

    course = tmp_path / "course"
    prepare_course(course, config.SOURCE_NOTEBOOK)  # the Chinese source, as grade.py builds the course
    release = nbformat.read(config.release_notebook("en"), as_version=4)
    answers = {c.id: strip_markers(c.source) for c in nbformat.read(config.source_notebook("en"), as_version=4).cells
               if c.metadata.get("nbgrader", {}).get("solution")}
    assert len(answers) == 4 and all("### BEGIN" not in s for s in answers.values())
    answered = nbformat.reads(nbformat.writes(release), as_version=4)
    for cell in answered.cells:
        if cell.id in answers:
            cell.source = answers[cell.id]
    _submit(course, "en-answers", answered)
    _submit(course, "en-stub", release)
    monkeypatch.setenv("PREFIXBENCH_REPO", str(config.REPO_ROOT))
    monkeypatch.setenv("MPLBACKEND", "agg")
    result = run_converter(Autograde, course, student_id="*", force=True, create_student=True)
    assert result["success"], result.get("error", "")[-2000:]
    course_id = course_config(course).CourseDirectory.get("course_id", "")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id) as gb:
        scores = {s: gb.find_submission(config.ASSIGNMENT_ID, s).score for s in ("en-answers", "en-stub")}
        max_score = gb.find_assignment(config.ASSIGNMENT_ID).max_score
    assert max_score == 26
    assert scores == {"en-answers": 26, "en-stub": 0}, scores


def _run_offline(nb, tmp_path, env_extra=None, timeout=180):
    import os

    from nbclient import NotebookClient

    env = {k: v for k, v in os.environ.items() if k not in ("NBGRADER_EXECUTION", "PREFIXBENCH_TRACE_DIR")}
    env.update({"PREFIXBENCH_REPO": str(config.REPO_ROOT), "PYTHONPATH": str(config.REPO_ROOT),
                "PREFIXBENCH_CACHE": str(tmp_path / "cache"), "PREFIXBENCH_TRACE_BASE_URL": "http://127.0.0.1:9/t",
                "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9", "MPLBACKEND": "agg"})
    env.update(env_extra or {})
    NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute(env=env)
    return nb


def _printed(cell) -> str:
    parts = []
    for output in cell.get("outputs", []):
        parts.append(output.get("text", ""))
        parts.append(output.get("data", {}).get("text/plain", ""))
        parts.extend(output.get("traceback", []))
        parts.append(output.get("evalue", ""))
    return "".join(parts)


def test_english_edition_run_top_to_bottom_prints_no_chinese(tmp_path):
    """Every message a code cell prints in the English edition is English (the section titles, in Markdown,
    stay bilingual); the answers pass every visible test and the self-check."""
    nb = _run_offline(nbformat.read(config.source_notebook("en"), as_version=4), tmp_path)
    errors = {c.id: _printed(c) for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"}
    assert errors == {}, errors
    chinese = {c.id: _printed(c) for c in nb.cells if c.cell_type == "code" and HAN.search(_printed(c))}
    assert chinese == {}, chinese
    cells = {c.id: _printed(c) for c in nb.cells}
    assert "TODO 3: visible test passed" in cells["test-ex3-visible"]
    assert "All visible probes pass" in cells["diagnose"] and "match:" in cells["self-check"]


def test_after_a_failed_setup_every_later_cell_says_run_the_setup_cell_first(tmp_path):
    """No repository and no network: the setup cell explains itself, and every later cell that needs it says
    "run the setup cell first" (in the edition's language) instead of a NameError."""
    nb = nbformat.read(config.release_notebook("en"), as_version=4)
    empty = tmp_path / "empty"
    empty.mkdir()
    nb = _run_offline(nb, empty, {"PREFIXBENCH_REPO": "", "PYTHONPATH": "", "PREFIXBENCH_REPO_URL": str(tmp_path / "x"),
                                  "HOME": str(tmp_path)}, timeout=60)
    errors = {c.id: [o for o in c.outputs if o.output_type == "error"] for c in nb.cells if c.cell_type == "code"}
    assert errors["setup"] and errors["setup"][0].ename == "SetupProblem"
    for cell_id, found in errors.items():
        if cell_id == "setup" or not found:
            continue
        if cell_id.startswith(("ex0-", "ex1-", "ex2-", "ex3-", "test-")):  # the exercises need no setup: their stubs raise NotImplementedError
            assert found[0].ename in ("NotImplementedError", "AssertionError"), (cell_id, found[0].ename)
            continue
        assert found[0].ename == "SetupProblem" and "Run the setup cell first" in found[0].evalue, (cell_id, found)
    for cell in nb.cells:
        assert "NameError" not in _printed(cell), (cell.id, _printed(cell))
    needing = [c.id for c in nb.cells if c.cell_type == "code" and "require_" in c.source]
    assert {"measure", "compare-policies", "eviction-cost", "decide", "self-check"} <= set(needing)
    assert all(errors[i] for i in needing if i != "gpu-backend"), needing
