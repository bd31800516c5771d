"""``prefixbench simulate``: a token-id workload through the prefix-cache simulator."""

from __future__ import annotations

import argparse
from typing import Callable

from ..report.tables import simulation_table
from ..simulate.sequences import simulate_prefix_cache
from ..workload import DEFAULT_WORKLOAD, load_workload
from . import exits
from ..core import bounds
from .args import arg, print_json, Subcommands


def add_simulate(sub: Subcommands) -> Callable:
    p = sub.add_parser("simulate", help="replay a token-id workload through the prefix-cache simulator")
    p.add_argument("--workload", default=None, help="workload JSONL (default: benchmarks/workloads/prefix_reuse.jsonl)")
    arg(p, "--block-size", bound=bounds.BLOCK_SIZE, default=16)
    arg(p, "--capacity", bound=bounds.CAPACITY, unlimited=True, default=None, help="cache size in blocks (default inf)")
    p.add_argument("--policy", default="lru", help="lru (default, as real engines) or seed")
    p.add_argument("--last-token-rule", action="store_true",
                   help="vLLM's rule: the last prompt token is always recomputed")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return run_simulate


def run_simulate(args: argparse.Namespace) -> int:
    workload = load_workload(args.workload or DEFAULT_WORKLOAD)
    result = simulate_prefix_cache(workload.prompts, args.block_size, args.capacity,
                                   policy=args.policy, last_token_rule=args.last_token_rule)
    result = {"workload": workload.source, "workload_id": workload.workload_id, **result}
    if args.json:
        print_json(result)
    else:
        simulation_table(result, title=f"simulate: {workload.source}")
    return exits.OK
