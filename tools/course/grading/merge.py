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

import dataclasses
import json
import shutil
from pathlib import Path
from typing import NamedTuple

from tools.prefixbench.core.errors import InputError
from tools.prefixbench.core.files import atomic_write_json, atomic_write_text, check_output_folder

from .. import config
from .model import Course, Result
from .results import finite, write_results
from .roster import MARKER
from .shards import shard_of

RESULT_FIELDS = {f.name for f in dataclasses.fields(Result)}
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


def _strict_load(path: Path):
    def refuse(name):
        raise ValueError(f"{name} is not JSON")
    return json.loads(path.read_text(encoding="utf-8"), parse_constant=refuse)


def _results_of(label: str, students) -> list[Result]:
    if not isinstance(students, list):
        raise MergeProblem(f"{label}: results.json has no list of students")
    results = []
    for number, entry in enumerate(students, start=1):
        if not isinstance(entry, dict) or set(entry) != RESULT_FIELDS:
            raise MergeProblem(f"{label}: results.json student {number} is not a result of this grade.py "
                               "(grade that slice again)")
        sid = entry["student_id"]
        if not isinstance(sid, str) or not sid or "/" in sid or sid in (".", ".."):
            raise MergeProblem(f"{label}: results.json student {number} has an unusable student_id {sid!r}")
        results.append(Result(**entry))
    return results


def read_shard(path: Path, number: int) -> Shard:
    """One slice's output folder, checked to be a whole grade.py --shard output."""
    label = f"OUT_{number} ({path})"
    if not path.is_dir():
        raise MergeProblem(f"{label}: no such folder" if not path.exists() else f"{label}: not a folder")
    results_json = path / "results.json"
    if not (path / MARKER).is_file() or not results_json.is_file():
        raise MergeProblem(f"{label}: not a grade.py output (no {MARKER} and results.json)")
    try:
        data = _strict_load(results_json)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise MergeProblem(f"{label}: results.json cannot be read ({exc})") from None
    record = data.get("run", {}).get("shard") if isinstance(data, dict) and isinstance(data.get("run"), dict) else None
    if not isinstance(record, dict):
        raise MergeProblem(f"{label}: not graded with --shard K/N (a whole class or a merge: nothing to join)")
    if not (isinstance(record.get("index"), int) and isinstance(record.get("count"), int)
            and 1 <= record["index"] <= record["count"] and isinstance(record.get("roster"), list)):
        raise MergeProblem(f"{label}: results.json run.shard is damaged (grade that slice again)")
    cells = data.get("cells")
    if not (isinstance(cells, list) and cells and all(
            isinstance(c, dict) and isinstance(c.get("id"), str) and isinstance(c.get("points"), (int, float))
            for c in cells)):
        raise MergeProblem(f"{label}: results.json has no usable list of graded cells (grade that slice again)")
    return Shard(label, path, data, record, _results_of(label, data.get("students")))


def _name(shard: Shard) -> str:
    return f"{shard.label}, shard {shard.record['index']}/{shard.record['count']}"


def _listed(ids) -> str:
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
            page = shard.path / "feedback" / result.student_id / f"{config.NOTEBOOK_NAME}.html"
            if result.feedback is not None and not page.is_file():
                raise MergeProblem(f"{_name(shard)}: the feedback page of {result.student_id} is missing ({page})")
    _check_rosters(shards, holder)


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
    for shard in shards:
        a, b = out.resolve(), shard.path.resolve()
        if a == b or b in a.parents or a in b.parents:
            raise MergeProblem(f"--out {out} must be a folder of its own, not {shard.label} or inside or around it")
    if out.exists() and out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise MergeProblem(f"--out {out} is not empty and was not written by grade.py; choose an empty or new folder")
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
            f"{s.record['index']}/{s.record['count']}": v for s, v in zip(shards, values)}
    return merged


def _copy_folder(source: Path, dest: Path) -> None:
    """Like ``shutil.copytree``, but the first OSError (a full disk) is raised as it is, not collected."""
    dest.mkdir(parents=True)
    for path in sorted(source.rglob("*")):
        target = dest / path.relative_to(source)
        if path.is_dir():
            target.mkdir(exist_ok=True)
        else:
            shutil.copyfile(path, target)


def _stage_feedback(out: Path, shards: list[Shard]) -> Path:
    """Every slice's feedback folders copied into OUT/.feedback.merging; on failure nothing of it is left."""
    stage = out / STAGING
    if stage.exists():
        shutil.rmtree(stage)
    try:
        stage.mkdir(parents=True)
        for shard in shards:
            for result in shard.results:
                folder = shard.path / "feedback" / result.student_id
                if folder.is_dir():
                    _copy_folder(folder, stage / result.student_id)
    except OSError:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return stage


def write_merge(out: Path, shards: list[Shard]) -> list[Result]:
    """OUT: the merged feedback first (assembled aside, then swapped in), then results.json and grades.csv, each
    written atomically; OSError when the disk refuses (the slices are untouched)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / MARKER, "written by autograde/grade.py; safe to delete\n")
    stage = _stage_feedback(out, shards)
    for name in ("feedback", "work", "course", "sandbox-template"):  # a single run's leftovers would not match
        if (out / name).exists():
            shutil.rmtree(out / name)
    stage.replace(out / "feedback")
    results = []
    for shard in shards:
        for result in shard.results:
            if result.feedback is not None:
                result.feedback = str(out / "feedback" / result.student_id / f"{config.NOTEBOOK_NAME}.html")
            results.append(result)
    first = shards[0].data
    course = Course("", "", first["cells"])
    write_results(out, results, course, merged_run(shards))
    atomic_write_json(out / "shards.json", finite([
        {"shard": f"{s.record['index']}/{s.record['count']}", "path": str(s.path.resolve()),
         "students": len(s.results), "run": s.data["run"] | {"shard": {k: v for k, v in s.record.items()
                                                                        if k != "roster"}}}
        for s in shards]))
    return results
