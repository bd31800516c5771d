"""The one argparse rule every command of the project follows: a usage error is one line and exit code 1.

argparse's own prints the usage text and exits 2; a mistyped option is bad input like any other, so
``prefixbench`` and ``python -m tools.course.release`` answer it the same way (``grade.py`` adds a pointer to its
``--help``).
"""

from __future__ import annotations

import argparse
from typing import NoReturn

BAD_INPUT = 1
"""The exit code of bad input, for every command (``cli.exits.BAD_INPUT`` is this one)."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (``PROG: error: MESSAGE``) and exit code 1."""

    def error(self, message: str) -> NoReturn:
        self.exit(BAD_INPUT, f"{self.prog}: error: {message}\n")
