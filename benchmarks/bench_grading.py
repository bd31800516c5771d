"""Grade one synthetic class serially and in parallel, in one run, and print the figures side by side.

    .venv/bin/python benchmarks/bench_grading.py [--students 40] [--workers N] [--mix full|answers] [--parallel-only]

The class mixes correct, partially correct, stub, slow and (``--mix full``) looping and hostile submissions
(tests/course/course_fixtures), repeated to the requested size. Prints seconds per submission for each run and by kind,
the speed-up, and the projected wall time for a class of 200 with the parallel setting. Both runs must produce
the same grades (checked, not assumed).
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "course"))  # the class fixtures (course_fixtures); tools.* is installed

ANSWERS = ["reference", "stub", "partial_block", "head_first", "missing_as_zero", "ttft_only", "seed_reference",
           "slow_eviction", "huge_output"]
"""Answers as students hand them in: correct, with one of the course's named mistakes, unfinished, too slow
(two of nine fail the hidden 5-second speed budget), or printing a lot."""
MIXES = {
    "answers": (ANSWERS, []),
    "full": (ANSWERS + ["infinite_loop"], ["snoop", "fork_bomb", "memory_hog", "output_flood"]),
}
"""full adds a cell that loops until the cell timeout and four attacks on the sandbox: a stress test."""


def build(dest: Path, students: int, mix: str = "full") -> None:
    from course_fixtures.hostile import build_hostile_class
    from course_fixtures.make_class import build_class

    answers, hostile = MIXES[mix]
    base = dest.parent / "base"
    build_class(base, only=answers)
    if hostile:
        build_hostile_class(base / "_hostile", dest.parent / "out-unused")
    pool = [base / name for name in answers] + [base / "_hostile" / name for name in hostile]
    for i in range(students):
        shutil.copytree(pool[i % len(pool)], dest / f"s{i:03d}_{pool[i % len(pool)].name}")


def grade(submissions: Path, out: Path, workers: int) -> tuple[float, dict, dict]:
    """Wall seconds, (status, score) per student, and the seconds grades.csv records per student."""
    started = time.monotonic()
    subprocess.run([sys.executable, str(REPO / "autograde" / "grade.py"), str(submissions), "--out", str(out),
                    "--workers", str(workers), "--cell-timeout", "20"], check=True, capture_output=True)
    seconds = time.monotonic() - started
    with (out / "grades.csv").open(newline="") as handle:
        table = list(csv.DictReader(handle))
    rows = {r["student_id"]: (r["status"], r["score"]) for r in table}
    per_student = {r["student_id"]: float(r["seconds"]) for r in table}
    return seconds, rows, per_student


def by_kind(per_student: dict[str, float]) -> dict[str, float]:
    """Mean seconds per kind of submission (the student id is sNNN_<kind>)."""
    groups: dict[str, list[float]] = {}
    for student, seconds in per_student.items():
        groups.setdefault(student.split("_", 1)[1], []).append(seconds)
    return {kind: sum(values) / len(values) for kind, values in groups.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--mix", choices=sorted(MIXES), default="full",
                        help="full: answers plus an endless loop and four sandbox attacks (default); answers: only "
                             "answers as students hand them in")
    parser.add_argument("--parallel-only", action="store_true",
                        help="grade the class once, with --workers, and time it (e.g. a whole class of 200)")
    args = parser.parse_args(argv)
    n = args.students
    with tempfile.TemporaryDirectory(prefix="bench-grading-") as tmp:
        root = Path(tmp)
        build(root / "class", n, args.mix)
        if not args.parallel_only:
            serial_s, serial, serial_each = grade(root / "class", root / "serial", 1)
        parallel_s, parallel, _ = grade(root / "class", root / "parallel", args.workers)
    kinds_in_mix = ", ".join(MIXES[args.mix][0] + MIXES[args.mix][1])
    print(f"class of {n} on {os.cpu_count()} cores, mix {args.mix!r}: {kinds_in_mix}")
    if args.parallel_only:
        statuses = sorted({status for status, _ in parallel.values()})
        print(f"parallel (--workers {args.workers}): {parallel_s:7.1f} s ({parallel_s / 60:.1f} min) for {n}, "
              f"{parallel_s / n:5.2f} s/submission; statuses: {', '.join(statuses)}")
        return 0
    kinds = by_kind(serial_each)
    print("serial seconds per submission, by kind: " + ", ".join(
        f"{kind} {seconds:.1f}" for kind, seconds in sorted(kinds.items(), key=lambda item: item[1])))
    print(f"serial   (--workers 1): {serial_s:7.1f} s  {serial_s / n:5.2f} s/submission")
    print(f"parallel (--workers {args.workers}): {parallel_s:7.1f} s  {parallel_s / n:5.2f} s/submission")
    print(f"speed-up: {serial_s / parallel_s:.2f}x; projected for 200: {200 * parallel_s / n / 60:.1f} min "
          f"(goal: under 10 min on 2 cores; the projection scales this run's start-up and last straggler too)")
    same = serial == parallel
    print(f"same grades serial vs parallel: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
