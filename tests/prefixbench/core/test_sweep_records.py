"""The sweep's records: what ``decision.sweep`` builds is written and read back through the same types, key for
key, and a reader takes what a damaged or partial file holds."""

from __future__ import annotations

import json

from tools.prefixbench.core.paths import REPO_ROOT
from tools.prefixbench.core.sweep_records import LoadPoint, SweepHeadline, SweepPoint, points_of
from tools.prefixbench.decision.sweep import headline, point_metrics
from tools.prefixbench.report.sweep import plot_sweep, sweep_rows

EXAMPLE = REPO_ROOT / "benchmarks" / "results" / "examples" / "cpu_small"
SLO = {"ttft_slo_ms": 400.0, "tpot_slo_ms": None}


def _sweep() -> list[SweepPoint]:
    g0 = json.loads((EXAMPLE / "69_prefix_cache_g0_cache_off.json").read_text())
    g1 = json.loads((EXAMPLE / "69_prefix_cache_g1_prefix_cache.json").read_text())
    return [SweepPoint(LoadPoint(f"c{c}", "concurrency", c, c, None), point_metrics(g0, SLO), point_metrics(g1, SLO))
            for c in (1, 2)]


def test_a_sweep_of_real_manifests_reads_back_key_for_key():
    points = _sweep()
    written = json.dumps({"points": [p.to_json() for p in points], "headline": headline(points, SLO).to_json()})
    data = json.loads(written)
    again = json.dumps({"points": [p.to_json() for p in points_of(data)],
                        "headline": SweepHeadline.from_json(data["headline"]).to_json()})
    assert again == written
    assert points_of(data) == points  # every number, every repeat's summary
    h = SweepHeadline.from_json(data["headline"])
    assert h.g1 is not None and h.g1.load.label == "c2" and h.g1.at_highest_load_swept
    assert data["points"][0]["g1"]["hit_rate_evidence"] == "backend_metrics"  # the pooled hit rate, inline


def test_without_an_slo_the_headline_writes_only_its_reason():
    assert list(headline(_sweep(), {"ttft_slo_ms": None, "tpot_slo_ms": None}).to_json()) == \
        ["status", "reason", "g0", "g1", "capacity_gain"]


def test_a_partial_file_reads_as_missing_and_still_renders():
    data = {"points": [{"load": {"kind": "concurrency", "value": 1},
                        "g1": {"status": "ok", "metrics": {"request_throughput_per_s": 2.0,
                                                           "request_throughput_over_repeats": {"mean": 2.0}}}},
                       "not a point"]}
    points = points_of(data)
    assert points[0].g0 is None and points[0].g1 is not None and points[0].g1.metrics.ttft_ms is None
    assert points[1] == SweepPoint(LoadPoint.from_json(None))
    assert sweep_rows({"points": data["points"][:1]}) == [["concurrency 1"] + ["n/a"] * 2 + ["n/a", "2.000"] + ["n/a"] * 4]
    assert points_of({"points": "nope"}) == [] and points_of(None) == []


def test_a_point_without_a_ttft_spread_is_left_out_of_the_plot_not_a_failure(tmp_path):
    points = _sweep()
    data = json.loads(json.dumps({"points": [p.to_json() for p in points]}))
    data["points"][0]["g1"]["metrics"]["ttft_p90_ms_over_repeats"] = {"mean": None, "min": None, "max": None}
    png = plot_sweep(data, tmp_path / "sweep.png")
    assert png is not None and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
