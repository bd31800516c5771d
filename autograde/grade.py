#!/usr/bin/env python
"""Grade chapter 69 for a whole class with nbgrader, on a CPU machine, with one command.

    python autograde/grade.py SUBMISSIONS_DIR --out OUT_DIR

SUBMISSIONS_DIR holds one folder per student: ``<student_id>/69_prefix_cache_benchmark.ipynb``.
OUT_DIR receives:
    grades.csv                 student_id, status, score, max_score, one column per graded cell, reason, seconds
    results.json               the same, with the graded cells' points
    feedback/<student_id>/     69_prefix_cache_benchmark.html (hidden tests removed), or README.txt with the reason
    course/                    the nbgrader course built from solutions/ (source, release, gradebook)  [instructor only]
    work/<student_id>/         each student's nbgrader run, logs and full autograded notebook          [instructor only]

Only feedback/ may be handed back to students (docs/course.md explains why and how it is made safe).
It imports ``tools.course`` as installed into the project's venv (``pip install -e .``), from any folder.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python autograde/grade.py", description="Autograde chapter 69 submissions with nbgrader.")
    parser.add_argument("submissions", type=Path, metavar="SUBMISSIONS_DIR",
                        help="one folder per student holding 69_prefix_cache_benchmark.ipynb")
    parser.add_argument("--out", type=Path, required=True, metavar="OUT_DIR", help="where results go")
    parser.add_argument("--cell-timeout", type=float, default=None, metavar="S",
                        help="seconds per cell (default: Execute.timeout in autograde/nbgrader_config.py)")
    parser.add_argument("--submission-timeout", type=float, default=900.0, metavar="S",
                        help="seconds for one whole submission before it is stopped (default 900)")
    parser.add_argument("--memory-limit-mb", type=int, default=4096, metavar="MB",
                        help="address-space limit for a submission's grading processes; 0 = none (default 4096)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, metavar="N",
                        help="submissions graded at the same time (default: the number of cores)")
    parser.add_argument("--max-notebook-mb", type=float, default=50.0, metavar="MB",
                        help="submissions larger than this are not read (default 50)")
    args = parser.parse_args(argv)
    for name in ("cell_timeout", "submission_timeout", "max_notebook_mb"):
        value = getattr(args, name)
        if value is not None and not value > 0:
            parser.error(f"--{name.replace('_', '-')} must be > 0, got {value:g}")
    if args.workers < 1:
        parser.error(f"--workers must be >= 1, got {args.workers}")
    if args.memory_limit_mb < 0:
        parser.error(f"--memory-limit-mb must be >= 0, got {args.memory_limit_mb}")
    return args


def summary_table(results: list, max_score: float) -> Table:
    table = Table(title="chapter 69 grades", show_lines=False)
    table.add_column("student")
    table.add_column("status")
    table.add_column("score", justify="right")
    table.add_column("reason / notes", overflow="fold")
    for r in sorted(results, key=lambda r: r.student_id):
        score = "" if r.score is None else f"{r.score:g} / {max_score:g}"
        style = {"graded": "green", "not_graded": "yellow", "error": "red"}[r.status]
        table.add_row(r.student_id, f"[{style}]{r.status}[/]", score, r.reason[:300])
    return table


class Refused(Exception):
    """The run cannot start (the message says why); nothing was graded."""


def prepare_run(args: argparse.Namespace, console: Console):
    """Output folder, kernel, settings, the nbgrader course and the sandbox probe: (course, settings, caps)."""
    if not args.submissions.exists():
        raise Refused(f"submissions folder {args.submissions} does not exist")
    if not args.submissions.is_dir():
        raise Refused(f"{args.submissions} is not a folder (expected one sub-folder per student)")
    from tools.course import grading  # imported here: nbformat / nbgrader take a second to import
    from tools.course import sandbox
    from tools.course.build.nbgrader_course import CourseError

    try:
        grading.prepare_out_dir(args.out, args.submissions)
    except grading.SubmissionProblem as exc:
        raise Refused(str(exc)) from None
    problem = grading.kernel_problem()
    if problem:
        raise Refused(problem)
    settings = grading.load_settings(args.cell_timeout, submission_timeout=args.submission_timeout,
                                     memory_limit_mb=args.memory_limit_mb, max_notebook_mb=args.max_notebook_mb)
    grading.start_worker_server()  # its imports run while the course is built
    console.print(f"building the nbgrader course from solutions/ in {args.out / 'course'} ...", highlight=False)
    try:
        course = grading.prepare(args.out)
    except CourseError as exc:
        raise Refused(str(exc)) from None
    caps = sandbox.capabilities()
    grading.prepare_sandbox_template(args.out)
    return course, settings, caps


def grade_all(args, console: Console, course, settings, caps, found: list, results: list, report: dict) -> None:
    """Grade every submission, ``--workers`` at a time; results.json and grades.csv after each one."""
    from tools.course import grading

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as progress, \
            ThreadPoolExecutor(max_workers=args.workers) as pool:
        task = progress.add_task("grading", total=len(found))
        # Each submission is graded in a process of its own; threads here only wait for them.
        futures = {pool.submit(grading.grade_submission, course, student_id, notebook, args.out, settings,
                               index=index, caps=caps): student_id
                   for index, (student_id, notebook) in enumerate(found)}
        for future in as_completed(futures):
            result = future.result()  # grade_submission never raises for a submission's doing
            results.append(result)
            grading.write_results(args.out, results, course, report)  # after every student: a crash loses nothing
            score = "" if result.score is None else f" {result.score:g}/{course.max_score:g}"
            mark = {"graded": "[green]✓[/]", "not_graded": "[yellow]![/]", "error": "[red]✗[/]"}[result.status]
            console.print(f"{mark} {result.student_id}: {result.status}{score} ({result.seconds:.1f} s)"
                          + (f" - {result.reason[:160]}" if result.reason else ""), highlight=False)
            progress.advance(task)


def print_summary(console: Console, results: list, course, args, started: float) -> None:
    console.print(summary_table(results, course.max_score))
    graded = [r.score for r in results if r.score is not None]
    stats = (f"mean {statistics.mean(graded):.2f}, median {statistics.median(graded):g}" if graded else "no scores")
    counts = {status: sum(r.status == status for r in results) for status in ("graded", "not_graded", "error")}
    console.print(f"{counts['graded']} graded ({stats}), {counts['not_graded']} not graded, {counts['error']} errors "
                  f"in {time.monotonic() - started:.0f} s -> {args.out / 'grades.csv'}; "
                  f"hand back only {args.out / 'feedback'}", highlight=False)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    console = Console(stderr=True, soft_wrap=True)  # soft_wrap: an error stays on one line
    started = time.monotonic()
    try:
        course, settings, caps = prepare_run(args, console)
    except Refused as exc:
        console.print(f"[red]error:[/] {exc}", highlight=False)
        return 2
    from tools.course import grading

    found, results, warnings = grading.find_submissions(args.submissions)
    for warning in warnings:
        console.print(f"[yellow]warning:[/] {warning}", highlight=False)
    for row in results:
        row.max_score = course.max_score
        grading.write_note(args.out, row)
    report = grading.run_report(caps, settings, args.workers)
    grading.write_results(args.out, results, course, report)
    console.print(f"{len(found)} submission(s), max score {course.max_score:g}, {args.workers} worker(s), "
                  f"cell timeout {settings.cell_timeout:g} s, submission timeout {settings.submission_timeout:g} s",
                  highlight=False)
    for name, value in report["sandbox"].items():
        console.print(f"sandbox {name}: {value}", highlight=False)
    try:
        grade_all(args, console, course, settings, caps, found, results, report)
    except KeyboardInterrupt:
        console.print(f"[red]interrupted[/]: {len(results)} result(s) kept in {args.out / 'grades.csv'}")
        return 130
    print_summary(console, results, course, args, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
