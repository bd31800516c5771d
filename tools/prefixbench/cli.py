"""``python -m tools.prefixbench``: one entry point, one subcommand per job.

Every user mistake ends as one line on stderr and exit code 1; tracebacks are for bugs only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Callable, Sequence

from .errors import InputError
from .experiment import add_g0g1_parser
from .hitrate_cli import add_compare_parser, add_hitrate_parser, add_report_parser

EXIT_OK, EXIT_BAD_INPUT = 0, 1


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is exit code 1 and one line, like every other bad input."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def capacity(text: str) -> int | None:
    """A block count, or ``inf`` / ``unlimited`` for a cache that never evicts."""
    if text.lower() in {"inf", "unlimited", "none"}:
        return None
    return positive_int(text)


def print_json(data: object) -> None:
    print(json.dumps(data, ensure_ascii=False, indent=2))


# ---------------------------------------------------------------------------------------------- simulate

def _add_simulate(sub) -> Callable:
    p = sub.add_parser("simulate", help="replay a token-id workload through the prefix-cache simulator")
    p.add_argument("--workload", default=None, help="workload JSONL (default: benchmarks/workloads/prefix_reuse.jsonl)")
    p.add_argument("--block-size", type=positive_int, default=16)
    p.add_argument("--capacity", type=capacity, default=None, help="cache size in blocks, or 'inf' (default)")
    p.add_argument("--policy", default="lru", help="lru (default, as real engines) or seed")
    p.add_argument("--last-token-rule", action="store_true",
                   help="vLLM's rule: the last prompt token is always recomputed")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return _run_simulate


def _run_simulate(args) -> int:
    from .report import simulation_table
    from .simulate import simulate_prefix_cache
    from .workload import DEFAULT_WORKLOAD, load_workload

    workload = load_workload(args.workload or DEFAULT_WORKLOAD)
    result = simulate_prefix_cache(workload.prompts, args.block_size, args.capacity,
                                   policy=args.policy, last_token_rule=args.last_token_rule)
    result = {"workload": workload.source, "workload_id": workload.workload_id, **result}
    if args.json:
        print_json(result)
    else:
        simulation_table(result, title=f"simulate: {workload.source}")
    return EXIT_OK


# ---------------------------------------------------------------------------------------------- workload

def _add_workload(sub) -> Callable:
    from .workload import DEFAULT_WORKLOAD, DEFAULT_WORKLOAD_ARGS as d

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
    return _run_workload


def _run_workload(args) -> int:
    from .workload import DEFAULT_WORKLOAD_ARGS, generate_shared_prefix_workload, save_workload

    prefix_len = args.prefix_len
    if prefix_len is None and args.shared_ratio is None:
        prefix_len = DEFAULT_WORKLOAD_ARGS["prefix_len"]
    workload = generate_shared_prefix_workload(
        args.num_requests, args.input_len, prefix_len=prefix_len, shared_ratio=args.shared_ratio,
        num_prefixes=args.num_prefixes, output_len=args.output_len, exact_repeats=args.exact_repeats,
        seed=args.seed)
    path = save_workload(workload, args.out)
    print(f"wrote {len(workload)} requests to {path} (workload_id {workload.workload_id})")
    return EXIT_OK


# ------------------------------------------------------------------------------------------------- trace

def _add_trace(sub) -> Callable:
    p = sub.add_parser("trace", help="replay a Mooncake-format trace (name or file) through the simulator",
                       description="A name (conversation, synthetic) resolves to a verified copy in "
                                   "$PREFIXBENCH_TRACE_DIR or the download cache, else downloads it once.")
    p.add_argument("trace", metavar="FILE_OR_NAME")
    p.add_argument("--capacity", type=capacity, required=True, help="cache size in 512-token blocks, or 'inf'")
    p.add_argument("--policy", default="lru", help="lru (default, as real engines) or seed")
    p.add_argument("--last-token-rule", action="store_true",
                   help="vLLM's rule: the last prompt token is always recomputed")
    p.add_argument("--no-download", action="store_true", help="fail instead of downloading a named trace")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return _run_trace


def _run_trace(args) -> int:
    from .cache import check_policy
    from .report import simulation_table
    from .traces import TRACES, load_trace, replay_trace

    check_policy(args.policy)  # fail before a long load
    requests = load_trace(args.trace, allow_download=not args.no_download)
    result = replay_trace(requests, args.capacity, args.policy, last_token_rule=args.last_token_rule,
                          progress=not args.json and sys.stderr.isatty())
    result = {"trace": args.trace, **result}
    if args.trace in TRACES:
        result["paper_cache_ratio"] = TRACES[args.trace].paper_cache_ratio
    if args.json:
        print_json(result)
    else:
        simulation_table(result, title=f"trace replay: {args.trace}")
    return EXIT_OK


# ------------------------------------------------------------------------------------------------- main

COMMANDS: list[Callable] = [
    _add_simulate,
    _add_workload,
    _add_trace,
    add_g0g1_parser,
    add_hitrate_parser,
    add_report_parser,
    add_compare_parser,
]
"""Each entry adds one subparser and returns the function that runs it. New commands register here."""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m tools.prefixbench",
                     description="Does prefix caching pay off for this workload, and how do we know?")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for add in COMMANDS:
        run = add(sub)
        sub.choices[list(sub.choices)[-1]].set_defaults(_run=run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args._run(args)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 3
    except BrokenPipeError:  # e.g. `... --json | head`: the reader left, nothing is wrong
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
