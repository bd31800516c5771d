"""``prefixbench report`` and ``prefixbench compare``: saved results re-rendered, no server needed.

``report`` takes any result whose report the project writes (hitrate, sessions, replay, isolation, a load sweep,
a G0 / G1 summary, a capacity plan), told apart by its ``schema``; ``compare`` takes two hit-rate results.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

from ..core.files import atomic_write_text
from ..core.records import (
    SCHEMA_HITRATE, SCHEMA_ISOLATION, SCHEMA_PLAN, SCHEMA_REPLAY, SCHEMA_SESSIONS, SCHEMA_SUMMARY, SCHEMA_SWEEP,
    load_hitrate_result, load_result,
)
from ..report.g0g1 import manifest_paths, plot_g0g1_drift, render_g0g1_markdown
from ..report.live import plot_sessions, render_isolation, render_replay, render_sessions
from ..report.markdown import render_compare, render_markdown
from ..report.outputs import check_output_files, draw
from ..report.plan import plot_plan, render_plan_markdown
from ..report.plot import plot_hitrate
from ..report.sweep import plot_sweep, render_sweep_markdown
from ..report.tables import print_rows
from .args import Subcommands
from . import exits

RENDERERS: dict[str, tuple[Callable, Callable | None]] = {
    SCHEMA_HITRATE: (render_markdown, plot_hitrate), SCHEMA_SESSIONS: (render_sessions, plot_sessions),
    SCHEMA_REPLAY: (render_replay, None), SCHEMA_ISOLATION: (render_isolation, None),
    SCHEMA_SWEEP: (render_sweep_markdown, plot_sweep), SCHEMA_SUMMARY: (render_g0g1_markdown, None),
    SCHEMA_PLAN: (render_plan_markdown, plot_plan)}
"""Schema -> (Markdown, plot or None): what each command writes beside its JSON, so a re-render matches it. A
G0 / G1 summary's plot is its drift picture, drawn from the group manifests beside it (``run_report``; ``g0g1``
names its own ``69_prefix_cache_drift.png``, ``report`` writes it beside the Markdown)."""


def add_report(sub: Subcommands) -> Callable:
    p = sub.add_parser("report", help="re-render the Markdown report (and plot) of a hitrate, sessions, replay, "
                                      "isolation, sweep, G0/G1 summary or plan JSON")
    p.add_argument("result")
    p.add_argument("--output", default=None, help="Markdown path (default: the result's name with .md)")
    p.add_argument("--print", action="store_true", help="also print the Markdown")
    return run_report


def run_report(args: argparse.Namespace) -> int:
    result = load_result(args.result, tuple(RENDERERS))
    render, plot = RENDERERS[result["schema"]]
    inputs: dict[str, str | Path | None] = {"RESULT": args.result}
    if result["schema"] == SCHEMA_SUMMARY:  # the drift picture reads the group manifests beside the summary
        folder = Path(args.result).parent
        plot = lambda summary, path: plot_g0g1_drift(summary, path, folder)  # noqa: E731
        inputs.update({f"the {name} manifest": path for name, path in manifest_paths(result, folder).items()})
    out = Path(args.output) if args.output else Path(args.result).with_suffix(".md")
    files = {"--output": out, "--output (.png beside it)": out.with_suffix(".png") if plot else None}
    check_output_files(files, inputs)
    text = render(result)
    atomic_write_text(out, text)
    drawn = draw(plot, result, out.with_suffix(".png")) if plot else {}
    if args.print:
        print(text)
    if drawn.get("plot_error"):
        print(f"warning: the plot was not drawn: {drawn['plot_error']}", file=sys.stderr)
    print(f"Report saved to: {out}", file=sys.stderr)
    return exits.OK


def add_compare(sub: Subcommands) -> Callable:
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
