"""A class graded on several machines: which slice a student belongs to, and what each slice records about itself.

``grade.py --shard K/N`` grades the students whose id hashes to slice K of N. The hash (SHA-256 of the id, not
Python's salted ``hash``) gives every machine, every Python and every run the same answer, and it depends on the
id alone: a student added to the class (a late submission) lands in one slice and moves nobody else, so a slice
graded earlier stays valid. Sorted-order slicing would balance the slices exactly but shift every later student.

Each slice writes ``run.shard`` into its results.json: its index and count, the roster of the whole class as that
machine saw it, and a digest of the course it graded against. ``merge.py`` checks these before it joins anything.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import nbformat


def shard_of(student_id: str, count: int) -> int:
    """The slice (1..count) that ``student_id`` belongs to."""
    digest = hashlib.sha256(student_id.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def course_digest(source_notebook: Path) -> str:
    """A digest of what grading depends on in the source notebook: each cell's type, source and nbgrader
    metadata (not outputs, ids or line endings: two checkouts of the same commit agree)."""
    nb = nbformat.read(Path(source_notebook), as_version=4)
    cells = [[cell.cell_type, cell.source.replace("\r\n", "\n"), cell.get("metadata", {}).get("nbgrader", {})]
             for cell in nb.cells]
    text = json.dumps(cells, sort_keys=True, ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def shard_record(index: int, count: int, roster: list[str], digest: str) -> dict:
    """What a slice's results.json says about it (``run.shard``)."""
    return {"index": index, "count": count, "roster": sorted(roster), "course": digest}


def take_slice(rows: list, index: int, count: int) -> list:
    """The rows (anything with a ``student_id``) that belong to slice ``index`` of ``count``."""
    return [row for row in rows if shard_of(row.student_id, count) == index]
