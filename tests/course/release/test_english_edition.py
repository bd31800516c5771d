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
    for a, b in zip(zh.cells, en.cells):
        if a.metadata.get("nbgrader", {}).get("grade"):
            assert a.source == b.source, f"{a.id}: test cells are shared, word for word"
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
