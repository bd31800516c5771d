"""``prefixbench sweep``: G0 and G1 over several loads, with goodput under SLOs and confidence per point."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

from ..core import bounds
from ..core.files import atomic_write_text
from ..core.paths import DEFAULT_RESULTS_DIR
from ..report.outputs import draw
from ..report.sweep import COLUMNS, headline_text, plot_sweep, render_sweep_markdown, sweep_rows
from ..report.tables import print_rows
from . import exits
from .args import arg, bounded, print_json, progress_wanted, Subcommands
from .g0g1 import add_server_flags, endpoints_of
from .signals import terminate_as_interrupt


def _list_of(bound: bounds.Bound) -> Callable[[str], list]:
    parse = bounded(bound)

    def parse_list(text: str) -> list:
        parts = [part.strip() for part in text.split(",")]
        if len(parts) > bounds.SWEEP_POINTS:
            raise argparse.ArgumentTypeError(f"at most {bounds.SWEEP_POINTS} load points, got {len(parts)}")
        return [parse(part) for part in parts]

    parse_list.__name__ = "list"
    return parse_list


def add_sweep(sub: Subcommands) -> Callable:
    p = sub.add_parser("sweep", help="real backend: G0 and G1 at several loads, goodput under SLOs, confidence",
                       description="Starts vLLM with prefix caching off, then on (one server per group for the "
                                   "whole sweep), runs every load point --repeats times on each, and writes "
                                   "69_prefix_cache_sweep.json, .md and .png plus each point's manifests.")
    add_server_flags(p)
    loads = p.add_mutually_exclusive_group(required=True)
    loads.add_argument("--concurrency", type=_list_of(bounds.CONCURRENCY), default=None,
                       help=f"C1,C2,...: requests in flight per point ({bounds.CONCURRENCY.describe()} each)")
    loads.add_argument("--request-rates", type=_list_of(bounds.REQUEST_RATE), default=None,
                       help=f"R1,R2,...: requests/s per point ({bounds.REQUEST_RATE.describe()} each)")
    arg(p, "--repeats", bound=bounds.RUN_REPEATS, default=3, help="runs of each group at each point")
    arg(p, "--ttft-slo-ms", bound=bounds.LATENCY_MS, default=None, help="goodput counts requests within it")
    arg(p, "--tpot-slo-ms", bound=bounds.LATENCY_MS, default=None, help="goodput counts requests within it")
    p.add_argument("--out", default=str(DEFAULT_RESULTS_DIR), help="folder for the results")
    p.add_argument("--json", action="store_true", help="print the sweep manifest as JSON")
    return run_sweep_command


def run_sweep_command(args: argparse.Namespace) -> int:
    from ..run.sweep import SWEEP_NAME, run_sweep
    from ..serve.server import ServerError

    quiet = args.json
    try:
        with terminate_as_interrupt():
            sweep = run_sweep(
                model=args.model, workload=args.workload, num_prompts=args.num_prompts, max_tokens=args.max_tokens,
                concurrencies=args.concurrency, request_rates=args.request_rates, repeats=args.repeats,
                ttft_slo_ms=args.ttft_slo_ms, tpot_slo_ms=args.tpot_slo_ms, warmup=args.warmup, out=args.out,
                replicas=args.replicas, routing=args.routing, endpoints=endpoints_of(args),
                dtype=args.dtype, startup_timeout_s=args.startup_timeout, request_timeout_s=args.request_timeout,
                deadline_s=args.deadline, progress=progress_wanted(quiet),
                log=(lambda _: None) if quiet else (lambda m: print(m, file=sys.stderr)))
    except ServerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exits.FAILED
    stem = Path(args.out) / SWEEP_NAME.removesuffix(".json")
    atomic_write_text(stem.with_suffix(".md"), render_sweep_markdown(sweep))
    drawn = draw(plot_sweep, sweep, stem.with_suffix(".png"))  # the manifest is written already; a plot never loses it
    if drawn.get("plot_error"):
        print(f"warning: the sweep plot was not drawn ({drawn['plot_error']})", file=sys.stderr)
    if quiet:
        print_json(sweep)
    else:
        print_rows(f"prefix cache sweep ({sweep['status']})", COLUMNS, sweep_rows(sweep))
        print(headline_text(sweep))
    if sweep["status"] != "ok":
        kept = [path for path in (sweep.get("previous") or {}).values() if path]
        print(f"error: sweep {sweep['status']}: some points failed (see {stem.with_suffix('.json')})"
              + (f"; the previous result is kept as {' and '.join(kept)}" if kept else ""), file=sys.stderr)
    return exits.OK if sweep["status"] == "ok" else exits.FAILED
