"""Summary, comparison and accept / tune / reject: the seed's contract, strict about missing input."""

import math

import pytest

from tools.prefixbench import (
    InputError,
    compare_prefix_cache_to_baseline,
    recommend_prefix_cache_run,
    summarize_prefix_cache,
)

BASE = {"name": "baseline", "hit_rate": 0.0, "ttft_ms": 130, "overhead": 0.0}
CAND = {"name": "cache", "hit_rate": 0.68, "ttft_ms": 92, "overhead": 0.08}


def test_seed_visible_expectations():
    s = summarize_prefix_cache([BASE, CAND])
    assert s == {"run_count": 2, "avg_hit_rate": 0.34, "avg_ttft_ms": 111.0, "best_hit_rate_run": "cache"}
    c = compare_prefix_cache_to_baseline(BASE, CAND)
    assert (c["hit_rate_gain"], c["ttft_delta_ms"], c["overhead_delta"]) == (0.68, -38, 0.08)
    d = recommend_prefix_cache_run(BASE, CAND, min_hit_rate=0.5, max_overhead=0.1)
    assert (d["decision"], d["next_action"]) == ("accept", "promote_to_serving_eval")
    assert "0.680" in d["reason"]


def test_empty_summary_is_empty_not_zero():
    assert summarize_prefix_cache([]) == {
        "run_count": 0, "avg_hit_rate": None, "avg_ttft_ms": None, "best_hit_rate_run": None}


def test_best_run_ties_keep_the_first():
    runs = [dict(BASE, name="a", hit_rate=0.5), dict(BASE, name="b", hit_rate=0.5)]
    assert summarize_prefix_cache(runs)["best_hit_rate_run"] == "a"


@pytest.mark.parametrize("missing", ["hit_rate", "ttft_ms"])
def test_summary_refuses_missing_metrics(missing):
    run = {k: v for k, v in CAND.items() if k != missing}
    with pytest.raises(InputError, match=rf"runs\[1\]\.{missing}: is missing"):
        summarize_prefix_cache([BASE, run])
    with pytest.raises(InputError, match=rf"runs\[0\]\.{missing}: is missing"):
        summarize_prefix_cache([dict(CAND, **{missing: None})])


def test_delta_signs():
    worse = dict(CAND, hit_rate=0.1, ttft_ms=150, overhead=0.02)
    c = compare_prefix_cache_to_baseline(dict(BASE, hit_rate=0.3, overhead=0.05), worse)
    assert c["hit_rate_gain"] == pytest.approx(-0.2)
    assert c["ttft_delta_ms"] == 20
    assert c["overhead_delta"] == pytest.approx(-0.03)


@pytest.mark.parametrize("who, key", [("baseline", "overhead"), ("candidate", "hit_rate"), ("candidate", "ttft_ms")])
def test_compare_refuses_missing_metric(who, key):
    runs = {"baseline": dict(BASE), "candidate": dict(CAND)}
    del runs[who][key]
    with pytest.raises(InputError, match=rf"{who}\.{key}"):
        compare_prefix_cache_to_baseline(runs["baseline"], runs["candidate"])


def test_compare_refuses_different_workloads():
    with pytest.raises(InputError, match="workload_id"):
        compare_prefix_cache_to_baseline(dict(BASE, workload_id="w1"), dict(CAND, workload_id="w2"))
    with pytest.raises(InputError, match="workload_id"):
        compare_prefix_cache_to_baseline(dict(BASE, workload_id="w1"), CAND)
    same = compare_prefix_cache_to_baseline(dict(BASE, workload_id="w1"), dict(CAND, workload_id="w1"))
    assert same["hit_rate_gain"] == 0.68


def test_compare_refuses_mixed_hit_rate_units():
    with pytest.raises(InputError, match="hit_rate_unit"):
        compare_prefix_cache_to_baseline(dict(BASE, hit_rate_unit="token"), dict(CAND, hit_rate_unit="block"))


def test_ttft_alone_never_accepts():
    low_hit = dict(CAND, hit_rate=0.2, ttft_ms=10)
    d = recommend_prefix_cache_run(BASE, low_hit, min_hit_rate=0.5, max_overhead=0.1)
    assert (d["decision"], d["next_action"]) == ("reject", "fallback_to_no_cache")
    assert d["checks"] == {"hit_rate_ok": False, "ttft_improved": True, "overhead_ok": True}


def test_high_overhead_means_tune():
    d = recommend_prefix_cache_run(BASE, dict(CAND, overhead=0.3), min_hit_rate=0.5, max_overhead=0.1)
    assert (d["decision"], d["next_action"]) == ("tune", "refine_chunk_or_eviction_policy")


def test_no_ttft_gain_means_reject():
    d = recommend_prefix_cache_run(BASE, dict(CAND, ttft_ms=130), min_hit_rate=0.5, max_overhead=0.1)
    assert d["decision"] == "reject" and "no TTFT gain" in d["reason"]


@pytest.mark.parametrize("min_hit, max_over, field", [
    (-0.1, 0.1, "min_hit_rate"), (1.5, 0.1, "min_hit_rate"), (math.nan, 0.1, "min_hit_rate"),
    (None, 0.1, "min_hit_rate"), ("0.5", 0.1, "min_hit_rate"), (True, 0.1, "min_hit_rate"),
    (0.5, -0.01, "max_overhead"), (0.5, math.inf, "max_overhead"), (0.5, None, "max_overhead"),
])
def test_thresholds_are_checked(min_hit, max_over, field):
    with pytest.raises(InputError) as err:
        recommend_prefix_cache_run(BASE, CAND, min_hit, max_over)
    assert err.value.field == field


@pytest.mark.parametrize("bad", [None, [], "run", 3])
def test_non_dict_runs_are_refused(bad):
    with pytest.raises(InputError):
        compare_prefix_cache_to_baseline(bad, CAND)


def test_hit_rate_out_of_range_is_refused():
    with pytest.raises(InputError, match=r"candidate\.hit_rate"):
        compare_prefix_cache_to_baseline(BASE, dict(CAND, hit_rate=68))
