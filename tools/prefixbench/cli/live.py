"""Flags and the write step shared by the live-traffic commands (``sessions``, ``replay``, ``isolation``).

Same conventions as ``hitrate``: bounded flags (exit 1, one line), outputs checked before any work and never an
input (nor is the keep copy), the previous result kept as ``NAME.previous.json`` at the first write (so bad input
the server's answer reveals, such as a prompt longer than its context, still leaves every file as it was), the
result written while running and atomically at the end with its Markdown (and PNG) beside it. Exit codes: 0 done
(status ok, or partial when some requests failed; for ``isolation`` whatever its verdict), 1 bad arguments (one
line, nothing sent), 2 nothing measured, 3 interrupted (Ctrl-C / SIGTERM; the partial result is written).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Callable, Mapping

from ..core import bounds
from ..core.live_results import LiveRunResult
from ..report.format import pct
from ..report.outputs import KeptResult, check_output_files, output_files, write_result_files
from . import exits
from .args import arg, print_json, progress_wanted, Subcommands
from .signals import terminate_as_interrupt


def add_live_parser(sub: Subcommands, name: str, default_output: str, *, help: str,  # noqa: A002 (argparse's own name)
                    description: str) -> argparse.ArgumentParser:
    """A live command's parser holding the flags every live command shares (``add_server_flags``); the command
    adds only its own, so the shared ones cannot drift apart between commands."""
    p = sub.add_parser(name, help=help, description=description)
    add_server_flags(p, default_output)
    return p


def add_server_flags(p: argparse.ArgumentParser, default_output: str) -> None:
    p.add_argument("--endpoint", required=True, help="the server, e.g. http://127.0.0.1:8000 or .../v1")
    p.add_argument("--model", required=True, help="served model name")
    p.add_argument("--metrics-endpoint", action="append", default=None, metavar="[LABEL=]URL",
                   help="Prometheus endpoint (default: ENDPOINT/metrics)")
    arg(p, "--block-size", bound=bounds.BLOCK_SIZE, default=None,
        help="cache block size when the server does not publish it")
    arg(p, "--kv-blocks", bound=bounds.KV_BLOCKS, default=None,
        help="the pool the server was started with (vLLM --num-gpu-blocks-override N): checked against what it "
             "publishes (a contradiction is refused, nothing sent); the engine model predicts with it")
    p.add_argument("--no-reset", action="store_true", help="do not empty the server's prefix cache first")
    arg(p, "--request-timeout", bound=bounds.TIMEOUT_S, default=bounds.DEFAULT_REQUEST_TIMEOUT_S,
        help="seconds one request may take before it counts as failed")
    p.add_argument("--output", default=default_output, help=f"result JSON (default {default_output}); the .md "
                   "(and .png) go beside it")
    p.add_argument("--json", action="store_true", help="print a JSON summary instead of lines")


def common(args: argparse.Namespace) -> dict:
    """The keyword arguments every live run takes, from the shared flags."""
    from ..measure.endpoints import base_url_of, metrics_endpoints

    return {"endpoint": args.endpoint, "model": args.model,
            "metrics": metrics_endpoints(args.metrics_endpoint, base_url_of(args.endpoint)),
            "block_size": args.block_size, "kv_blocks": args.kv_blocks, "reset_cache": not args.no_reset,
            "timeout_s": args.request_timeout, "progress": progress_wanted(args.json)}


def prepare(args: argparse.Namespace, inputs: Mapping[str, str | None], plot: bool) -> KeptResult:
    """Check every output (the keep copy included) before any work; the result file, whose previous version is
    kept at the first write."""
    output = Path(args.output)
    check_output_files(output_files(output, plot=plot, keep=True), inputs)
    return KeptResult(output)


def launch(args: argparse.Namespace, inputs: Mapping[str, str | None], run: Callable[..., LiveRunResult],
           render: Callable[[Mapping], str], plot: Callable | None, lines: Callable[[Mapping], list[str]],
           **kwargs: Any) -> int:
    """A live command once its own flags are checked: outputs checked (``prepare``; a PNG only with a ``plot``),
    then ``run`` with the shared flags (``common``) and ``kwargs``, its files written and the exit code returned."""
    output = prepare(args, inputs, plot=plot is not None)
    return execute(args, output, run, render, plot, lines, **common(args), **kwargs)


def execute(args: argparse.Namespace, output: KeptResult, run: Callable[..., LiveRunResult],
            render: Callable[[Mapping], str],
            plot: Callable | None, lines: Callable[[Mapping], list[str]], **kwargs: Any) -> int:
    """Run (writing the result while it runs), write JSON, Markdown and plot, print, return the exit code."""
    with terminate_as_interrupt():  # run() turns the interrupt into a written partial result
        result = run(on_update=output.write,
                     log=(lambda _: None) if args.json else (lambda m: print(m, file=sys.stderr)),
                     **kwargs).to_json()
    output.keep()
    paths = write_result_files(result, output.output, render, plot)
    if args.json:
        print_json({"status": result["status"], "hit_rates": result.get("hit_rates"),
                    "verdict": result.get("verdict"), "outputs": paths})
    else:
        for line in lines(result) + [f"written: {', '.join(p for p in paths.values() if p)}"]:
            print(line)
    if result["status"] != "ok":
        print(f"error: {result['error']}", file=sys.stderr)
    return exits.RUN_STATUS[result["status"]]


def rate_line(result: Mapping) -> str:
    rates = result.get("hit_rates") or {}
    prediction = result.get("prediction") or {}
    return (f"hit rate predicted {pct(rates.get('predicted'))} ({prediction.get('policy', 'n/a')}), measured "
            f"{pct(rates.get('measured'))} ({rates.get('measured_evidence')}); exact expected: "
            f"{prediction.get('exact_expected')}, difference {prediction.get('difference_tokens')} tokens")
