"""``prefixbench`` / ``python -m tools.prefixbench``: one entry point, one subcommand per module of ``cli``.

Every user mistake ends as one line on stderr and exit code 1; tracebacks are for bugs only. Exit codes and
the signal policy are ``cli.exits`` and ``cli.signals``.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable, Sequence

from ..core.errors import InputError
from . import exits
from .args import Parser
from .g0g1 import add_g0g1
from .hitrate import add_hitrate
from .report import add_compare, add_report
from .signals import Terminated
from .simulate import add_simulate
from .trace import add_trace
from .workload import add_workload

COMMANDS: list[Callable] = [add_simulate, add_workload, add_trace, add_g0g1, add_hitrate, add_report, add_compare]
"""Each entry adds one subparser and returns the function that runs it. New commands register here."""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m tools.prefixbench",
                    description="Does prefix caching pay off for this workload, and how do we know?")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
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
        return exits.BAD_INPUT
    except Terminated as exc:
        print("terminated", file=sys.stderr)
        return exits.for_signal(exc.signum)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return exits.INTERRUPTED
    except BrokenPipeError:  # e.g. `... --json | head`: the reader left, nothing is wrong
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return exits.OK
