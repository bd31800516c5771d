"""``prefixbench hitrate``: is prefix caching working on a running server? Target vs predicted vs measured.

Exit codes (``cli.exits``): 0 done (status ok, or partial when some requests failed), 1 bad arguments (one
line), 2 nothing measured (every request failed, or the server could not be reached), 3 interrupted (Ctrl-C /
SIGTERM; the partial result is still written).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from typing import Callable

from ..core.errors import InputError
from ..core.records import load_hitrate_result
from ..report.outputs import KeptResult, check_output_files, output_files, write_outputs
from ..report.tables import print_hitrate_table
from ..workload.hitrate import HitrateWorkload, file_workload, generated_workload
from . import exits
from ..core import bounds
from .args import arg, print_json, progress_wanted, Subcommands
from .signals import terminate_as_interrupt

DEFAULT_OUTPUT = "hitrate_results.json"


def add_hitrate(sub: Subcommands) -> Callable:
    p = sub.add_parser("hitrate", help="is prefix caching working? target vs predicted vs measured on a running server",
                       description="Builds a workload with a known shared ratio (or reads --workload), prefills its "
                                   "prefixes, and reads the server's own counters before and after the measured "
                                   "requests. Writes the JSON result, a Markdown report and a PNG beside it, and "
                                   "appends one line to the history file.")
    p.add_argument("--endpoint", required=True, action="append",
                   help="the server, e.g. http://127.0.0.1:8000 or .../v1; repeat for replicas the client places "
                        "requests on (with --routing), or give one router with --replica-metrics")
    p.add_argument("--model", required=True, help="served model name")
    p.add_argument("--tokenizer", default=None,
                   help="tokenizer path or id: checks the ids fit and reports what a chat template would add")
    arg(p, "--num-requests", bound=bounds.REQUESTS, default=None,
        help="measured requests (default 40; with --workload: all lines)")
    arg(p, "--input-len", bound=bounds.PROMPT_TOKENS, default=None, help="prompt tokens (default 2048)")
    share = p.add_mutually_exclusive_group()
    arg(share, "--hit-rate", bound=bounds.SHARE, default=None, help="target shared share of the prompt")
    arg(share, "--prefix-len", bound=bounds.PREFIX_TOKENS, default=None, help="shared prefix tokens")
    arg(p, "--prefix-num", bound=bounds.PREFIXES, default=None, help="distinct prefixes (default 1)")
    arg(p, "--output-len", bound=bounds.OUTPUT_TOKENS, default=None, help="output tokens per request (default 16)")
    rate = p.add_mutually_exclusive_group()
    arg(rate, "--concurrency", bound=bounds.CONCURRENCY, default=None, help="requests in flight (default 1)")
    arg(rate, "--request-rate", bound=bounds.REQUEST_RATE, default=None, help="requests per second, no in-flight limit")
    p.add_argument("--metrics-endpoint", action="append", default=None, metavar="[LABEL=]URL",
                   help="Prometheus endpoint; repeat for several engines or replicas (default: ENDPOINT/metrics)")
    p.add_argument("--routing", default=None, help="several --endpoint: round_robin | least_loaded | prefix_affinity "
                   "(the replica the block model says holds the longest cached prefix): the client places each "
                   "request, and each replica's counters and prediction are kept")
    p.add_argument("--replica-metrics", action="append", default=None, metavar="[LABEL=]URL",
                   help="--endpoint is a router (vLLM production-stack, llm-d, SGLang router): each replica's "
                        "Prometheus endpoint; with --concurrency 1 the counters show which replica served each "
                        "request, and the report says how well the router kept prefixes together")
    add_router_flags(p)
    arg(p, "--block-size", bound=bounds.BLOCK_SIZE, default=None,
                   help="cache block size when the server does not publish it (SGLang: its page size)")
    arg(p, "--kv-blocks", bound=bounds.KV_BLOCKS, default=None,
        help="the pool size the server was started with (vLLM --num-gpu-blocks-override N): checked against what "
             "it publishes and against the workload before any request; the engine model predicts with it")
    add_evidence_flags(p)
    p.add_argument("--reset-cache", action="store_true", help="empty the server's prefix cache first")
    p.add_argument("--no-prefill", action="store_true", help="skip the prefill phase (measure a cold cache)")
    p.add_argument("--workload", default=None, help="JSONL of token-id prompts instead of a generated workload")
    arg(p, "--seed", bound=bounds.SEED, default=0, help="seed of the generated workload")
    p.add_argument("--baseline", default=None, help="result JSON of a cache-off run of the same workload")
    arg(p, "--ttft-slo-ms", bound=bounds.LATENCY_MS, default=None, help="TTFT p50 limit for the verdict")
    arg(p, "--tpot-slo-ms", bound=bounds.LATENCY_MS, default=None, help="TPOT p50 limit for the verdict")
    arg(p, "--request-timeout", bound=bounds.TIMEOUT_S, default=bounds.DEFAULT_REQUEST_TIMEOUT_S,
        help="seconds one request may take before it counts as failed")
    arg(p, "--deadline", bound=bounds.TIMEOUT_S, default=bounds.DEFAULT_DEADLINE_S,
        help="seconds the whole run may take (probe, prefill, measured phase, every scrape); requests not "
             "finished by then fail, and the last counter scrape gets one --request-timeout more")
    p.add_argument("--output", default=DEFAULT_OUTPUT, help=f"result JSON (default {DEFAULT_OUTPUT}); the .md and "
                   ".png go beside it")
    p.add_argument("--history", default=None, help="history JSONL (default: hitrate_history.jsonl beside --output)")
    p.add_argument("--json", action="store_true", help="print the result summary as JSON instead of a table")
    return run_hitrate


def add_evidence_flags(p: argparse.ArgumentParser) -> None:
    """Evidence beyond the counters: the server's KV events, vLLM's own scheduler as a second model."""
    p.add_argument("--kv-events", default=None, metavar="tcp://127.0.0.1:PORT",
                   help="receive vLLM's KV events here (start vLLM with --kv-events-config '{\"enable_kv_cache_events\""
                        ": true, \"publisher\": \"zmq\", \"endpoint\": \"tcp://127.0.0.1:PORT\"}'): each cached and "
                        "evicted block is replayed against the engine model; needs --reset-cache")
    p.add_argument("--twin", choices=["vllm"], default=None,
                   help="requests that overlapped: replay them, at the arrivals the timeline inferred, through the "
                        "installed vLLM's own scheduler in-process too (no weights; needs vllm importable here)")


def add_router_flags(p: argparse.ArgumentParser) -> None:
    """Behind a router: start ``vllm-router`` for the run, the replicas' KV events, the router's own /metrics."""
    p.add_argument("--router", default=None, metavar="POLICY",
                   help="start vllm-router --policy POLICY (round_robin, consistent_hash, cache_aware, kv_aware, ...) "
                        "in front of the --endpoint replicas for this run and measure through it; a router that "
                        "cannot start is exit 1 before any request")
    p.add_argument("--router-arg", action="append", default=None, metavar="ARG",
                   help="one more vllm-router flag for --router, e.g. --router-arg=--cache-threshold=0.3 (repeat)")
    p.add_argument("--replica-kv-events", action="append", default=None, metavar="tcp://HOST:PORT",
                   help="behind a router: each replica's KV-event publisher, in replica order (vLLM started with "
                        "--kv-events-config '{..., \"endpoint\": \"tcp://*:PORT\"}'); kv_aware reads them, and "
                        "the placement of every request is confirmed from the blocks each replica stored")
    p.add_argument("--router-metrics", default=None, metavar="URL",
                   help="the /metrics of a router you started (vllm-router --prometheus-port): its own view is "
                        "recorded beside the replicas' counters")


def _workload(args: argparse.Namespace) -> HitrateWorkload:
    if args.workload:
        given = [f for f, v in (("--input-len", args.input_len), ("--hit-rate", args.hit_rate),
                                ("--prefix-len", args.prefix_len), ("--prefix-num", args.prefix_num)) if v is not None]
        if given:
            raise InputError(given[0], "cannot be combined with --workload (the file decides it)")
        return file_workload(args.workload, num_requests=args.num_requests, output_len=args.output_len)
    if args.hit_rate is None and args.prefix_len is None:
        raise InputError("--hit-rate", "give --hit-rate or --prefix-len (or --workload FILE)")
    return generated_workload(num_requests=args.num_requests or 40, input_len=args.input_len or 2048,
                              hit_rate=args.hit_rate, prefix_len=args.prefix_len, prefix_num=args.prefix_num or 1,
                              output_len=args.output_len or 16, seed=args.seed)


def _kv_events_address(address: str | None) -> str | None:
    """A loopback ``tcp://HOST:PORT`` to bind (the server's publisher connects to it), checked before any work."""
    if address is None:
        return None
    host, _, port = address.removeprefix("tcp://").rpartition(":")
    if not address.startswith("tcp://") or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError("--kv-events", f"must be tcp://HOST:PORT (e.g. tcp://127.0.0.1:5557), got {address!r}")
    return address


