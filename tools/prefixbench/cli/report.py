"""``prefixbench report`` and ``prefixbench compare``: saved hit-rate results re-rendered, no server needed."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

from ..core.files import atomic_write_text
from ..core.records import load_hitrate_result
from ..report.markdown import render_compare, render_markdown
from ..report.outputs import check_output_files
from ..report.plot import plot_hitrate
from ..report.tables import print_rows
from . import exits


def add_report(sub) -> Callable:
    p = sub.add_parser("report", help="re-render the Markdown report (and plot) of a hitrate result JSON")
    p.add_argument("result")
    p.add_argument("--output", default=None, help="Markdown path (default: the result's name with .md)")
    p.add_argument("--print", action="store_true", help="also print the Markdown")
    return run_report


def run_report(args: argparse.Namespace) -> int:
    out = Path(args.output) if args.output else Path(args.result).with_suffix(".md")
    check_output_files({"--output": out, "--output (.png beside it)": out.with_suffix(".png")},
                       {"RESULT": args.result})
    result = load_hitrate_result(args.result)
    text = render_markdown(result)
    atomic_write_text(out, text)
    plot_hitrate(result, out.with_suffix(".png"))
    if args.print:
        print(text)
    print(f"Report saved to: {out}", file=sys.stderr)
    return exits.OK


def add_compare(sub) -> Callable:
    p = sub.add_parser("compare", help="two hitrate results side by side")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--output", default=None, help="also write the comparison as Markdown")
    return run_compare


def run_compare(args: argparse.Namespace) -> int:
    if args.output:
        check_output_files({"--output": Path(args.output)}, {"A": args.a, "B": args.b})
    names = (Path(args.a).name, Path(args.b).name)
    rows, markdown = render_compare(load_hitrate_result(args.a), load_hitrate_result(args.b), names)
    print_rows("hitrate compare", ("metric", *names), rows)
    if args.output:
        atomic_write_text(args.output, markdown)
    return exits.OK
