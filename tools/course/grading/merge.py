"""Join the slices of a class graded with ``grade.py --shard K/N`` into one output, as a single run would write it.

    python autograde/grade.py merge OUT_1 ... OUT_N --out OUT

Every check runs before anything is written, and the slices are only read: all N slices of one --shard N, each
once, graded against the same course with the same limits, no student in two slices or in the wrong one, every
feedback page present, and a result for every student that any slice saw in the class, in the slice the id
belongs to (so an interrupted slice, or one graded from a stale copy of the submissions, is refused, while a
slice graded again for a late submission joins the others). The first problem found is a ``MergeProblem`` with
one line naming the folder. Then OUT gets ``grades.csv``, ``results.json`` and
``feedback/`` equal to what one machine grading the whole class writes (per-student seconds aside), and
``shards.json`` saying where each slice came from. The instructor-only ``course/`` and ``work/`` stay in the
slices' folders.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

from tools.prefixbench.core.errors import InputError
from tools.prefixbench.core.files import atomic_write_json, check_output_folder, to_strict_json

from .. import config
from ..build.owned import real, write_marker
from .class_files import Missing, NotRegular, open_inside, real_folder_problem
from .model import Course, Result
from .results import finite, write_results
from .roster import MARKER, WRITTEN_BY, out_dir_problem, remove_entry
from .shards import shard_of

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

STAGING = ".feedback.merging"
"""Where the merged feedback is assembled inside OUT before it replaces OUT/feedback."""


class MergeProblem(Exception):
    """The slices cannot be joined (one line: which folder, what is wrong, what to do); nothing was written."""


class Shard(NamedTuple):
    label: str  # "OUT_2 (grading-2)": how messages name it
    path: Path
    data: dict  # its results.json
    record: dict  # run.shard
    results: list[Result]


def _strict_load(root: Path, path: Path) -> Any:
    """A slice's JSON file, strict, read only when it is a regular file inside the slice (no link)."""
    def refuse(name: str) -> NoReturn:
        raise ValueError(f"{name} is not JSON")
    try:
        with open_inside(root, path) as handle:
            return json.loads(handle.read().decode("utf-8"), parse_constant=refuse)
    except NotRegular as exc:
        raise ValueError(f"{exc}: not a regular file inside the slice") from None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _optional(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: value is None or check(value)


FIELD_CHECKS = {
    "student_id": lambda v: isinstance(v, str) and v not in ("", ".", "..") and "/" not in v and "\0" not in v,
    "status": lambda v: v in ("graded", "not_graded", "error"),
    "score": _optional(_number),
    "max_score": _optional(_number),
    "cells": lambda v: isinstance(v, dict) and all(isinstance(k, str) and (x is None or _number(x))
                                                   for k, x in v.items()),
    "reason": lambda v: isinstance(v, str),
    "seconds": _optional(_number),
    "feedback": _optional(lambda v: isinstance(v, str)),
    "diagnosis": _optional(lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v)),
    "cuts": lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v),
}
"""What each field of a result (every field of ``Result``) must hold, so that nothing fails on it once writing
has begun."""


def _result_of(label: str, number: int, entry: Any) -> Result:
    if not isinstance(entry, dict) or set(entry) != set(FIELD_CHECKS):
        raise MergeProblem(f"{label}: results.json student {number} is not a result of this grade.py "
                           "(grade that slice again)")
    for name, check in FIELD_CHECKS.items():
        if not check(entry[name]):
            raise MergeProblem(f"{label}: results.json student {number} has an unusable {name} "
                               f"{repr(entry[name])[:60]} (grade that slice again)")
    return Result(**entry)


def _results_of(label: str, students: Any) -> list[Result]:
    if not isinstance(students, list):
        raise MergeProblem(f"{label}: results.json has no list of students")
    return [_result_of(label, number, entry) for number, entry in enumerate(students, start=1)]


