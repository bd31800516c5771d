"""Faults a real vLLM cannot be made to show, in a sweep: a group whose server does not answer fails its points
and leaves the other group's points, the sweep file and the point manifests intact."""

from __future__ import annotations

import json

import pytest

from backend_fixtures import Running, closed_port, fake_server

pytest.importorskip("aiohttp")


def test_a_dead_g1_fails_its_points_and_keeps_g0s(tmp_path):
    from tools.prefixbench.run.sweep import SWEEP_NAME, run_sweep

    workload = tmp_path / "w.jsonl"
    workload.write_text("".join(json.dumps({"id": f"r{i}", "prompt_token_ids": [10 + i] * 40, "max_tokens": 4})
                                + "\n" for i in range(4)))
    with fake_server(output_tokens=4) as g0:
        result = run_sweep(model="tiny", workload=str(workload), concurrencies=[1, 2], repeats=2,
                           ttft_slo_ms=1000.0, out=tmp_path / "out", progress=False, log=lambda _: None,
                           servers={"g0_cache_off": Running(g0.base_url),
                                    "g1_prefix_cache": Running(f"http://127.0.0.1:{closed_port()}")})
    assert result["status"] == "partial"
    saved = json.loads((tmp_path / "out" / SWEEP_NAME).read_text())
    assert saved["status"] == "partial" and len(saved["points"]) == 2
    for point in saved["points"]:
        g0, g1 = point["g0"], point["g1"]
        assert g0["status"] == "ok" and g0["metrics"]["ttft_ms"]["count"] == 8
        assert g0["metrics"]["goodput_per_s"] <= g0["metrics"]["request_throughput_per_s"]
        assert g0["hit_rate"] is None and g0["hit_rate_reason"]  # no /metrics on the fake: null with the reason
        assert g1["status"] == "failed" and "repeat 0" in g1["error"] and g1["hit_rate"] is None
        assert point["comparison"]["ttft_p50_gain_ms"]["estimate"] is None
        assert (tmp_path / "out" / "points" / f"69_prefix_cache_sweep_{point['load']['label']}_g0_cache_off.json"
                ).exists()
    assert saved["headline"]["g1"] is None and "G1 sustains no" in saved["headline"]["reason"]


def test_replica_server_timing_is_pooled_by_observation_count():
    from tools.prefixbench.run.replicas import _pooled_timing

    deltas = [{"server_timing_ms": {"tpot": {"name": "t", "count": 2, "mean_ms": 3.0}}},
              {"server_timing_ms": {"tpot": {"name": "t", "count": 6, "mean_ms": 1.0},
                                    "ttft": {"name": "f", "count": 0, "mean_ms": None}}}, None]
    assert _pooled_timing(deltas) == {"tpot": {"name": "t", "count": 8, "mean_ms": 1.5}}  # nothing observed: absent
