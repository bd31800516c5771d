"""``prefixbench trace``: replay a Mooncake-format trace (a name or a file) through the simulator."""

from __future__ import annotations

import argparse
from typing import Callable

from ..cache.prefix_cache import check_policy
from ..report.tables import simulation_table
from ..simulate.replay import replay_trace
from ..simulate.routing import SIMULATED_ROUTINGS, check_routing, compare_routings
from ..workload.traces import TRACES, TraceRequest, load_trace
from . import exits
from ..core import bounds
from ..core.errors import InputError
from .args import arg, bounded, print_json, progress_wanted, Subcommands
from ..report.tables import print_rows as print_rows_of


def add_trace(sub: Subcommands) -> Callable:
    p = sub.add_parser("trace", help="replay a Mooncake-format trace (name or file) through the simulator",
                       description="A name (conversation, synthetic) resolves to a verified copy in "
                                   "$PREFIXBENCH_TRACE_DIR or the download cache, else downloads it once.")
    p.add_argument("trace", metavar="FILE_OR_NAME")
    arg(p, "--capacity", bound=bounds.CAPACITY, unlimited=True, required=True, help="cache size in 512-token blocks")
    p.add_argument("--policy", default="lru", help="lru (default, as real engines) or seed")
    p.add_argument("--last-token-rule", action="store_true",
                   help="vLLM's rule: the last prompt token is always recomputed")
    p.add_argument("--no-download", action="store_true", help="fail instead of downloading a named trace")
    p.add_argument("--replicas", type=replica_counts, default=None,
                   help=f"N or N1,N2,...: simulate N replicas, one pool of --capacity blocks each "
                        f"({bounds.REPLICAS.describe()})")
    p.add_argument("--routing", type=routings, default=None,
                   help=f"with --replicas: {' | '.join(SIMULATED_ROUTINGS)}, a comma list, or all (default: all)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return run_trace


def replica_counts(text: str) -> list[int]:
    parse = bounded(bounds.REPLICAS)
    return [parse(part.strip()) for part in text.split(",")]


def routings(text: str) -> list[str]:
    names = list(SIMULATED_ROUTINGS) if text == "all" else [part.strip() for part in text.split(",")]
    for name in names:
        if name not in SIMULATED_ROUTINGS:
            raise argparse.ArgumentTypeError(
                f"unknown routing {name!r}; choose from {', '.join(SIMULATED_ROUTINGS)} or all")
    return names


def run_trace(args: argparse.Namespace) -> int:
    check_policy(args.policy)  # fail before a long load
    if args.routing and not args.replicas:
        raise InputError("--routing", "needs --replicas")
    requests = load_trace(args.trace, allow_download=not args.no_download)
    if args.replicas:
        return _run_routing(args, requests)
    result = replay_trace(requests, args.capacity, args.policy, last_token_rule=args.last_token_rule,
                          progress=progress_wanted(args.json))
    result = {"trace": args.trace, **result}
    if args.trace in TRACES:
        result["paper_cache_ratio"] = TRACES[args.trace].paper_cache_ratio
    if args.json:
        print_json(result)
    else:
        simulation_table(result, title=f"trace replay: {args.trace}")
    return exits.OK


def _run_routing(args: argparse.Namespace, requests: list[TraceRequest]) -> int:
    for name in args.routing or SIMULATED_ROUTINGS:
        check_routing(name)
    result = compare_routings(requests, args.replicas, args.routing or list(SIMULATED_ROUTINGS), args.capacity,
                              args.policy, last_token_rule=args.last_token_rule)
    result = {"trace": args.trace, "capacity_blocks_per_replica": args.capacity, "policy": args.policy, **result}
    if args.json:
        print_json(result)
        return exits.OK
    print_rows_of(f"trace {args.trace}: cluster token hit rate by routing (one pool of "
                  f"{args.capacity or 'unlimited'} blocks per replica; one replica: "
                  f"{result['single_replica_token_hit_rate']:.4f})",
                  ["replicas", "routing", "token hit rate", "lost to best", "load imbalance"],
                  [[str(r["replicas"]), r["routing"], f"{r['token_hit_rate']:.4f}",
                    f"{r['hit_rate_lost_to_best']:.4f}", f"{r['load_imbalance']:.2f}"] for r in result["results"]])
    return exits.OK
