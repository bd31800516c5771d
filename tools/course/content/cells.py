"""A notebook cell as the lesson declares it: id (= nbgrader grade id), kind, nbgrader role, points.

Its own module so the builders and the tests can read cells without importing the lesson's text.
"""

from __future__ import annotations

from dataclasses import dataclass

from .regions import HIDDEN_BEGIN


@dataclass(frozen=True)
class Cell:
    id: str
    kind: str  # "markdown" or "code"
    role: str  # "readonly", "solution", "test" or "plain" (no nbgrader metadata: students may edit it freely)
    source: str
    points: int = 0

    @property
    def hidden(self) -> bool:
        return HIDDEN_BEGIN in self.source


def md(cell_id: str, text: str) -> Cell:
    return Cell(cell_id, "markdown", "readonly", text.strip("\n"))


def code(cell_id: str, text: str) -> Cell:
    return Cell(cell_id, "code", "readonly", text.strip("\n"))


def plain(cell_id: str, text: str) -> Cell:
    return Cell(cell_id, "code", "plain", text.strip("\n"))


def solution(cell_id: str, text: str) -> Cell:
    return Cell(cell_id, "code", "solution", text.strip("\n"))


def test(cell_id: str, text: str, points: int) -> Cell:
    return Cell(cell_id, "code", "test", text.strip("\n"), points)