def read_shard(path: Path, number: int) -> Shard:
    """One slice's output folder, checked to be a whole grade.py --shard output."""
    label = f"OUT_{number} ({path})"
    if not path.is_dir():
        raise MergeProblem(f"{label}: no such folder" if not path.exists() else f"{label}: not a folder")
    results_json = path / "results.json"
    if not (path / MARKER).is_file() or not results_json.is_file():
        raise MergeProblem(f"{label}: not a grade.py output (no {MARKER} and results.json)")
    try:
        data = _strict_load(path, results_json)
        to_strict_json(data)  # what is read here is written back: text it cannot write is refused now
    except (OSError, UnicodeError, ValueError) as exc:
        raise MergeProblem(f"{label}: results.json cannot be read ({exc})") from None
    record = data.get("run", {}).get("shard") if isinstance(data, dict) and isinstance(data.get("run"), dict) else None
    if not isinstance(record, dict):
        raise MergeProblem(f"{label}: not graded with --shard K/N (a whole class or a merge: nothing to join)")
    if not (isinstance(record.get("index"), int) and isinstance(record.get("count"), int)
            and 1 <= record["index"] <= record["count"] and isinstance(record.get("roster"), list)
            and all(isinstance(sid, str) for sid in record["roster"])):
        raise MergeProblem(f"{label}: results.json run.shard is damaged (grade that slice again)")
    cells = data.get("cells")
    if not (isinstance(cells, list) and cells and all(
            isinstance(c, dict) and isinstance(c.get("id"), str) and isinstance(c.get("points"), (int, float))
            for c in cells)):
        raise MergeProblem(f"{label}: results.json has no usable list of graded cells (grade that slice again)")
    return Shard(label, path, data, record, _results_of(label, data.get("students")))


def _name(shard: Shard) -> str:
    return f"{shard.label}, shard {shard.record['index']}/{shard.record['count']}"


def _listed(ids: Iterable[str]) -> str:
    ids = sorted(ids)
    return ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")


def _check_set(shards: list[Shard]) -> None:
    """All N slices of one --shard N, each exactly once."""
    first = shards[0]
    count = first.record["count"]
    for shard in shards[1:]:
        if shard.record["count"] != count:
            raise MergeProblem(f"{_name(shard)} and {_name(first)} come from different --shard counts: "
                               "grade every slice with the same N")
    seen: dict[int, Shard] = {}
    for shard in shards:
        index = shard.record["index"]
        if index in seen:
            raise MergeProblem(f"{seen[index].label} and {shard.label} are both shard {index}/{count} "
                               "(overlapping slices): give each slice once")
        seen[index] = shard
    missing = [str(k) for k in range(1, count + 1) if k not in seen]
    if missing:
        raise MergeProblem(f"shard {', '.join(missing)} of {count} missing: give all {count} slices "
                           f"(got {', '.join(f'{k}/{count}' for k in sorted(seen))})")


def _check_alike(shards: list[Shard]) -> None:
    """One course, one set of limits."""
    first = shards[0]
    for shard in shards[1:]:
        same_course = (shard.data.get("cells") == first.data.get("cells")
                       and shard.data.get("max_score") == first.data.get("max_score")
                       and shard.record.get("course") == first.record.get("course"))
        if not same_course:
            raise MergeProblem(f"{_name(shard)} was graded against a different course than {_name(first)} "
                               "(solutions/ changed between the runs): grade every slice from one checkout")
        limits, first_limits = shard.data["run"].get("limits"), first.data["run"].get("limits")
        if limits != first_limits:
            differ = sorted(k for k in set(limits or {}) | set(first_limits or {})
                            if (limits or {}).get(k) != (first_limits or {}).get(k))
            raise MergeProblem(f"{_name(shard)} was graded with other limits than {_name(first)} "
                               f"({', '.join(differ)}): grade every slice with the same options")


