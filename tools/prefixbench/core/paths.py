"""Where things live: the repository, the per-user cache, the default workload and result folders, traces.

One home for each of these, so a test, a benchmark, the grader and the library agree on them.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_WORKLOAD = REPO_ROOT / "benchmarks" / "workloads" / "prefix_reuse.jsonl"
DEFAULT_RESULTS_DIR = REPO_ROOT / "benchmarks" / "results"
SHARED_TRACE_DIR = REPO_ROOT.parent / "shared" / "data" / "mooncake"
"""The team's read-only copy of the Mooncake traces, when the repository sits beside ``shared/``."""


def cache_root() -> Path:
    """``$PREFIXBENCH_CACHE``, default ``~/.cache/prefixbench``: built models and downloaded traces."""
    return Path(os.environ.get("PREFIXBENCH_CACHE") or Path.home() / ".cache" / "prefixbench")


def trace_cache_dir() -> Path:
    return cache_root() / "traces"


def local_trace_dir() -> Path | None:
    """A folder that already holds the traces: ``$PREFIXBENCH_TRACE_DIR``, else the team's copy beside the
    repository, else ``None``. Tests, benchmarks and the grader point the library at it (the library itself
    only reads ``$PREFIXBENCH_TRACE_DIR``, so a user's download path stays what the docs say)."""
    given = os.environ.get("PREFIXBENCH_TRACE_DIR")
    if given:
        return Path(given)
    return SHARED_TRACE_DIR if SHARED_TRACE_DIR.is_dir() else None
