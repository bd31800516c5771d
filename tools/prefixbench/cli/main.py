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
from ..core.usage import OneLineParser
from . import exits
from .conformance import add_conformance
from .g0g1 import add_g0g1
from .hitrate import add_hitrate
from .isolation import add_isolation
from .replay import add_replay
from .sessions import add_sessions
from .plan import add_plan
from .report import add_compare, add_report
from .signals import Terminated
from .simulate import add_simulate
from .sweep import add_sweep
from .trace import add_trace
from .workload import add_workload

COMMANDS: list[Callable] = [add_simulate, add_workload, add_trace, add_g0g1, add_hitrate, add_report, add_compare,
                             add_plan, add_isolation, add_sessions, add_replay]
"""Each entry adds one subparser and returns the function that runs it. New commands register here."""
COMMANDS.append(add_sweep)
COMMANDS.append(add_conformance)


def _prog() -> str:
    """The name the user typed: the ``prefixbench`` console script, or ``python -m tools.prefixbench``."""
    return "python -m tools.prefixbench" if os.path.basename(sys.argv[0]) == "__main__.py" else "prefixbench"


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog=_prog(),
                    description="Does prefix caching pay off for this workload, and how do we know?")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    for add in COMMANDS:
        run = add(sub)
        sub.choices[list(sub.choices)[-1]].set_defaults(_run=run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # a usage error (exit 1, one line already printed) or --help (exit 0)
        return exc.code if isinstance(exc.code, int) else exits.BAD_INPUT
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
    except OSError as exc:  # the disk filled up or a folder vanished after the checks: one line, not a traceback
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {where}{exc.strerror or exc}", file=sys.stderr)
        return exits.FAILED