def _check_students(shards: list[Shard]) -> None:
    """Each student once, in the slice the id belongs to, every feedback page there, every slice complete."""
    holder: dict[str, Shard] = {}
    for shard in shards:
        index, count = shard.record["index"], shard.record["count"]
        for result in shard.results:
            if result.student_id in holder:
                raise MergeProblem(f"{result.student_id} is in both {holder[result.student_id].label} and "
                                   f"{shard.label} (overlapping slices)")
            holder[result.student_id] = shard
            if shard_of(result.student_id, count) != index:
                raise MergeProblem(f"{_name(shard)} holds {result.student_id}, who belongs to shard "
                                   f"{shard_of(result.student_id, count)}/{count} (written by another grade.py?)")
            if result.feedback is not None:
                _check_page(shard, result.student_id)
    _check_rosters(shards, holder)


def _check_page(shard: Shard, student_id: str) -> None:
    """The student's feedback page is there, a regular file inside the slice (a link is never copied)."""
    page = shard.path / "feedback" / student_id / f"{config.NOTEBOOK_NAME}.html"
    try:
        open_inside(shard.path, page).close()
    except Missing:
        raise MergeProblem(f"{_name(shard)}: the feedback page of {student_id} is missing ({page})") from None
    except NotRegular as exc:
        raise MergeProblem(f"{_name(shard)}: the feedback page of {student_id} is not a regular file inside the "
                           f"slice ({exc}): grade that slice again") from None
    except OSError as exc:
        raise MergeProblem(f"{_name(shard)}: the feedback page of {student_id} cannot be read "
                           f"({exc.strerror or exc})") from None


def _check_rosters(shards: list[Shard], holder: dict[str, Shard]) -> None:
    """Every student any slice saw has a result in the slice the id belongs to. Each slice answers for its own
    part of the class, and a slice graded again later (a late submission) may know more students than the others:
    the class is every student any slice saw. A slice graded from a stale copy of the submissions lacks one."""
    by_index = {shard.record["index"]: shard for shard in shards}
    count = shards[0].record["count"]
    for shard in shards:
        mine = {sid for sid in shard.record["roster"] if shard_of(sid, count) == shard.record["index"]}
        lacking = mine - {r.student_id for r in shard.results}
        if lacking:
            raise MergeProblem(f"{_name(shard)} is incomplete: no result for {_listed(lacking)} ({len(lacking)} of "
                               f"its students; interrupted?): grade that slice again")
    for shard in shards:
        for sid in shard.record["roster"]:
            owner = by_index[shard_of(sid, count)]
            if holder.get(sid) is not owner:
                raise MergeProblem(f"{sid}, in the class as {shard.label} saw it, has no result in {_name(owner)}: "
                                   "grade that slice again from the current submissions folder")


def _check_out(out: Path, shards: list[Shard]) -> None:
    """OUT apart from every slice and from the course repository, and empty or a merge or run written there."""
    problem = out_dir_problem(real(out), {f"OUT_{number}": shard.path for number, shard in enumerate(shards, 1)})
    if problem:
        raise MergeProblem(problem)
    try:
        check_output_folder("--out", out)
    except InputError as exc:
        raise MergeProblem(str(exc)) from None


def read_shards(paths: list[Path], out: Path) -> list[Shard]:
    """Every slice read and every check passed, or the first ``MergeProblem``; nothing is written."""
    if not paths:
        raise MergeProblem("OUT_1 ... OUT_N: give the output folders of all N slices")
    shards = [read_shard(Path(p), number) for number, p in enumerate(paths, start=1)]
    _check_set(shards)
    _check_alike(shards)
    _check_students(shards)
    _check_out(Path(out), shards)
    return sorted(shards, key=lambda s: s.record["index"])


def merged_run(shards: list[Shard]) -> dict:
    """The run report of the whole class: what every slice agrees on; a field the slices differ in (workers, the
    sandbox of another kind of machine) holds each slice's value under its "K/N"."""
    runs = [{k: v for k, v in s.data["run"].items() if k != "shard"} for s in shards]
    merged = {}
    for key in dict.fromkeys(k for run in runs for k in run):
        values = [run.get(key) for run in runs]
        merged[key] = values[0] if all(v == values[0] for v in values) else {
            f"{s.record['index']}/{s.record['count']}": v for s, v in zip(shards, values, strict=True)}
    return merged


