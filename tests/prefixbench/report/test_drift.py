"""The drift picture: both groups' TTFT against send time on one axis, and the share of the unpaired spread the
pairing removed, from a summary and its two manifests (and through ``g0g1`` on two fake servers)."""

from __future__ import annotations

import statistics

import pytest

from tools.prefixbench.decision.paired import paired_summary
from tools.prefixbench.report.drift import drift_data, headline, plot_drift


def _group(ttfts, sent, hit=None):
    rows = [{"id": f"r{i}", "status": "ok", "ttft_ms": t, "tpot_ms": 3.0, "e2e_ms": t + 100, "sent_at_s": s}
            for i, (t, s) in enumerate(zip(ttfts, sent))]
    return {"status": "ok", "group": {"name": "g"}, "requests": rows, "hit_rate": hit, "hit_rate_reason": None,
            "hit_rate_evidence": "backend_metrics" if hit is not None else "not_applicable",
            "aggregates": {"ttft_ms": {"p50": 1.0}, "tpot_ms": {"p50": 3.0}, "e2e_ms": {"p50": 1.0}}}


def _drifting():
    load = [1.0] * 5 + [3.0] * 5  # the load triples half-way
    g1 = _group([50 * x + i % 3 for i, x in enumerate(load)], [1.0 * i + 0.5 for i in range(10)], hit=0.7)
    g0 = _group([125 * x + i % 2 for i, x in enumerate(load)], [1.0 * i for i in range(10)])
    summary = {"config": {"schedule": {"schedule": "interleaved"}}, "paired_summary": paired_summary(g0, g1)}
    return summary, g0, g1


def test_both_groups_are_on_one_time_axis_and_the_spread_removed_is_stated():
    summary, g0, g1 = _drifting()
    data = drift_data(summary, g0, g1)
    assert data["g0"][0] == (0.0, 125.0) and data["g1"][-1] == (9.5, 150.0)
    paired = summary["paired_summary"]["paired"]["ttft_gain_ms"]
    # the load scales both groups, so it scales the differences too: pairing removes the shared part only
    assert data["spread_removed"] == paired["spread_removed"] > 0.3
    assert f"removed {paired['spread_removed']:.0%}" in data["headline"] and "interleaved" in data["headline"]
    assert data["pair_difference_sd_ms"] < 0.75 * statistics.pstdev(t for _, t in data["g0"])


def test_repeats_follow_one_another_and_a_missing_interval_says_why():
    summary, g0, g1 = _drifting()
    g0 = {**g0, "repeats": [{"requests": g0["requests"]}, {"requests": g0["requests"]}]}
    data = drift_data(summary, g0, None)
    assert len(data["g0"]) == 20 and data["g0"][10][0] > data["g0"][9][0] and data["g1"] == []
    assert headline({"estimate": None, "reason": "fewer than 2 requests"}, "sequential") == \
        "sequential: no paired interval (fewer than 2 requests)"
    assert "added" in headline({"estimate": 1.0, "spread_removed": -0.25, "ci_width": 5.0,
                                "unpaired_ci_width": 4.0}, "interleaved")


def test_the_plot_is_written_as_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    summary, g0, g1 = _drifting()
    path = plot_drift(summary, g0, g1, tmp_path / "drift.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    empty = plot_drift({}, None, None, tmp_path / "empty.png")
    assert empty.stat().st_size > 0
