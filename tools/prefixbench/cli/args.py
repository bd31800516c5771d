"""Argument types and output helpers shared by the subcommands.

Numbers are parsed against ``core.bounds``: a value outside its bound (``nan``, ``-5`` seconds, a billion
tokens) is a usage error, exit 1 and one line, before anything is read, sent or started; ``arg`` adds the
bound to the flag's ``--help`` text.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable, TypeAlias

from ..core import bounds as b
from ..core.errors import InputError
from ..core.files import to_strict_json

Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""What ``add_subparsers`` returns: each command's ``add_*`` adds its parser to it."""


def bounded(bound: b.Bound, *, unlimited: bool = False) -> Callable[[str], Any]:
    """An argparse type for ``bound``; with ``unlimited``, ``inf`` / ``unlimited`` / ``none`` mean ``None``."""

    def parse(text: str) -> Any:
        if unlimited and text.lower() in {"inf", "unlimited", "none"}:
            return None
        try:
            value = int(text) if bound.integer else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {bound.describe()}, got {text!r}") from None
        try:
            return bound.check("value", value)
        except InputError as exc:
            raise argparse.ArgumentTypeError(exc.problem) from None

    parse.__name__ = "integer" if bound.integer else "number"
    return parse


def arg(parser: argparse.ArgumentParser | argparse._ArgumentGroup, *flags: str, bound: b.Bound, help: str = "",
        unlimited: bool = False, **kwargs: Any) -> argparse.Action:
    """``parser.add_argument`` with a bounded type and the bound in the help text."""
    allowed = bound.describe() + (", or inf" if unlimited else "")
    text = f"{help} ({allowed})" if help else allowed
    return parser.add_argument(*flags, type=bounded(bound, unlimited=unlimited), help=text, **kwargs)


def progress_wanted(json_output: bool) -> bool:
    """Progress bars only on a terminal and never with ``--json``: a log (``2> log``, nohup, CI) gets the run's
    lines, not a bar's frames."""
    return not json_output and sys.stderr.isatty()


def print_json(data: object) -> None:
    print(to_strict_json(data))
