#!/usr/bin/env python
"""Grade chapter 69 for a whole class with nbgrader, on a CPU machine, with one command.

    python autograde/grade.py SUBMISSIONS_DIR --out OUT_DIR
    python autograde/grade.py SUBMISSIONS_DIR --out OUT_K --shard K/N      # the K-th of N slices, one machine each
    python autograde/grade.py merge OUT_1 ... OUT_N --out OUT_DIR            # join the N slices as one run

SUBMISSIONS_DIR holds one folder per student: ``<student_id>/69_prefix_cache_benchmark.ipynb``. Every entry that
looks like a student's (a folder, a loose notebook or zip file) gets a row; a near miss (a renamed copy such as
``69_prefix_cache_benchmark (1).ipynb``, a loose ``frank.ipynb``) is graded and its row says so.
OUT_DIR receives:
    grades.csv                 student_id, status, score, max_score, one column per graded cell, reason, seconds
    results.json               the same, with the graded cells' points
    feedback/<student_id>/     69_prefix_cache_benchmark.html (hidden tests removed), or README.txt with the reason
    course/                    the nbgrader course built from solutions/ (source, release, gradebook)  [instructor only]
    work/<student_id>/         each student's nbgrader run, logs and full autograded notebook          [instructor only]

With --shard K/N only the students whose id hashes to slice K are graded (the same slice on every machine, and
a student added later moves nobody else); OUT_K's results.json records the slice, the class roster and the
course, and ``merge`` checks those before it writes grades.csv, results.json and feedback/ for the whole class.

Only feedback/ may be handed back to students (docs/course.md explains why and how it is made safe).
It imports ``tools.course`` as installed into the project's venv (``pip install -e .``), from any folder.

Exit codes: 0 graded (whatever the grades); 1 bad input (one line on stderr naming the option or folder, nothing
graded); 2 the grader could not start or could not write its results (the last good grades.csv is kept);
130 interrupted (what was graded is kept). merge: 0 joined; 1 the slices do not belong together or --out is not
usable (one line naming the folder, nothing written); 2 OUT_DIR could not be written (the slices are untouched).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table


BAD_INPUT, FAILED, INTERRUPTED = 1, 2, 130


def _path(text: str) -> Path:
    """A path argument; an empty one (an unset variable: ``--out "$OUT"``) is bad input, never the current folder."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty path (is the variable it comes from set?); give a folder")
    return Path(text)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 1 (argparse's own: usage and exit 2)
        self.exit(BAD_INPUT, f"error: {message} (see {self.prog} --help)\n")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = _Parser(
        prog="python autograde/grade.py",
        description="Autograde chapter 69 submissions with nbgrader. To join the outputs of --shard 1/N ... N/N: "
                    "python autograde/grade.py merge OUT_1 ... OUT_N --out OUT_DIR (see merge --help).",
        epilog="Time rule: each cell gets --cell-timeout; once a cell has timed out, every later cell that calls "
               "the function it hung in gets --hung-timeout, and the rest of the notebook gets --after-hang-budget "
               "in all (cells past it are not run and score 0). With the defaults a function that never returns "
               "costs a submission about 2.5 minutes instead of 14. docs/course.md has the details.")
    parser.add_argument("submissions", type=_path, metavar="SUBMISSIONS_DIR",
                        help="one folder per student holding 69_prefix_cache_benchmark.ipynb")
    parser.add_argument("--out", type=_path, required=True, metavar="OUT_DIR",
                        help="where results go (a new or empty folder, or one grade.py wrote before)")
    parser.add_argument("--cell-timeout", type=float, default=None, metavar="S",
                        help="seconds per cell (default: Execute.timeout in autograde/nbgrader_config.py, 120)")
    parser.add_argument("--hung-timeout", type=float, default=2.0, metavar="S",
                        help="seconds for a cell that calls a function which already hung in an earlier cell "
                             "(default 2)")
    parser.add_argument("--after-hang-budget", type=float, default=40.0, metavar="S",
                        help="seconds for the rest of the notebook once a cell has timed out; cells past it are not "
                             "run and score 0 (default 40)")
    parser.add_argument("--submission-timeout", type=float, default=900.0, metavar="S",
                        help="seconds for one whole submission before it is stopped and not graded (default 900)")
    parser.add_argument("--memory-limit-mb", type=int, default=4096, metavar="MB",
                        help="address-space limit for a submission's grading processes; 0 = none (default 4096)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, metavar="N",
                        help="submissions graded at the same time (default: the number of cores)")
    parser.add_argument("--max-notebook-mb", type=float, default=50.0, metavar="MB",
                        help="submissions larger than this are not read (default 50)")
    parser.add_argument("--shard", default=None, metavar="K/N",
                        help="grade only the K-th of N slices of the class (by a hash of the student id); join "
                             "the N outputs with: grade.py merge OUT_1 ... OUT_N --out OUT")
    args = parser.parse_args(argv)
    args.shard = _shard(parser, args.shard)
    for name in ("cell_timeout", "hung_timeout", "after_hang_budget", "submission_timeout", "max_notebook_mb"):
        value = getattr(args, name)
        if value is not None and not (value > 0 and math.isfinite(value)):
            parser.error(f"--{name.replace('_', '-')} must be > 0 and finite, got {value:g}")
    if args.workers < 1:
        parser.error(f"--workers must be >= 1, got {args.workers}")
    if args.memory_limit_mb < 0:
        parser.error(f"--memory-limit-mb must be >= 0, got {args.memory_limit_mb}")
    return args


def _shard(parser: argparse.ArgumentParser, text: str | None) -> tuple[int, int] | None:
    """``--shard K/N`` as (K, N), or one line and exit 1 (before any work)."""
    if text is None:
        return None
    match = re.fullmatch(r"\s*(\d{1,6})\s*/\s*(\d{1,6})\s*", text)
    if not match or not 1 <= int(match[1]) <= int(match[2]):
        parser.error(f"--shard must be K/N with 1 <= K <= N (the K-th of N slices, e.g. 1/4), got {text!r}")
    return int(match[1]), int(match[2])


def parse_merge_args(argv: list[str]) -> argparse.Namespace:
    parser = _Parser(prog="python autograde/grade.py merge",
                     description="Join the outputs of grade.py --shard 1/N ... N/N into one, as a single run of the "
                                 "whole class would write it (grades.csv, results.json, feedback/).")
    parser.add_argument("shards", type=_path, nargs="+", metavar="OUT_K", help="the output folder of each slice")
    parser.add_argument("--out", type=_path, required=True, metavar="OUT_DIR",
                        help="where the joined results go (a new or empty folder, or one grade.py wrote before)")
    return parser.parse_args(argv)


def merge_main(argv: list[str]) -> int:
    """``grade.py merge``: every check first (exit 1, one line, nothing written), then the joined output."""
    args = parse_merge_args(argv)
    console = Console(stderr=True, soft_wrap=True)
    from tools.course import grading

    try:
        shards = grading.read_shards(args.shards, args.out)
    except grading.MergeProblem as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        return BAD_INPUT
    try:
        results, warnings = grading.write_merge(args.out, shards)
    except OSError as exc:
        console.print(f"[red]error:[/] --out: {escape(str(args.out))} cannot be written "
                      f"({escape(exc.strerror or str(exc))}); the slices are untouched", highlight=False)
        return FAILED
    for warning in warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
    counts = {status: sum(r.status == status for r in results) for status in ("graded", "not_graded", "error")}
    console.print(f"merged {len(shards)} slices: {len(results)} students, {counts['graded']} graded, "
                  f"{counts['not_graded']} not graded, {counts['error']} errors -> "
                  f"{escape(str(args.out / 'grades.csv'))}; hand back only {escape(str(args.out / 'feedback'))}",
                  highlight=False)
    return 0


def summary_table(results: list, max_score: float) -> Table:
    table = Table(title="chapter 69 grades", show_lines=False)
    table.add_column("student")
    table.add_column("status")
    table.add_column("score", justify="right")
    table.add_column("reason / notes", overflow="fold")
    for r in sorted(results, key=lambda r: r.student_id):
        score = "" if r.score is None else f"{r.score:g} / {max_score:g}"
        style = {"graded": "green", "not_graded": "yellow", "error": "red"}[r.status]
        table.add_row(escape(r.student_id), f"[{style}]{r.status}[/]", score, escape(r.reason[:300]))
    return table


class Refused(Exception):
    """The run cannot start (the message says why); nothing was graded. ``code``: BAD_INPUT, or FAILED for a
    problem of the grading machine (no kernel, the course could not be built)."""

    def __init__(self, message: str, code: int = BAD_INPUT):
        super().__init__(message)
        self.code = code


def prepare_run(args: argparse.Namespace, console: Console):
    """Output folder, kernel, settings, the nbgrader course and the sandbox probe: (course, settings, caps)."""
    if not args.submissions.exists():
        raise Refused(f"SUBMISSIONS_DIR: submissions folder {args.submissions} does not exist")
    if not args.submissions.is_dir():
        raise Refused(f"SUBMISSIONS_DIR: {args.submissions} is not a folder (expected one sub-folder per student)")
    try:
        next(args.submissions.iterdir(), None)
    except OSError as exc:
        raise Refused(f"SUBMISSIONS_DIR: {args.submissions} cannot be read ({exc.strerror or exc})") from None
    from tools.course import grading  # imported here: nbformat / nbgrader take a second to import
    from tools.course import sandbox
    from tools.course.build.nbgrader_course import CourseError

    try:
        grading.prepare_out_dir(args.out, args.submissions)
    except grading.SubmissionProblem as exc:
        raise Refused(str(exc)) from None
    problem = grading.kernel_problem()
    if problem:
        raise Refused(problem, FAILED)
    settings = grading.load_settings(args.cell_timeout, hung_timeout=args.hung_timeout,
                                     after_hang_budget=args.after_hang_budget,
                                     submission_timeout=args.submission_timeout,
                                     memory_limit_mb=args.memory_limit_mb, max_notebook_mb=args.max_notebook_mb)
    grading.start_worker_server()  # its imports run while the course is built
    console.print(f"building the nbgrader course from solutions/ in {escape(str(args.out / 'course'))} ...",
                  highlight=False)
    try:
        course = grading.prepare(args.out)
        caps = sandbox.capabilities()
        grading.prepare_sandbox_template(args.out)
    except CourseError as exc:
        raise Refused(str(exc), FAILED) from None
    except OSError as exc:  # the disk filled up while the course was built
        raise Refused(f"--out: {args.out} cannot be written ({exc.strerror or exc})", FAILED) from None
    return course, settings, caps


def save_results(args, console: Console, results: list, course, report: dict) -> bool:
    """grades.csv and results.json, atomically; False (and one line) when they cannot be written (a full disk):
    the previous copies stay whole, and grading goes on (the next student's save tries again)."""
    from tools.course import grading

    try:
        grading.write_results(args.out, results, course, report)
        return True
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        console.print(f"[red]error:[/] --out: could not write grades.csv and results.json in "
                      f"{escape(str(args.out))} ({escape(why)}); the previous copies are kept", highlight=False)
        return False


def _crashed(student_id: str, exc: BaseException):
    from tools.course import grading

    return grading.Result(student_id, "error", reason=f"grader error: {type(exc).__name__}: {exc}")


def print_row(console: Console, result, course) -> None:
    """One line per student: the mark, status, score, seconds and the start of the reason."""
    score = "" if result.score is None else f" {result.score:g}/{course.max_score:g}"
    mark = {"graded": "[green]✓[/]", "not_graded": "[yellow]![/]", "error": "[red]✗[/]"}[result.status]
    console.print(f"{mark} {escape(result.student_id)}: {result.status}{score} ({result.seconds:.1f} s)"
                  + (f" - {escape(result.reason[:160])}" if result.reason else ""), highlight=False)


def grade_all(args, console: Console, course, settings, caps, found: list, results: list, report: dict) -> bool:
    """Grade every submission, ``--workers`` at a time; results.json and grades.csv after each one. Returns
    whether the last save of the results worked."""
    from tools.course import grading

    saved = True
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as progress, \
            ThreadPoolExecutor(max_workers=args.workers) as pool:
        task = progress.add_task("grading", total=len(found))
        # Each submission is graded in a process of its own; threads here only wait for them.
        futures = {pool.submit(grading.grade_submission, course, entry.student_id, entry.notebook, args.out,
                               settings, index=index, caps=caps, note=entry.note,
                               submissions_dir=args.submissions): entry.student_id
                   for index, entry in enumerate(found)}
        for future in as_completed(futures):
            try:
                result = future.result()  # grade_submission reports every failure in the row; this is a backstop
            except Exception as exc:
                result = _crashed(futures[future], exc)
                result.max_score = course.max_score
            results.append(result)
            saved = save_results(args, console, results, course, report)  # after every student: a crash loses nothing
            print_row(console, result, course)
            progress.advance(task)
    return saved


def print_summary(console: Console, results: list, course, args, started: float) -> None:
    console.print(summary_table(results, course.max_score))
    graded = [r.score for r in results if r.score is not None]
    stats = (f"mean {statistics.mean(graded):.2f}, median {statistics.median(graded):g}" if graded else "no scores")
    counts = {status: sum(r.status == status for r in results) for status in ("graded", "not_graded", "error")}
    console.print(f"{counts['graded']} graded ({stats}), {counts['not_graded']} not graded, {counts['error']} errors "
                  f"in {time.monotonic() - started:.0f} s -> {escape(str(args.out / 'grades.csv'))}; "
                  f"hand back only {escape(str(args.out / 'feedback'))}", highlight=False)


def find_class(args, console: Console, course) -> tuple[list, list, dict | None]:
    """The students to grade and the rows that cannot be graded (their notes written), this slice's only with
    --shard, and the slice's record for results.json (None without --shard)."""
    from tools.course import config, grading

    try:
        found, results, warnings = grading.find_submissions(args.submissions)
    except OSError as exc:
        raise Refused(f"SUBMISSIONS_DIR: {args.submissions} cannot be read ({exc.strerror or exc})") from None
    for warning in warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
    record = None
    if args.shard:
        index, count = args.shard
        roster = [row.student_id for row in [*found, *results]]
        record = grading.shard_record(index, count, roster, grading.course_digest(config.SOURCE_NOTEBOOK))
        found, results = grading.take_slice(found, index, count), grading.take_slice(results, index, count)
        console.print(f"shard {index}/{count}: {len(found) + len(results)} of the class's {len(roster)} entries",
                      highlight=False)
    for row in results:
        row.max_score = course.max_score
        try:
            grading.write_note(args.out, row)
        except OSError as exc:
            row.reason += f"; the feedback note could not be written ({exc.strerror or exc})"
    return found, results, record


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["merge"]:
        return merge_main(argv[1:])
    args = parse_args(argv)
    console = Console(stderr=True, soft_wrap=True)  # soft_wrap: an error stays on one line
    started = time.monotonic()
    try:
        course, settings, caps = prepare_run(args, console)
        found, results, record = find_class(args, console, course)
    except Refused as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        return exc.code
    from tools.course import grading

    report = grading.run_report(caps, settings, args.workers) | ({"shard": record} if record else {})
    saved = save_results(args, console, results, course, report)
    console.print(f"{len(found)} submission(s), {len(results)} not gradable, max score {course.max_score:g}, "
                  f"{args.workers} worker(s), cell timeout {settings.cell_timeout:g} s (then "
                  f"{settings.hung_timeout:g} s for a function that hung, {settings.after_hang_budget:g} s for the "
                  f"rest of the notebook), submission timeout {settings.submission_timeout:g} s", highlight=False)
    for name, value in report["sandbox"].items():
        console.print(f"sandbox {name}: {value}", highlight=False)
    for row in results:  # the entries that cannot be graded, each with its reason
        print_row(console, row, course)
    try:
        if found:
            saved = grade_all(args, console, course, settings, caps, found, results, report)
    except KeyboardInterrupt:
        console.print(f"[red]interrupted[/]: {len(results)} result(s) kept in "
                      f"{escape(str(args.out / 'grades.csv'))}", highlight=False)
        return INTERRUPTED
    print_summary(console, results, course, args, started)
    if not saved:
        console.print(f"[red]error:[/] --out: the results of this run could not be written to {escape(str(args.out))}; "
                      "grades.csv and results.json hold an earlier state", highlight=False)
        return FAILED
    return 0


if __name__ == "__main__":
    sys.exit(main())
