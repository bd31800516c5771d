"""Shared test setup: point the trace resolver at the read-only ../shared copy (tests never download)."""

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_TRACES = REPO.parent / "shared" / "data" / "mooncake"

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
if SHARED_TRACES.is_dir():
    os.environ.setdefault("PREFIXBENCH_TRACE_DIR", str(SHARED_TRACES))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def shared_traces() -> Path:
    if not SHARED_TRACES.is_dir():
        pytest.skip("../shared/data/mooncake is not beside the repository")
    return SHARED_TRACES
