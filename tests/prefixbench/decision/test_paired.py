"""The G0 / G1 paired summary: the library decision, the bound, the overhead's source, no decision without evidence."""

from __future__ import annotations


import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("prometheus_client")


from tools.prefixbench.decision import recommend_prefix_cache_run  # noqa: E402
from tools.prefixbench.decision.paired import OVERHEAD_DEFINITION, paired_summary  # noqa: E402


def _group(status="ok", hit=None, evidence="backend_metrics", ttft=100.0, tpot=2.0, server_tpot=None, rows=True):
    manifest = {"requests": [{"status": "ok", "ttft_ms": ttft + d, "tpot_ms": tpot} for d in (-2, -1, 0, 1, 2)]
                if rows else [], "status": status, "error": None if status == "ok" else "server died", "group": {"name": "g"},
                "hit_rate": hit, "hit_rate_evidence": evidence, "hit_rate_reason": None, "hit_tokens": None,
                "aggregates": {"ttft_ms": {"p50": ttft}, "tpot_ms": {"p50": tpot}, "e2e_ms": {"p50": 1.0},
                               "throughput_tokens_per_s": 10.0, "error_count": 0},
                "memory": {"peak_memory_mib": 1.0, "source": "process_tree_rss"}, "prediction": {}}
    if server_tpot is not None:
        manifest["backend_counters"] = {"server_timing_ms": {"tpot": {"mean_ms": server_tpot}}}
    return manifest


def test_paired_summary_uses_the_library_decision_and_the_bound():
    g0 = _group(hit=None, evidence="not_applicable", ttft=300.0, tpot=2.0)
    g1 = _group(hit=0.7, ttft=90.0, tpot=2.1)
    summary = paired_summary(g0, g1, min_hit_rate=0.5, max_overhead=0.1)
    expected = recommend_prefix_cache_run({"hit_rate": 0.0, "ttft_ms": 300.0, "overhead": 0.0},
                                          {"hit_rate": 0.7, "ttft_ms": 90.0, "overhead": 2.1 / 2.0 - 1}, 0.5, 0.1)
    assert summary["decision"] == expected["decision"] == "accept"
    assert summary["ttft_speedup_bound"] == pytest.approx(1 / 0.3)
    assert summary["ttft_speedup"] == pytest.approx(300 / 90)
    assert summary["overhead"]["definition"] == OVERHEAD_DEFINITION
    assert summary["overhead"]["source"] == "client_tpot_p50"
    assert "0 by construction" in summary["decision_inputs"]["baseline_hit_rate_basis"]


def test_paired_summary_prefers_server_tpot_for_overhead():
    summary = paired_summary(_group(ttft=300.0, tpot=2.0, server_tpot=2.0),
                             _group(hit=0.7, ttft=90.0, tpot=2.0, server_tpot=3.0))
    assert summary["overhead"]["source"] == "server_tpot_mean"
    assert summary["overhead"]["g1"] == pytest.approx(0.5)
    assert summary["decision"] == "tune"


def test_paired_summary_without_evidence_or_with_a_failure_does_not_decide_from_ttft():
    no_evidence = paired_summary(_group(ttft=300.0), _group(hit=None, evidence="backend_metrics_or_logs_required",
                                                            ttft=50.0))
    assert no_evidence["decision"] == "tune" and "no backend hit-rate evidence" in no_evidence["reason"]
    assert no_evidence["hit_rate"] is None and no_evidence["ttft_speedup_bound"] is None
    failed = paired_summary(_group(), _group(status="failed", hit=0.7))
    assert failed["status"] == "failed" and failed["decision"] is None and "server died" in failed["reason"]
    not_run = paired_summary(_group(), None)
    assert not_run["status"] == "failed" and "did not run" in not_run["reason"]


def test_paired_summary_without_per_request_ttft_does_not_accept():
    summary = paired_summary(_group(ttft=300.0, rows=False), _group(hit=0.7, ttft=90.0, tpot=2.0, rows=False))
    assert summary["confidence"]["ttft_p50_gain_ms"]["estimate"] is None
    assert summary["decision"] == "tune" and summary["reason"].startswith("gain not stable")


def test_paired_summary_pools_the_repeats():
    def repeated(ttfts_per_repeat, hit):
        runs = [{"requests": [{"status": "ok", "ttft_ms": t, "tpot_ms": 2.0} for t in ttfts],
                 "aggregates": {"throughput_tokens_per_s": 10.0}} for ttfts in ttfts_per_repeat]
        return {**_group(hit=hit, ttft=ttfts_per_repeat[0][0]), "repeats": runs}

    g0 = repeated([[300.0, 310.0, 305.0], [290.0, 295.0, 300.0]], None)
    g1 = repeated([[90.0, 95.0, 92.0], [99.0, 100.0, 97.0]], 0.7)
    summary = paired_summary(g0, g1)
    assert summary["g0_ttft_p50_ms"] == 300.0 and summary["g1_ttft_p50_ms"] == 96.0  # over all six requests
    assert summary["repeats"] == {"g0": 2, "g1": 2}
    gain = summary["confidence"]["ttft_p50_gain_ms"]
    assert gain["g1_repeats"] == 2 and gain["estimate"] == 204.0 and gain["ci_low"] > 0
    assert summary["decision"] == "accept" and summary["checks"]["ttft_gain_stable"] is True
