"""The feedback of a submission reads in the edition it was made from (the grader builds one Chinese course)."""

import copy

import nbformat

from tools.course import config
from tools.course.grading.editions import edition_of, release_editions, with_edition_text


def _markdown(nb):
    return [c.source for c in nb.cells if c.cell_type == "markdown"]


def test_each_release_is_recognised_and_answers_do_not_change_the_edition():
    releases = release_editions()
    assert set(releases) == {"zh", "en"}
    assert edition_of(releases["en"], releases) == "en" and edition_of(releases["zh"], releases) == "zh"
    answered = copy.deepcopy(releases["en"])  # a student's code and one edited Markdown cell leave it English
    for cell in answered.cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = "def simulate_prefix_cache(*a, **k):\n    return {}"
    next(c for c in answered.cells if c.cell_type == "markdown").source += "\nmy note"
    assert edition_of(answered, releases) == "en"
    assert edition_of(nbformat.v4.new_notebook(), releases) == config.DEFAULT_LANGUAGE  # nothing matches: default


def test_the_feedback_of_an_english_submission_gets_its_markdown_back_and_nothing_else_changes():
    releases = release_editions()
    graded = copy.deepcopy(releases["zh"])  # what nbgrader leaves: every locked cell from the Chinese source
    for cell in graded.cells:
        if cell.cell_type == "code":
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="ran\n")]
    restored = with_edition_text(graded, releases["en"])
    assert _markdown(restored) == _markdown(releases["en"]) != _markdown(graded)
    code = [(c.source, c.outputs) for c in restored.cells if c.cell_type == "code"]
    assert code == [(c.source, c.outputs) for c in graded.cells if c.cell_type == "code"]
    assert _markdown(graded) == _markdown(releases["zh"])  # the input is not changed in place
