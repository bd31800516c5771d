"""Argument types and output helpers shared by the subcommands."""

from __future__ import annotations

import argparse
import json

from . import exits


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is exit code 1 and one line, like every other bad input."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(exits.BAD_INPUT, f"{self.prog}: error: {message}\n")


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