def _copy_file(root: Path, source: Path, target: Path) -> None:
    with open_inside(root, source) as src, open(target, "xb") as dst:
        shutil.copyfileobj(src, dst)


def _copy_folder(root: Path, source: Path, dest: Path, skipped: list[str]) -> None:
    """Copy a feedback folder of the slice ``root``: real folders and regular files only (nothing is followed);
    what is not copied is said in ``skipped``. The first OSError (a full disk) is raised as it is."""
    problem = real_folder_problem(root, source)
    if problem:
        skipped.append(problem)
        return
    dest.mkdir(parents=True)
    for folder, dirs, files in os.walk(source):  # os.walk lists a link to a folder among dirs, never enters it
        here, there = Path(folder), dest / Path(folder).relative_to(source)
        links = sorted(name for name in dirs if os.path.islink(here / name))
        dirs[:] = sorted(name for name in dirs if name not in links)
        skipped.extend(f"{(here / name).relative_to(root)} is a symbolic link" for name in links)
        for name in dirs:
            (there / name).mkdir()
        for name in sorted(files):
            try:
                _copy_file(root, here / name, there / name)
            except NotRegular as exc:
                skipped.append(str(exc))


def _stage_feedback(out: Path, shards: list[Shard]) -> tuple[Path, dict[str, list[str]]]:
    """Every slice's feedback folders copied into OUT/.feedback.merging, and per student what was not copied
    (links, FIFOs: never followed); on failure nothing of the stage is left."""
    stage, skipped = out / STAGING, dict[str, list[str]]()
    remove_entry(stage)
    try:
        stage.mkdir(parents=True)
        for shard in shards:
            for result in shard.results:
                folder = shard.path / "feedback" / result.student_id
                if os.path.lexists(folder):
                    _copy_folder(shard.path, folder, stage / result.student_id,
                                 skipped.setdefault(result.student_id, []))
    except OSError:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return stage, {sid: found for sid, found in skipped.items() if found}


def _note_skipped(result: Result, shard: Shard, skipped: list[str]) -> str | None:
    """What was not copied of the student's feedback, added to the row's reason; the same line for a warning."""
    if not skipped:
        return None
    note = f"feedback in {shard.label} not copied, not a regular file inside the slice: {'; '.join(skipped)}"
    result.reason = "; ".join(part for part in (result.reason, note) if part)
    return f"{result.student_id}: {note}"


def write_merge(out: Path, shards: list[Shard]) -> tuple[list[Result], list[str]]:
    """OUT: the merged feedback first (assembled aside, then swapped in), then results.json and grades.csv, each
    written atomically; OSError when the disk refuses (the slices are untouched). Returns the results and a
    warning per student whose feedback folder held something that was not copied."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_marker(out, MARKER, WRITTEN_BY)
    stage, skipped = _stage_feedback(out, shards)
    for name in ("feedback", "work", "course", "sandbox-template"):  # a single run's leftovers would not match
        remove_entry(out / name)
    stage.replace(out / "feedback")
    results, warnings = [], []
    for shard in shards:
        for result in shard.results:
            if result.feedback is not None:
                result.feedback = str(out / "feedback" / result.student_id / f"{config.NOTEBOOK_NAME}.html")
            warnings.append(_note_skipped(result, shard, skipped.get(result.student_id, [])))
            results.append(result)
    first = shards[0].data
    course = Course("", "", first["cells"])
    write_results(out, results, course, merged_run(shards))
    atomic_write_json(out / "shards.json", finite([
        {"shard": f"{s.record['index']}/{s.record['count']}", "path": str(s.path.resolve()),
         "students": len(s.results), "run": s.data["run"] | {"shard": {k: v for k, v in s.record.items()
                                                                        if k != "roster"}}}
        for s in shards]))
    return results, [warning for warning in warnings if warning]
