"""``prefixbench isolation``: does the server keep tenants apart by ``cache_salt``? PASS / FAIL / UNKNOWN, and the
hit rate salting costs on a workload with a salt per tenant.

Exit codes and outputs: as every live command (``cli.live``).
"""

from __future__ import annotations

import argparse
from typing import Callable, Mapping

from ..core import bounds
from ..report.format import pct
from ..report.live import render_isolation
from .args import arg, Subcommands
from .live import add_live_parser, launch

DEFAULT_OUTPUT = "isolation_results.json"


def add_isolation(sub: Subcommands) -> Callable:
    p = add_live_parser(sub, "isolation", DEFAULT_OUTPUT,
                        help="tenant isolation by cache_salt: only same-salt requests may hit",
                        description="Sends one prompt with salt a, a, b, no salt, no salt, b and reports which hit "
                                    "(cached_tokens and the counters, each request alone), then a tenant workload "
                                    "with and without a salt per tenant: what salting costs in hit rate.")
    arg(p, "--prompt-len", bound=bounds.PROMPT_TOKENS, default=401, help="probe prompt tokens (default 401)")
    arg(p, "--tenants", bound=bounds.PREFIXES, default=4, help="tenants of the cost workload (default 4)")
    arg(p, "--requests-per-tenant", bound=bounds.REQUESTS, default=4, help="requests per tenant (default 4)")
    arg(p, "--shared-len", bound=bounds.PREFIX_TOKENS, default=None,
        help="shared system prefix of the cost workload (default 3 blocks)")
    arg(p, "--suffix-len", bound=bounds.PROMPT_TOKENS, default=64, help="unique tokens per request (default 64)")
    arg(p, "--seed", bound=bounds.SEED, default=None, help="prompt seed (default: a fresh one per run)")
    return run_isolation


def run_isolation(args: argparse.Namespace) -> int:
    from ..run.isolation import run_isolation as run

    return launch(args, {}, run, render_isolation, None, _lines, prompt_len=args.prompt_len, tenants=args.tenants,
                  requests_per_tenant=args.requests_per_tenant, shared_len=args.shared_len,
                  suffix_len=args.suffix_len, seed=args.seed)


def _lines(result: Mapping) -> list[str]:
    verdict = result.get("isolation") or {}
    cost = result.get("cost") or {}
    lines = [f"isolation: {verdict.get('verdict', 'UNKNOWN')}"] + [f"  {r}" for r in verdict.get("reasons", [])]
    for row in result.get("requests") or []:
        if row["phase"] == "probe":
            lines.append(f"  {row['label']:<14} cached_tokens {row['cached_tokens']}  counters "
                         f"{row['counter_hit_tokens']}  predicted {row['predicted_hit_tokens']}")
    if cost:
        lines.append(f"salting cost: unsalted {pct(cost['unsalted']['measured_hit_rate'])} -> salted "
                     f"{pct(cost['salted']['measured_hit_rate'])} measured (predicted "
                     f"{pct(cost['unsalted']['predicted_hit_rate'])} -> {pct(cost['salted']['predicted_hit_rate'])})")
    return lines
