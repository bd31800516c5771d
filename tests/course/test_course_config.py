"""The names every course layer agrees on: nbgrader's cell name read from a cell that may come from a student."""

import nbformat
import pytest

from tools.course.config import grade_id


def _cell(metadata):
    cell = nbformat.v4.new_code_cell("x = 1")
    cell["metadata"] = metadata
    return cell


def test_a_cells_grade_id_is_its_nbgrader_name():
    assert grade_id(_cell({"nbgrader": {"grade_id": "ex0-simulate", "solution": True}})) == "ex0-simulate"


@pytest.mark.parametrize("metadata", [{}, {"nbgrader": {}}, "not an object", {"nbgrader": "a string"},
                                      {"nbgrader": ["grade_id"]}, {"nbgrader": {"grade_id": 7}},
                                      {"nbgrader": {"grade_id": None}}])
def test_a_damaged_or_missing_name_reads_as_none(metadata):
    assert grade_id(_cell(metadata)) is None


def test_a_cell_without_metadata_has_no_name():
    assert grade_id({"cell_type": "code", "source": ""}) is None
