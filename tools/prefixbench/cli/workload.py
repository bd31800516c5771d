"""``prefixbench workload``: generate a seeded shared-prefix workload (token ids, JSONL)."""

from __future__ import annotations

from typing import Callable

from ..workload import DEFAULT_WORKLOAD, DEFAULT_WORKLOAD_ARGS, generate_shared_prefix_workload, save_workload
from . import exits
from .args import positive_int


def add_workload(sub) -> Callable:
    d = DEFAULT_WORKLOAD_ARGS
    p = sub.add_parser("workload", help="generate a seeded shared-prefix workload (token ids, JSONL)",
                       description="Without options this regenerates benchmarks/workloads/prefix_reuse.jsonl.")
    p.add_argument("--out", default=str(DEFAULT_WORKLOAD))
    p.add_argument("--num-requests", type=positive_int, default=d["num_requests"])
    p.add_argument("--input-len", type=positive_int, default=d["input_len"])
    share = p.add_mutually_exclusive_group()
    share.add_argument("--prefix-len", type=int, default=None, help=f"shared prefix tokens (default {d['prefix_len']})")
    share.add_argument("--shared-ratio", type=float, default=None, help="shared prefix as a share of --input-len")
    p.add_argument("--num-prefixes", type=positive_int, default=d["num_prefixes"])
    p.add_argument("--output-len", type=positive_int, default=d["output_len"])
    p.add_argument("--exact-repeats", type=int, default=d["exact_repeats"])
    p.add_argument("--seed", type=int, default=d["seed"])
    return run_workload


def run_workload(args) -> int:
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