def run_hitrate(args: argparse.Namespace) -> int:
    from ..measure.endpoints import base_url_of, metrics_endpoints
    from ..run.hitrate import run_hitrate as run
    from ..run.replicas import check_replica_flags, router_session

    kv_events = _kv_events_address(args.kv_events)
    if args.twin == "vllm" and importlib.util.find_spec("vllm") is None:
        raise InputError("--twin", "vllm is not importable here: install it, or drop --twin")
    replicas = check_replica_flags(args.endpoint, args.replica_metrics, args.routing,
                                   metrics_endpoints=args.metrics_endpoint, kv_events=args.kv_events,
                                   router=args.router, router_args=args.router_arg,
                                   replica_kv_events=args.replica_kv_events, router_metrics=args.router_metrics)
    endpoint = args.endpoint[0]
    endpoints = replicas.metrics() if replicas else metrics_endpoints(args.metrics_endpoint, base_url_of(endpoint))
    output = Path(args.output)
    history = Path(args.history) if args.history else output.with_name("hitrate_history.jsonl")
    check_output_files(output_files(output, history, keep=True),
                       {"--workload": args.workload, "--baseline": args.baseline})
    baseline = load_hitrate_result(args.baseline) if args.baseline else None
    workload = _workload(args)
    kept = KeptResult(output)  # the previous result is kept at the first write: after every check
    log = (lambda _: None) if args.json else (lambda m: print(m, file=sys.stderr))
    with terminate_as_interrupt(), router_session(replicas, workload, args.model):  # the router, if --router
        endpoint = replicas.router_url if replicas and replicas.router_url else endpoint
        result = run(
            endpoint=endpoint, model=args.model, replicas=replicas, workload=workload,
            concurrency=None if args.request_rate else (args.concurrency or 1), request_rate=args.request_rate,
            metrics=endpoints, reset_cache=args.reset_cache, prefill=not args.no_prefill,
            block_size=args.block_size, tokenizer=args.tokenizer, ttft_slo_ms=args.ttft_slo_ms,
            tpot_slo_ms=args.tpot_slo_ms, baseline=baseline, progress=progress_wanted(args.json),
            request_timeout_s=args.request_timeout, deadline_s=args.deadline, kv_blocks=args.kv_blocks,
            kv_events=kv_events, twin=args.twin, on_update=kept.write, log=log).to_json()
    kept.keep()
    paths = write_outputs(result, output, history)
    if args.json:
        print_json({"status": result["status"], "hit_rates": result["hit_rates"],
                    "evidence_agreement": result.get("evidence_agreement"), "verdict": result["verdict"],
                    "outputs": paths})
    else:
        print_hitrate_table(result, paths)
    if result["status"] != "ok":
        print(f"error: {result['error']}", file=sys.stderr)
    return exits.RUN_STATUS[result["status"]]
