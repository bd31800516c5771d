"""How long each cell of a submission may run: the rule for hanging cells, inside nbgrader's Execute.

A function that never returns would otherwise cost the full cell timeout in every cell that calls it (eight
cells of this notebook call ``simulate_prefix_cache``, seven of them would wait 120 s: 14 minutes of a class's
grading for one student). So:

1. every cell gets the cell timeout (``--cell-timeout``, 120 s by default);
2. when a cell times out, the grader names the functions it was stuck in: those defined in notebook cells on
   the interrupt's traceback (the innermost one looped; its callers are blamed with it). For a loop at a cell's
   top level: the notebook's functions that the cell names, usually none;
3. every later cell whose code names a hung function gets ``--hung-timeout`` (2 s) instead: the function
   already failed to return once. A function that hangs on some inputs only still passes the cells where it
   returns in time; cells that do not call it keep the full timeout and earn their points as usual;
4. once a cell has timed out, the rest of the notebook has ``--after-hang-budget`` seconds (40 s) in all: each
   cell's timeout is capped at what is left, and when less than a second is left the remaining cells are not
   run (a graded one scores 0, and says why).

``CUTS`` records every cell that was cut short or not run (results.json, the row's reason, the feedback page).
"""

from __future__ import annotations

import re
import time
from typing import Any

import nbformat
from nbgrader.preprocessors import Execute
from traitlets import Float

from ..config import grade_id

CUTS: list[dict] = []
"""Cells of this worker's notebook that were cut short or not run, in notebook order."""

NOT_RUN = "NotRun"
"""``ename`` of the error output put into a cell that was not run (nbgrader scores a graded one 0)."""
MIN_LEFT_S = 1.0
"""Below this much of the after-hang budget, a cell is not started at all."""

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_CELL_FRAME = re.compile(r"^(?:Cell In\s*\[\d+\]|Input In\s*\[\d+\]|<ipython-input-[^>]*>).*?, in (\w+)\(")
_DEF = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)", re.M)


def cell_label(cell: nbformat.NotebookNode, index: int) -> str:
    return grade_id(cell) or f"cell {index}"


