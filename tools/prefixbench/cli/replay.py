"""``prefixbench replay``: a Mooncake trace against a running server, each hash id a block of token ids at the
server's scale, timestamps honoured (scaled by ``--speed``); measured vs predicted, beside the trace's own hit rate.

Exit codes and outputs: as every live command (``cli.live``).
"""

from __future__ import annotations

import argparse
from typing import Callable, Mapping

from ..core import bounds
from ..core.sections import section
from ..report.format import pct
from ..report.live import render_replay
from .args import arg, Subcommands
from .live import add_live_parser, launch, rate_line

DEFAULT_OUTPUT = "replay_results.json"


def add_replay(sub: Subcommands) -> Callable:
    p = add_live_parser(sub, "replay", DEFAULT_OUTPUT,
                        help="replay a Mooncake trace against a running server: predicted vs measured",
                        description="Each hash_id becomes a deterministic block of --block-tokens token ids "
                                    "(default: the server's block size); requests are sent at the trace's "
                                    "timestamps / --speed; a request longer than the server's context is skipped "
                                    "and named.")
    p.add_argument("--trace", required=True, help="conversation, synthetic, or a trace JSONL file")
    arg(p, "--num-requests", bound=bounds.REQUESTS, default=None, help="the first N requests (default all)")
    arg(p, "--speed", bound=bounds.SPEED, default=1.0, help="trace clock speed-up (default 1)")
    arg(p, "--block-tokens", bound=bounds.BLOCK_SIZE, default=None,
        help="tokens per trace block (default: the server's block size)")
    arg(p, "--max-output-len", bound=bounds.OUTPUT_TOKENS, default=64, help="cap on the trace's output lengths")
    arg(p, "--concurrency", bound=bounds.CONCURRENCY, default=None,
        help="requests in flight at most (default unlimited; 1: one at a time, which the engine model replays exactly)")
    return run_replay


def run_replay(args: argparse.Namespace) -> int:
    from ..run.replay import run_replay as run

    return launch(args, {"--trace": args.trace}, run, render_replay, None, _lines, trace=args.trace,
                  num_requests=args.num_requests, speed=args.speed, block_tokens=args.block_tokens,
                  max_output_len=args.max_output_len, concurrency=args.concurrency)


def _lines(result: Mapping) -> list[str]:
    skipped, own = section(result, "skipped"), section(result, "trace_hit_rate")
    return [rate_line(result),
            f"trace's own hit rate at 512-token blocks: {pct(own.get('token_hit_rate'))}; skipped (longer than the "
            f"context): {skipped.get('count', 'n/a')}",
            f"verdict: {section(result, 'verdict').get('verdict')}"]
