"""How pytest-xdist shares the suite among its workers (tools/run.sh test: ``-n 3 --dist loadfile``).

A work unit is one test module, taken whole by one worker, so a module's servers (module-scoped fixtures) start
once. The modules that use the session's tiny-server pool (``pytest.mark.tiny_pool``) form one unit, so the pool
starts once, on one worker. xdist's own ``loadgroup`` cannot express that here: it tags each test's node id, which
pytest 9.2 no longer lets a plugin rewrite. The controller does not collect tests, so it finds the pool's modules
by their source; each worker checks, after collection, that the marks agree.

Units are handed out in collection order, one at a time, as a worker runs dry. The workers order the collection
long kinds first (the pool, other real-server modules, nbgrader, the unit modules marked ``long_unit``, the rest;
within a kind, more tests first), so the short units fill the gaps at the end instead of a long one starting last
(mypy's two tests, 18 s, started last and ended the suite alone before they were marked).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import pytest
from xdist.scheduler import LoadFileScheduling

POOL_UNIT = "tiny_pool"
_POOL_MARK = re.compile(r"\bmark\.tiny_pool\(")
_TESTS = Path(__file__).resolve().parent


@lru_cache(maxsize=None)
def uses_tiny_pool(module: str) -> bool:
    """``module`` (a node id's path, relative to the repository) marks itself ``tiny_pool``."""
    path = _TESTS.parent / module
    return path.suffix == ".py" and path.is_file() and bool(_POOL_MARK.search(path.read_text()))


def unit_of(nodeid: str) -> str:
    module = nodeid.split("::", 1)[0]
    return POOL_UNIT if uses_tiny_pool(module) else module


class ModuleUnits(LoadFileScheduling):
    """xdist's per-file scheduling, with the tiny pool's modules in one unit."""

    def _split_scope(self, nodeid: str) -> str:
        return unit_of(nodeid)


def _kind(items: list) -> int:
    marks = {mark.name for item in items for mark in item.iter_markers()}
    return (0 if "tiny_pool" in marks else 1 if "vllm" in marks else 2 if "nbgrader" in marks
            else 3 if "long_unit" in marks else 4)


def order_for_workers(items: list) -> None:
    """Reorder ``items`` (identically on every worker) by unit kind, each unit's own order kept; fail when a
    test's ``tiny_pool`` mark and its module's source disagree (the controller would split the pool)."""
    units: dict[str, list] = {}
    for item in items:
        unit = unit_of(item.nodeid)
        if (item.get_closest_marker("tiny_pool") is not None) != (unit == POOL_UNIT):
            raise pytest.UsageError(f"{item.nodeid}: its tiny_pool mark and tests/xdist_units.py's reading of its "
                                    f"module disagree (write the mark as pytest.mark.tiny_pool(...) in the module)")
        units.setdefault(unit, []).append(item)
    items[:] = [item for unit in sorted(units.values(), key=lambda unit: (_kind(unit), -len(unit))) for item in unit]