def _names(source: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", source) is not None


def hung_functions(outputs: list, source: str, notebook_functions: set[str]) -> list[str]:
    """The functions a timed-out cell was stuck in, outermost first: those defined in notebook cells on the
    interrupt's traceback (the innermost is where it looped; its callers, a helper's caller, are blamed too).
    Without such a frame (the loop is at the cell's top level, or the traceback is missing): the notebook's
    functions that the cell names."""
    for output in reversed(outputs):
        if output.get("output_type") != "error" or output.get("ename") != "KeyboardInterrupt":
            continue
        frames = [m.group(1) for entry in output.get("traceback", [])
                  if (m := _CELL_FRAME.match(_ANSI.sub("", str(entry)).strip()))]
        if frames:
            return list(dict.fromkeys(frames))
    return sorted(name for name in notebook_functions if _names(source, name))


def _not_run_output(reason: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_output("error", ename=NOT_RUN, evalue=reason, traceback=[f"{NOT_RUN}: {reason}"])


class LimitedExecute(Execute):
    """nbgrader's Execute with the rule above (its options come from the grading settings)."""

    hung_timeout = Float(2.0, help="Seconds for a cell that names a function which has hung before.").tag(config=True)
    after_hang_budget = Float(40.0, help="Seconds for the rest of the notebook once a cell has timed out.").tag(
        config=True)

    def preprocess(self, nb: Any, resources: Any = None, km: Any = None) -> Any:
        self._hung: dict[str, str] = {}  # function -> the cell it hung in
        self._deadline: float | None = None
        self._limit: float | None = None
        self._timed_out = False
        self._functions = {name for cell in nb.cells if cell.cell_type == "code" for name in _DEF.findall(cell.source)}
        return super().preprocess(nb, resources, km)

    def _get_timeout(self, cell: Any) -> Any:
        if cell is not None and self._limit is not None:
            return self._limit
        return super()._get_timeout(cell)

    async def _async_handle_timeout(self, timeout: Any, cell: Any = None) -> Any:
        self._timed_out = True
        return await super()._async_handle_timeout(timeout, cell)

    def _plan(self, cell: nbformat.NotebookNode) -> tuple[float | None, str | None, str]:
        """(this cell's timeout, or None: do not run it; the hung function it calls; why its timeout is shorter
        than the cell timeout)."""
        limit, why = float(self.timeout), ""
        blamed = next((name for name in self._hung if _names(cell.source, name)), None)
        if blamed is not None:
            limit = min(limit, self.hung_timeout)
            why = f"calls {blamed}, which did not return in {self._hung[blamed]}"
        if self._deadline is not None:
            left = self._deadline - time.monotonic()
            if left < MIN_LEFT_S:
                return None, blamed, (f"the {self.after_hang_budget:g} s left to the notebook after a cell timed "
                                      "out were used up")
            if left < limit:
                limit, why = left, (f"stopped when the {self.after_hang_budget:g} s left to the notebook after a "
                                    "cell timed out ran out")
        return limit, blamed, why

    def preprocess_cell(self, cell: Any, resources: Any, index: Any) -> Any:
        if cell.cell_type != "code" or not cell.source.strip():
            return super().preprocess_cell(cell, resources, index)
        limit, blamed, why = self._plan(cell)
        label = cell_label(cell, index)
        if limit is None:
            cell.outputs = [_not_run_output(f"not run: {why}")]
            CUTS.append({"cell": label, "cut": "not_run", "limit_s": 0, "function": blamed, "why": why})
            return cell, self.resources
        self._limit, self._timed_out = limit, False
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
        finally:
            self._limit = None
        if self._timed_out:
            functions = hung_functions(cell.get("outputs", []), cell.source, self._functions)
            for name in functions:
                self._hung.setdefault(name, label)
            if self._deadline is None:
                self._deadline = time.monotonic() + self.after_hang_budget
            CUTS.append({"cell": label, "cut": "timed_out", "limit_s": round(limit, 2),
                         "function": blamed or (functions[-1] if functions else None),
                         "why": why or f"ran past the cell timeout ({float(self.timeout):g} s)"})
        return cell, resources


def cut_notes(cuts: list[dict]) -> list[str]:
    """The instructor's reason (and the student's feedback) for the cells cut short or not run."""
    first = [c for c in cuts if c["cut"] == "timed_out" and c["why"].startswith("ran past")]
    short = [c for c in cuts if c["cut"] == "timed_out" and not c["why"].startswith("ran past")]
    not_run = [c for c in cuts if c["cut"] == "not_run"]
    notes = []
    if first:
        limit = first[0]["limit_s"]
        where = ", ".join(c["cell"] + (f" (in {c['function']})" if c["function"] else "") for c in first)
        notes.append(f"timed out after {limit:g} s and interrupted: {where}")
    groups: dict[str, list[dict]] = {}
    for cut in short:
        groups.setdefault(cut["why"], []).append(cut)
    for why, group in groups.items():
        limit = max(c["limit_s"] for c in group)
        notes.append(f"cut short after {limit:g} s ({why}): {', '.join(c['cell'] for c in group)}")
    if not_run:
        notes.append(f"not run, score 0 ({not_run[0]['why']}): {', '.join(c['cell'] for c in not_run)}")
    return notes


CUTS_HEADER = ("## 评分时限 | Time limits\n\n有单元格在评分时超时：超时的函数只等待一次，之后调用它的单元格只给很短的时间，"
               "其余单元格照常评分。 | Some cells ran out of time while grading: a function that hangs is waited for "
               "once; later cells that call it get a few seconds, and every other cell is graded as usual.")


def cuts_cell(notes: list[str]) -> nbformat.NotebookNode:
    """The feedback's section on the cells cut short or not run (the same notes as the instructor's reason)."""
    return nbformat.v4.new_markdown_cell(CUTS_HEADER + "\n\n" + "\n".join(f"- {note}" for note in notes),
                                         id="graded-time-limits")
