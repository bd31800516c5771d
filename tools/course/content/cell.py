"""A notebook cell as the lesson declares it: id (= nbgrader grade id), kind, nbgrader role, points.

Its own module so the builders and the tests can read cells without reading the lesson's files.
"""

from __future__ import annotations

from dataclasses import dataclass

from .regions import HIDDEN_BEGIN

KINDS = ("markdown", "code")
ROLES = ("readonly", "solution", "test", "plain")
"""``readonly``: locked; ``solution``: an exercise; ``test``: graded, worth ``points``; ``plain``: no nbgrader
metadata (students may edit it freely). cells/manifest.toml says what each means to nbgrader."""


@dataclass(frozen=True)
class Cell:
    id: str
    kind: str  # "markdown" or "code"
    role: str  # "readonly", "solution", "test" or "plain"
    source: str
    points: int = 0

    @property
    def hidden(self) -> bool:
        return HIDDEN_BEGIN in self.source
