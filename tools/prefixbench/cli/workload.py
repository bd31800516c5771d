"""``prefixbench workload``: generate a seeded shared-prefix workload (token ids, JSONL)."""

from __future__ import annotations

import argparse
from typing import Callable

from ..workload import DEFAULT_WORKLOAD, DEFAULT_WORKLOAD_ARGS, generate_shared_prefix_workload, save_workload
from . import exits
from ..core import bounds
from ..core.files import check_output_file
from .args import arg, Subcommands


def add_workload(sub: Subcommands) -> Callable:
    d = DEFAULT_WORKLOAD_ARGS
    p = sub.add_parser("workload", help="generate a seeded shared-prefix workload (token ids, JSONL)",
                       description="Without options this regenerates benchmarks/workloads/prefix_reuse.jsonl.")
    p.add_argument("--out", default=str(DEFAULT_WORKLOAD))
    arg(p, "--num-requests", bound=bounds.REQUESTS, default=d["num_requests"])
    arg(p, "--input-len", bound=bounds.PROMPT_TOKENS, default=d["input_len"])
    share = p.add_mutually_exclusive_group()
    arg(share, "--prefix-len", bound=bounds.PREFIX_TOKENS, default=None,
        help=f"shared prefix tokens (default {d['prefix_len']})")
    arg(share, "--shared-ratio", bound=bounds.SHARE, default=None, help="shared prefix as a share of --input-len")
    arg(p, "--num-prefixes", bound=bounds.PREFIXES, default=d["num_prefixes"])
    arg(p, "--output-len", bound=bounds.OUTPUT_TOKENS, default=d["output_len"])
    arg(p, "--exact-repeats", bound=bounds.REPEATS, default=d["exact_repeats"])
    arg(p, "--seed", bound=bounds.SEED, default=d["seed"])
    return run_workload


def run_workload(args: argparse.Namespace) -> int:
    check_output_file("--out", args.out)
    prefix_len = args.prefix_len
    if prefix_len is None and args.shared_ratio is None:
        prefix_len = DEFAULT_WORKLOAD_ARGS["prefix_len"]
    workload = generate_shared_prefix_workload(
        args.num_requests, args.input_len, prefix_len=prefix_len, shared_ratio=args.shared_ratio,
        num_prefixes=args.num_prefixes, output_len=args.output_len, exact_repeats=args.exact_repeats,
        seed=args.seed)
    path = save_workload(workload, args.out)
    print(f"wrote {len(workload)} requests to {path} (workload_id {workload.workload_id})")
    return exits.OK
