"""``prefixbench trace``: replay a Mooncake-format trace (a name or a file) through the simulator."""

from __future__ import annotations

import sys
from typing import Callable

from ..cache.prefix_cache import check_policy
from ..report.tables import simulation_table
from ..simulate.replay import replay_trace
from ..workload.traces import TRACES, load_trace
from . import exits
from ..core import bounds
from .args import arg, print_json


def add_trace(sub) -> Callable:
    p = sub.add_parser("trace", help="replay a Mooncake-format trace (name or file) through the simulator",
                       description="A name (conversation, synthetic) resolves to a verified copy in "
                                   "$PREFIXBENCH_TRACE_DIR or the download cache, else downloads it once.")
    p.add_argument("trace", metavar="FILE_OR_NAME")
    arg(p, "--capacity", bound=bounds.CAPACITY, unlimited=True, required=True, help="cache size in 512-token blocks")
    p.add_argument("--policy", default="lru", help="lru (default, as real engines) or seed")
    p.add_argument("--last-token-rule", action="store_true",
                   help="vLLM's rule: the last prompt token is always recomputed")
    p.add_argument("--no-download", action="store_true", help="fail instead of downloading a named trace")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return run_trace


def run_trace(args) -> int:
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
    return exits.OK
