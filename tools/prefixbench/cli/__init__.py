"""Layer 10, the command line: nothing else in the library imports it.

``main`` is the ``prefixbench`` console script and ``python -m tools.prefixbench``; ``args`` holds the shared
argument types, ``exits`` every exit code, ``signals`` the one signal policy, and each other module one
subcommand (``simulate``, ``workload``, ``trace``, ``g0g1``, ``hitrate``, ``report`` with ``compare``).
"""

from .main import build_parser, main

__all__ = ["build_parser", "main"]
