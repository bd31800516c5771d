"""Make an autograded notebook safe to hand back: no hidden test reaches a student through feedback.

nbgrader writes hidden tests into the autograded notebook and from there into the feedback HTML (upstream issues
#917 and #1363). Before ``generate_feedback`` runs, the worker replaces the autograded notebook by a sanitised copy:

1. every hidden-test cell gets back its *release* source (the comment students already saw), and its outputs are
   replaced by one line: passed, or failed with the exception's class name; the failure message is shown only when
   it is one of the constant hint strings written in the hidden tests (never values from the test, never a message
   built by the student's code, which could echo the hidden inputs);
2. every cell that ran *after* the first hidden-test cell loses its outputs: student code can record the hidden
   tests' inputs and print them later. Hidden tests sit at the end of the notebook, so this normally drops nothing
   but the hidden cells themselves; a student who moves a hidden cell up loses outputs below it, not the grader;
3. the remaining outputs are cut to a size limit (text and tracebacks), so a flood of output cannot bloat feedback.

After nbgrader renders the HTML, ``html_leaks`` checks it again (a second, independent line of defence): no region
marker and no line that only occurs inside a hidden-test region may appear in the rendered text. A feedback file
that fails the check is withheld and the student's row says so.
"""

from __future__ import annotations

import ast
import copy
import html
import re
import textwrap

import nbformat

from ..config import grade_id
from ..content.regions import HIDDEN_BEGIN  # noqa: F401 - part of this module's interface (the tests use it)
from ..content.regions import HIDDEN_MARKERS, HIDDEN_REGIONS, lines_only_inside, regions

PASSED = "隐藏测试：通过 | hidden tests passed"
DROPPED = "（评分时这个单元格在隐藏测试之后运行，输出不在反馈中显示 | output withheld: ran after the hidden tests）"


def hidden_regions(source: str) -> list[str]:
    return regions(source, HIDDEN_REGIONS)


def hint_strings(source: str) -> set[str]:
    """Constant messages of ``assert ..., "msg"`` and ``raise X("msg")`` inside the hidden regions of ``source``."""
    hints: set[str] = set()
    for region in hidden_regions(source):
        try:
            tree = ast.parse(textwrap.dedent(region))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            message = None
            if isinstance(node, ast.Assert):
                message = node.msg
            elif isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
                message = node.exc.args[0]
            if isinstance(message, ast.Constant) and isinstance(message.value, str):
                hints.add(message.value)
    return hints


def hidden_lines(source_nb: nbformat.NotebookNode, min_length: int = 12) -> set[str]:
    """Stripped lines that occur only inside hidden-test regions of the source notebook (the secret)."""
    return lines_only_inside((cell.source for cell in source_nb.cells), HIDDEN_REGIONS, min_length)


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n... [{len(text) - limit} more characters cut]"


def _merge_streams(outputs: list) -> list:
    """Consecutive stream outputs of one name as one: how a kernel splits a cell's prints into messages depends
    on timing (its flush interval), and the feedback must not (serial and parallel runs give the same page)."""
    merged: list = []
    for output in outputs:
        if (output.get("output_type") == "stream" and merged and merged[-1].get("output_type") == "stream"
                and merged[-1].get("name") == output.get("name")):
            merged[-1] = copy.deepcopy(merged[-1])
            merged[-1]["text"] = merged[-1].get("text", "") + output.get("text", "")
        else:
            merged.append(output)
    return merged


def _cap_outputs(outputs: list, limit: int) -> list:
    capped = []
    budget = limit
    for output in _merge_streams(outputs):
        output = copy.deepcopy(output)
        kind = output.get("output_type")
        if kind == "stream":
            output["text"] = _cap(output.get("text", ""), max(budget, 200))
            budget -= len(output["text"])
        elif kind == "error":
            trace = output.get("traceback", [])
            output["traceback"] = [_cap(line, 2000) for line in trace[:30]] + (["..."] if len(trace) > 30 else [])
            output["evalue"] = _cap(output.get("evalue", ""), 2000)
        elif kind in ("display_data", "execute_result"):
            data = output.get("data", {})
            for mime in list(data):
                if mime.startswith("text/") and isinstance(data[mime], str):
                    data[mime] = _cap(data[mime], max(budget, 200))
                elif mime.startswith("application/vnd.jupyter.widget"):
                    del data[mime]  # widgets cannot render in a static feedback page
            if not data:
                continue
        capped.append(output)
        if budget <= 0:
            capped.append(nbformat.v4.new_output("stream", name="stdout", text="... [further output cut]\n"))
            break
    return capped


def hidden_cell_summary(outputs: list, hints: set[str]) -> str:
    errors = [o for o in outputs if o.get("output_type") == "error"]
    if not errors:
        return PASSED
    error = errors[-1]
    name = str(error.get("ename", "Error"))[:80]
    value = str(error.get("evalue", ""))
    if value in hints:
        return f"隐藏测试未通过 | hidden tests failed: {name}: {value}"
    return f"隐藏测试未通过 | hidden tests failed ({name})"


def sanitize(autograded: nbformat.NotebookNode, release: nbformat.NotebookNode, hidden_ids: set[str],
             hints: set[str], max_chars: int = 20000) -> nbformat.NotebookNode:
    """A copy of ``autograded`` that is safe to render as feedback (see the module docstring)."""
    release_sources = {grade_id(cell): cell.source for cell in release.cells if grade_id(cell)}
    nb = copy.deepcopy(autograded)
    after_hidden = False
    for cell in nb.cells:
        name = grade_id(cell)
        if name in hidden_ids:
            cell.source = release_sources.get(name, "# hidden tests")
            if cell.cell_type == "code":
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                                       text=hidden_cell_summary(cell.outputs, hints) + "\n")]
            after_hidden = True
        elif cell.cell_type == "code" and cell.get("outputs"):
            if after_hidden:
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=DROPPED + "\n")]
            else:
                cell.outputs = _cap_outputs(cell.outputs, max_chars)
        if "attachments" in cell and after_hidden:
            del cell["attachments"]
    return nb


def notebook_leaks(nb: nbformat.NotebookNode, secrets: set[str]) -> list[str]:
    found = []
    for cell in nb.cells:
        blob = cell.source + "\n" + "\n".join(str(o) for o in cell.get("outputs", []))
        for marker in HIDDEN_MARKERS:
            if marker in blob:
                found.append(f"cell {cell.get('id')}: marker {marker!r}")
        leaked = {line.strip() for line in blob.splitlines()} & secrets
        if leaked:
            found.append(f"cell {cell.get('id')}: {len(leaked)} hidden-test line(s)")
    return found


def html_text_lines(page: str) -> set[str]:
    """The text a browser would show, line by line (tags removed, entities decoded)."""
    page = re.sub(r"<(script|style)\b.*?</\1>", "", page, flags=re.S | re.I)
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    return {line.strip() for line in text.splitlines() if line.strip()}


def html_leaks(page: str, secrets: set[str]) -> list[str]:
    found = []
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    for marker in HIDDEN_MARKERS:
        if marker in text:
            found.append(f"marker {marker!r}")
    leaked = html_text_lines(page) & secrets
    if leaked:
        found.append(f"{len(leaked)} hidden-test line(s), e.g. {sorted(leaked)[0][:50]!r}")
    return found
