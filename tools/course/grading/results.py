"""What a run writes for the instructor and the students: grades.csv, results.json, the run report, and a note
for each student whose notebook could not be graded."""

from __future__ import annotations

import csv
import io
import math
from dataclasses import asdict
from pathlib import Path

from tools.prefixbench.core.files import atomic_write_json, atomic_write_text

from .. import config, sandbox
from .model import Course, Result, Settings


def finite(data):
    """``data`` with every non-finite float (NaN, Infinity: not JSON) replaced by None, so the strict JSON
    writer never refuses a result a submission produced."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {key: finite(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [finite(value) for value in data]
    return data


def csv_text(results: list[Result], course: Course) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    cell_ids = [cell["id"] for cell in course.cells]
    writer.writerow(["student_id", "status", "score", "max_score", *cell_ids, "reason", "seconds"])
    for r in sorted(results, key=lambda r: r.student_id):
        fmt = lambda v: "" if v is None or not math.isfinite(v) else f"{v:g}"  # noqa: E731
        writer.writerow([r.student_id, r.status, fmt(r.score), fmt(course.max_score),
                         *[fmt(r.cells.get(cid)) for cid in cell_ids], r.reason, f"{r.seconds:g}"])
    return buffer.getvalue()


def run_report(caps: dict, settings: Settings, workers: int) -> dict:
    """How this run graded: the protections in force on this machine, and the parallelism."""
    spec = sandbox.Spec(sandbox_dir="", uid=sandbox.UID_BASE if caps["root"] else None, isolate=caps["namespaces"],
                        memory_mb=settings.memory_limit_mb, cpu_s=int(settings.submission_timeout) + 1)
    limits = {name: getattr(settings, name) for name in ("cell_timeout", "hung_timeout", "after_hang_budget",
                                                         "submission_timeout", "memory_limit_mb")}
    return {"workers": workers, "limits": limits, "sandbox": sandbox.protections(caps, spec)}


def write_results(out_dir: Path, results: list[Result], course: Course, report: dict | None = None) -> None:
    """grades.csv and results.json, each replaced atomically (a reader never sees half a file)."""
    atomic_write_text(Path(out_dir) / "grades.csv", csv_text(results, course))
    atomic_write_json(Path(out_dir) / "results.json", finite(
        {"max_score": course.max_score, "cells": course.cells, **({"run": report} if report else {}),
         "students": [asdict(r) for r in sorted(results, key=lambda r: r.student_id)]}))


def write_note(out_dir: Path, result: Result) -> None:
    """Students whose notebook could not be graded (or whose feedback was withheld) get a short note instead."""
    text = (f"{config.NOTEBOOK_FILE}: {result.status.replace('_', ' ')}\n"
            f"score: {'' if result.score is None else f'{result.score:g} / {result.max_score:g}'}\n"
            f"reason: {result.reason}\n")
    atomic_write_text(Path(out_dir) / "feedback" / result.student_id / "README.txt", text)
