"""Goodput, per-point metrics over repeats and the sweep's headline, on hand-made runs."""

from __future__ import annotations

import pytest

from tools.prefixbench.core.errors import InputError
from tools.prefixbench.core.sweep_records import SweepPoint
from tools.prefixbench.decision import sweep

ATTAINMENT, NO_SLO, meets_slo = sweep.ATTAINMENT, sweep.NO_SLO, sweep.meets_slo


def goodput(*args):
    return sweep.goodput(*args).to_json()


def point_metrics(manifest, slo):
    return sweep.point_metrics(manifest, slo).to_json()


def headline(points, slo):
    """The headline of points written as the sweep file holds them, read back through their record."""
    return sweep.headline([SweepPoint.from_json(p) for p in points], slo).to_json()

pytest.importorskip("aiohttp")


def _row(ttft, tpot=1.0, status="ok"):
    return {"status": status, "ttft_ms": ttft, "tpot_ms": tpot, "e2e_ms": (ttft or 0) + 10}


def test_goodput_counts_requests_within_every_slo_like_vllm_bench():
    rows = [_row(10), _row(30), _row(10, tpot=9.0), _row(10, tpot=None), _row(None, status="error")]
    assert [meets_slo(r, 20.0, 5.0) for r in rows] == [True, False, False, True, False]  # one token: TPOT 0
    result = goodput(rows, 2.0, 20.0, 5.0)
    assert result == {"goodput_per_s": 1.0, "good_requests": 2, "slo_attainment": 0.4, "goodput_reason": None}
    assert goodput(rows, 2.0, None, None)["goodput_per_s"] is None
    assert goodput(rows, 2.0, None, None)["goodput_reason"] == NO_SLO


def _run(ttfts, duration=1.0, hit=None, evidence="backend_metrics", status="ok"):
    rows = [_row(t) for t in ttfts]
    return {"status": status, "requests": rows, "hit_rate_evidence": evidence, "hit_rate_reason": None,
            "hit_tokens": hit, "query_tokens": 100 if hit is not None else None, "hit_rate": hit and hit / 100,
            "aggregates": {"duration_s": duration, "request_throughput_per_s": len(rows) / duration,
                           "throughput_tokens_per_s": 8 * len(rows) / duration,
                           "ttft_ms": {"p90": max(ttfts)}, "itl_ms": {"p50": 1.0, "p90": 2.0, "p99": 3.0, "mean": 1.5}},
            "prediction": {"predicted_hit_tokens": hit, "exact_expected": True, "matches_measured": True}}


def test_point_metrics_pool_requests_and_average_runs():
    manifest = {"status": "ok", "repeats": [_run([10, 20, 30, 40], 2.0, hit=40), _run([10, 60], 1.0, hit=50)]}
    point = point_metrics(manifest, {"ttft_slo_ms": 35.0, "tpot_slo_ms": None})
    m = point["metrics"]
    assert m["ttft_ms"]["count"] == 6 and m["ttft_ms"]["p50"] == 25.0
    assert m["request_throughput_per_s"] == 2.0  # (4/2 + 2/1) / 2
    assert m["goodput_per_s"] == pytest.approx((3 / 2 + 1 / 1) / 2)
    assert m["slo_attainment"] == pytest.approx(4 / 6)
    assert m["ttft_p90_ms_over_repeats"] == {"mean": 50.0, "min": 40, "max": 60}
    assert (point["hit_tokens"], point["query_tokens"], point["hit_rate"]) == (90, 200, 0.45)
    g0 = point_metrics({"status": "ok", "repeats": [_run([10], evidence="not_applicable")] * 2},
                       {"ttft_slo_ms": 35.0})
    assert g0["hit_rate"] is None and g0["hit_rate_evidence"] == "not_applicable"


def _point(value, attain0, attain1, good0=1.0, good1=2.0, status1="ok"):
    def side(attain, good, status):
        return {"status": status, "metrics": {"slo_attainment": attain, "goodput_per_s": good,
                                              "request_throughput_per_s": good * 1.2}}

    return {"load": {"kind": "concurrency", "value": value}, "g0": side(attain0, good0, "ok"),
            "g1": side(attain1, good1, status1)}


def test_headline_is_the_leading_run_of_sustained_points():
    slo = {"ttft_slo_ms": 100.0, "tpot_slo_ms": None}
    points = [_point(1, 1.0, 1.0, 1.0, 1.5), _point(2, 0.5, 0.95, 1.2, 2.5), _point(4, 0.95, 0.5, 3.0, 2.0)]
    h = headline(points, slo)
    assert h["g0"]["load"]["value"] == 1  # the lucky point at 4 after a failing one does not count
    assert h["g1"]["load"]["value"] == 2 and not h["g1"]["at_highest_load_swept"]
    assert h["capacity_gain"] == pytest.approx(2.5 / 1.0)
    assert h["g0_goodput_at_g1_limit_per_s"] == 1.2 and h["goodput_ratio_at_g1_limit"] == pytest.approx(2.5 / 1.2)
    assert h["attainment_required"] == ATTAINMENT
    none = headline([_point(1, 0.2, 0.95)], slo)
    assert none["g0"] is None and none["capacity_gain"] is None and "G0 sustains no" in none["reason"]
    assert none["goodput_ratio_at_g1_limit"] == 2.0  # G0's goodput where G1 reaches its limit: 1.0
    failed = headline([_point(1, 1.0, 1.0, status1="failed")], slo)
    assert failed["g1"] is None
    assert headline(points, {"ttft_slo_ms": None, "tpot_slo_ms": None})["status"] == "no_slo"


def test_load_points_are_checked():
    from tools.prefixbench.run.sweep import load_points

    assert [p.to_json()["label"] for p in load_points([1, 2, 8], None, 10)] == ["c1", "c2", "c8"]
    rates = [p.to_json() for p in load_points(None, [0.5, 2.0], 10)]
    assert [(p["request_rate"], p["concurrency"]) for p in rates] == [(0.5, 10), (2.0, 10)]
    for concurrencies, rates, field in (([2, 2], None, "concurrency"), (None, None, "concurrency"),
                                        ([1], [1.0], "concurrency"), ([], None, "concurrency"),
                                        (None, [0.0], "request_rates[0]")):
        with pytest.raises(InputError) as err:
            load_points(concurrencies, rates, 10)
        assert err.value.field == field
