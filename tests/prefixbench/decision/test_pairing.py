"""Paired G0 / G1 statistics: pairs by request id, the ideal bootstrap over blocks of pairs against the unpaired
interval (the exact condition under which pairing narrows it, both ways), the sign-flip test, the decision on the
paired interval, the engine clock as a second signal, and no accept without reuse."""

from __future__ import annotations

import random
import statistics

import pytest
from hypothesis import given, settings, strategies as st

from tools.prefixbench.decision import pairing
from tools.prefixbench.decision.pairing import ideal_bootstrap_variance, pair_covariance, pair_values, sign_flip_p_value
from tools.prefixbench.decision.paired import paired_summary


def paired_difference(*args, **kwargs):
    """The interval as the files hold it."""
    return pairing.paired_difference(*args, **kwargs).to_json()

pytestmark = pytest.mark.long_unit  # hypothesis over paired_summary's bootstrap: 15-20 s


def _manifest(values, *, hit=None, ids=None, server_ttft=None, status=None):
    rows = [{"id": (ids or [f"r{i}" for i in range(len(values))])[i], "index": i,
             "status": (status or {}).get(i, "ok"), "ttft_ms": v, "tpot_ms": 3.0, "e2e_ms": v + 200.0}
            for i, v in enumerate(values)]
    manifest = {"status": "ok", "error": None, "group": {"name": "g"}, "requests": rows, "hit_rate": hit,
                "hit_rate_evidence": "backend_metrics" if hit is not None else "not_applicable",
                "hit_rate_reason": None, "hit_tokens": None,
                "aggregates": {"ttft_ms": {"p50": sorted(values)[len(values) // 2]}, "tpot_ms": {"p50": 3.0},
                               "e2e_ms": {"p50": 1.0}, "throughput_tokens_per_s": 10.0, "error_count": 0},
                "memory": {}, "prediction": {}}
    if server_ttft is not None:
        manifest["backend_counters"] = {"server_timing_ms": {"ttft": {"mean_ms": server_ttft}}}
    return manifest


values = st.floats(min_value=0.0, max_value=2000.0, allow_nan=False, allow_infinity=False)
repeat = st.lists(st.tuples(values, values), min_size=2, max_size=12)
pair_data = st.lists(repeat, min_size=1, max_size=3)


@settings(max_examples=300, deadline=None)
@given(pair_data)
def test_the_paired_interval_is_never_wider_exactly_when_the_groups_covary_non_negatively(pairs):
    result = paired_difference(pairs, resamples=50, permutations=20)
    c = pair_covariance(pairs)
    # the identity behind the condition: paired variance = unpaired variance - 2 C / R
    assert result["se"] ** 2 == pytest.approx(result["unpaired_se"] ** 2 - 2 * c / len(pairs), rel=1e-9, abs=1e-6)
    scale = 1e-9 * (1 + result["unpaired_ci_width"])
    if c >= scale:
        assert result["ci_width"] <= result["unpaired_ci_width"] + scale
    elif c <= -scale:
        assert result["ci_width"] > result["unpaired_ci_width"]
    assert result["ci_low"] <= result["estimate"] <= result["ci_high"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(values, st.floats(0, 50), st.floats(0, 50)), min_size=2, max_size=20),
       st.floats(0, 300))
def test_a_load_shared_by_both_members_of_a_pair_never_widens_the_interval(loads, gain):
    """Back to back, both members see the same load: G0 = load + gain + e0, G1 = load + e1 with small noise."""
    pairs = [[(load + gain + e0, load + e1) for load, e0, e1 in loads]]
    result = paired_difference(pairs, resamples=50, permutations=20)
    if pair_covariance(pairs) >= 0:
        assert result["ci_width"] <= result["unpaired_ci_width"] * (1 + 1e-9) + 1e-9


def test_negatively_covarying_groups_make_the_paired_interval_wider_so_the_condition_is_needed():
    pairs = [[(100.0, 200.0), (110.0, 190.0), (200.0, 100.0), (190.0, 110.0), (120.0, 180.0), (130.0, 170.0)]]
    result = paired_difference(pairs)
    assert pair_covariance(pairs) < 0 and result["ci_width"] > result["unpaired_ci_width"]
    assert result["spread_removed"] < 0


def test_the_ideal_variance_matches_a_long_monte_carlo_bootstrap():
    blocks = [[1.0, 5.0, 9.0, 2.0], [20.0, 22.0, 30.0]]
    rng = random.Random(1)
    draws = []
    for _ in range(40000):
        chosen = rng.choices(blocks, k=len(blocks))
        draws.append(sum(sum(rng.choices(b, k=len(b))) / len(b) for b in chosen) / len(chosen))
    mean = sum(draws) / len(draws)
    monte_carlo = sum((d - mean) ** 2 for d in draws) / len(draws)
    assert ideal_bootstrap_variance(blocks) == pytest.approx(monte_carlo, rel=0.03)


def test_pairs_are_matched_by_request_id_and_a_request_failed_in_either_group_is_left_out():
    g0 = _manifest([300.0, 310.0, 320.0, 330.0], ids=["a", "b", "c", "d"])
    g1 = _manifest([130.0, 100.0, 110.0, 120.0], ids=["d", "a", "b", "c"], status={2: "error"})
    assert pair_values(g0, g1, "ttft_ms") == [[(300.0, 100.0), (320.0, 120.0), (330.0, 130.0)]]


def test_an_order_penalty_that_alternates_abba_cancels_inside_each_block():
    """The member sent second pays 100 ms more; ABBA alternates who that is, so each block of two pairs cancels it:
    the blocked interval is as narrow as without the penalty, the penalty only spreads the single pairs."""
    rng = random.Random(3)
    clean = [(300.0 + rng.gauss(0, 5), 100.0 + rng.gauss(0, 5)) for _ in range(20)]
    penalised = [(a, b + 100) if i % 2 == 0 else (a + 100, b) for i, (a, b) in enumerate(clean)]
    with_penalty, without = paired_difference([penalised]), paired_difference([clean])
    assert with_penalty["estimate"] == pytest.approx(without["estimate"])
    assert with_penalty["ci_width"] == pytest.approx(without["ci_width"])
    singles = statistics.pstdev(a - b for a, b in penalised)
    assert singles > 5 * statistics.pstdev(a - b for a, b in clean)


def test_too_few_pairs_give_no_interval_and_say_why():
    result = paired_difference([[(1.0, 2.0)]])
    assert result["estimate"] is None and "fewer than 2" in result["reason"]


def test_the_sign_flip_test_is_exact_for_few_pairs():
    assert sign_flip_p_value([[5.0, 6.0, 7.0, 8.0, 9.0]]) == pytest.approx(2 / 32)
    assert sign_flip_p_value([[1.0, -1.0, 2.0, -2.0]]) == 1.0
    noisy = [[random.Random(i).gauss(0, 10) for i in range(40)]]
    assert sign_flip_p_value(noisy) > 0.05
    assert sign_flip_p_value([[50.0 + random.Random(i).gauss(0, 10) for i in range(40)]]) < 0.001


ISSUE_G1 = [105, 103, 37, 36, 34, 32, 37, 370, 34, 301, 497, 529, 120, 55, 522, 475, 495, 542, 531, 57]
"""G1's client TTFT, request by request, from issue 21: the load rose half-way through."""


def test_a_load_change_that_hits_both_members_of_each_pair_is_decided_on_the_paired_interval():
    g1_values = [float(v) for v in ISSUE_G1]
    interleaved = [v * 2.4 + 20 for v in g1_values]  # the same load, cache off: slower by a factor, pair by pair
    rng = random.Random(0)
    calm = [230.0 + rng.gauss(0, 5) for _ in g1_values]  # sequential: G0 ran earlier, before the load rose
    for g0v, paired_ok in ((interleaved, True), (calm, False)):
        s = paired_summary(_manifest(g0v, server_ttft=170.0), _manifest(g1_values, hit=0.7, server_ttft=50.0))
        assert s["confidence"]["ttft_p50_gain_ms"]["includes_zero"] is True  # unpaired: cannot decide
        assert s["paired"]["ttft_gain_ms"]["includes_zero"] is (not paired_ok)
        assert s["decision"] == ("accept" if paired_ok else "tune"), s["reason"]
    assert s["server_ttft_signal"]["agreement"] == "client_unsure" and "engine" in s["reason"]


def test_a_disagreeing_engine_clock_is_named_in_the_reason():
    g0, g1 = _manifest([300.0, 310.0, 305.0, 320.0], server_ttft=40.0), _manifest(
        [100.0, 110.0, 101.0, 99.0], hit=0.7, server_ttft=90.0)
    s = paired_summary(g0, g1)
    assert s["decision"] == "accept" and s["server_ttft_signal"]["agreement"] == "disagree"
    assert "client and engine disagree" in s["reason"] and "40.0 -> 90.0 ms" in s["reason"]
    agreeing = paired_summary(_manifest([300.0, 310.0, 305.0, 320.0], server_ttft=200.0), g1)
    assert agreeing["server_ttft_signal"]["agreement"] == "agree" and "engine" not in agreeing["reason"]


@settings(max_examples=100, deadline=None)
@given(st.lists(values, min_size=2, max_size=15), st.floats(0, 1000), st.floats(0.0, 1.0))
def test_a_workload_with_no_shared_prefix_is_never_accepted(g1_values, gain, min_hit_rate):
    """Hit rate 0 in G1, whatever the TTFT gain and even with --min-hit-rate 0."""
    g0 = _manifest([v + gain for v in g1_values])
    s = paired_summary(g0, _manifest(g1_values, hit=0.0), min_hit_rate=min_hit_rate)
    assert s["decision"] != "accept" and s["checks"]["reuse_measured"] is False
    if s["checks"]["ttft_gain_stable"] or min_hit_rate > 0:
        assert s["decision"] == "reject"
    else:
        assert s["reason"].startswith("gain not stable")
