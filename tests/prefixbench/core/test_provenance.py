"""Provenance recorded in every result: the backend and the machine."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("prometheus_client")




def test_environment_snapshot_names_the_backend():
    from tools.inference_project_runtime import runtime_snapshot

    snap = runtime_snapshot()
    assert snap["backend"]["kind"] in {"cpu", "gpu", "none"}
    assert snap["python"] and snap["cpu_count"] >= 1
    assert math.isfinite(snap["memory_total_gib"])
