"""``prefixbench sessions``: multi-turn chat or agent sessions against a running server, each turn resending the
history with the tokens the server generated; predicted vs measured hits per request, per turn and in total.

Exit codes and outputs: as every live command (``cli.live``).
"""

from __future__ import annotations

import argparse
from typing import Callable, Mapping

from ..core import bounds
from ..core.sections import section
from ..core.records import load_sessions_result
from ..core.session_records import TurnLine
from ..report.format import pct
from ..report.live import plot_sessions, render_sessions
from ..workload.sessions import KINDS, session_plan
from .args import arg, Subcommands
from .live import add_live_parser, launch, rate_line

DEFAULT_OUTPUT = "sessions_results.json"


def add_sessions(sub: Subcommands) -> Callable:
    p = add_live_parser(sub, "sessions", DEFAULT_OUTPUT,
                        help="multi-turn chat / agent sessions: predicted vs measured hits per turn",
                        description="Each turn's prompt is the previous prompt + the tokens the server generated "
                                    "(streamed back as ids) + a new message. Writes the JSON result, a Markdown "
                                    "report and a plot of TTFT and hit rate per turn beside it.")
    p.add_argument("--kind", choices=KINDS, default="chat", help="chat messages, or agent tool outputs (default chat)")
    arg(p, "--users", bound=bounds.REQUESTS, default=4, help="sessions (default 4)")
    arg(p, "--turns", bound=bounds.REQUESTS, default=5, help="turns per session (default 5)")
    arg(p, "--system-prompt-len", bound=bounds.PREFIX_TOKENS, default=None,
        help="shared system prompt tokens (default: chat 256, agent 1024)")
    arg(p, "--user-len", bound=bounds.PROMPT_TOKENS, default=None, help="tokens of each user message (default 64)")
    arg(p, "--tool-output-len", bound=bounds.PROMPT_TOKENS, default=None,
        help="agent: tokens of each tool output after the first turn (default 256)")
    arg(p, "--output-len", bound=bounds.OUTPUT_TOKENS, default=16, help="tokens generated per turn (default 16)")
    arg(p, "--think-time-s", bound=bounds.THINK_TIME_S, default=0.0, help="pause between a session's turns")
    arg(p, "--concurrency", bound=bounds.CONCURRENCY, default=1, help="sessions at once (default 1: counters per turn)")
    arg(p, "--seed", bound=bounds.SEED, default=0, help="seed of the messages")
    p.add_argument("--baseline", default=None, help="result JSON of the same sessions on a cache-off server")
    return run_sessions


def run_sessions(args: argparse.Namespace) -> int:
    from ..run.sessions import check_baseline, run_sessions as run

    plan = session_plan(kind=args.kind, users=args.users, turns=args.turns, system_prompt_len=args.system_prompt_len,
                        user_len=args.user_len, output_len=args.output_len, tool_output_len=args.tool_output_len,
                        seed=args.seed)
    baseline = check_baseline(load_sessions_result(args.baseline), args.baseline) if args.baseline else None
    return launch(args, {"--baseline": args.baseline}, run, render_sessions, plot_sessions, _lines, plan=plan,
                  concurrency=args.concurrency, think_time_s=args.think_time_s, baseline=baseline)


def _lines(result: Mapping) -> list[str]:
    lines = [rate_line(result)]
    for t in map(TurnLine.from_json, result.get("per_turn") or []):
        lines.append(f"  turn {t.turn}: predicted {pct(t.predicted_hit_rate)} cached_tokens {pct(t.cached_rate)} "
                     f"client estimate {pct(t.client_estimate_rate)} TTFT p50 "
                     f"{t.ttft_ms_p50 if t.ttft_ms_p50 is None else round(t.ttft_ms_p50, 1)} ms")
    return lines + [f"verdict: {section(result, 'verdict').get('verdict')}"]
