"""The plain data grading passes around: settings, the course, one student's result, and the one exception a
submission may cause. Plain, so it can go to a worker process and into results.json unchanged."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Settings:
    cell_timeout: float = 120.0
    """Seconds per cell (nbgrader Execute.timeout); a cell past it is interrupted and the notebook goes on."""
    hung_timeout: float = 2.0
    """Seconds for a cell that names a function which has already hung in an earlier cell (cell_limits.py)."""
    after_hang_budget: float = 40.0
    """Seconds for the rest of the notebook once a cell has timed out; cells past it are not run (score 0)."""
    submission_timeout: float = 900.0
    """Seconds for a whole submission (start-up, every cell, feedback); past it the worker tree is killed."""
    memory_limit_mb: int = 4096
    """Address-space limit of the worker and its kernel (0: none)."""
    max_notebook_mb: float = 50.0
    """Submissions larger than this are not read."""
    max_feedback_chars: int = 20000
    """Output kept per cell in the feedback."""


@dataclass
class Course:
    """What grading needs to know about the released assignment; plain data, so it can go to another process."""
    template_dir: str
    release_notebook: str
    cells: list[dict]  # graded cells in notebook order: {"id", "points", "hidden"}

    @property
    def max_score(self) -> float:
        return float(sum(cell["points"] for cell in self.cells))


@dataclass
class Result:
    student_id: str
    status: str  # graded | not_graded | error
    score: float | None = None
    max_score: float | None = None
    cells: dict[str, float | None] = field(default_factory=dict)
    reason: str = ""
    seconds: float = 0.0
    feedback: str | None = None
    diagnosis: list[str] | None = None
    """mistake:exercise codes named in the feedback (None: no diagnosis ran)."""
    cuts: list[dict] = field(default_factory=list)
    """Cells cut short or not run under the time rule: {"cell", "cut": timed_out | not_run, "limit_s",
    "function" (the one that hung, or None), "why"}."""


class SubmissionProblem(Exception):
    """The submission cannot be graded as handed in; the message is the reason shown to the instructor."""
