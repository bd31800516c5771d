"""Bootstrap intervals over requests and repeats, and the rule that a gain the data cannot tell from noise is
never accepted."""

from __future__ import annotations

import random
import statistics

import pytest
from hypothesis import given, settings, strategies as st

from tools.prefixbench.decision import confidence
from tools.prefixbench.decision.confidence import UNSTABLE, p50, recommend_with_confidence
from tools.prefixbench.measure.client import stats_of


def bootstrap_difference(*args, **kwargs):
    """The interval as the files hold it."""
    return confidence.bootstrap_difference(*args, **kwargs).to_json()


def differences(*args, **kwargs):
    return confidence.differences(*args, **kwargs).to_json()


BASE = {"name": "g0", "hit_rate": 0.0, "overhead": 0.0, "hit_rate_unit": "token"}


def _noisy(rng: random.Random, centre: float, n: int, spread: float = 10.0) -> list[float]:
    return [rng.gauss(centre, spread) for _ in range(n)]


def _verdict(ttft_gain, hit=0.7, ttft0=100.0, ttft1=60.0, overhead=0.0):
    return recommend_with_confidence({**BASE, "ttft_ms": ttft0},
                                     {"name": "g1", "hit_rate": hit, "ttft_ms": ttft1, "overhead": overhead,
                                      "hit_rate_unit": "token"}, 0.5, 0.1, ttft_gain)


def test_a_clear_gain_has_an_interval_above_zero_and_is_accepted():
    rng = random.Random(1)
    g0 = [_noisy(rng, 100, 20), _noisy(rng, 100, 20)]
    g1 = [_noisy(rng, 50, 20), _noisy(rng, 50, 20)]
    gain = bootstrap_difference(g0, g1)
    assert gain["ci_low"] > 0 and gain["includes_zero"] is False
    assert gain["ci_low"] <= gain["estimate"] <= gain["ci_high"]
    assert gain["estimate"] == pytest.approx(p50(g0[0] + g0[1]) - p50(g1[0] + g1[1]))
    assert 30 < gain["estimate"] < 70
    assert _verdict(gain)["decision"] == "accept"


def test_noise_is_never_accepted_and_an_interval_with_zero_says_gain_not_stable():
    accepted = 0
    for seed in range(60):
        rng = random.Random(seed)
        g0 = [_noisy(rng, 80, 12), _noisy(rng, 80, 12)]
        g1 = [_noisy(rng, 80, 12), _noisy(rng, 80, 12)]
        gain = bootstrap_difference(g0, g1, resamples=400, seed=seed)
        verdict = _verdict(gain, ttft0=p50(g0[0] + g0[1]), ttft1=p50(g1[0] + g1[1]))
        if gain["includes_zero"]:
            assert verdict["decision"] == "tune" and verdict["reason"].startswith(UNSTABLE)
            assert verdict["checks"]["ttft_gain_stable"] is False
        accepted += verdict["decision"] == "accept"
    assert accepted <= 6, f"{accepted} of 60 noise datasets accepted (a 95% interval allows about 1.5)"


def test_run_to_run_variation_widens_the_interval():
    """Repeats that disagree make a difference unstable that the same requests pooled into one run would not."""
    rng = random.Random(3)
    g0 = [_noisy(rng, 100, 15, 3) for _ in range(3)]
    g1 = [_noisy(rng, 60, 15, 3), _noisy(rng, 60, 15, 3), _noisy(rng, 110, 15, 3)]  # one G1 run slower than G0
    by_repeat = bootstrap_difference(g0, g1)
    as_one_run = bootstrap_difference([sum(g0, [])], [sum(g1, [])])
    assert by_repeat["includes_zero"] is True
    assert as_one_run["includes_zero"] is False
    assert (by_repeat["ci_high"] - by_repeat["ci_low"]) > (as_one_run["ci_high"] - as_one_run["ci_low"])


def test_too_little_data_has_no_interval_and_is_not_accepted():
    gain = bootstrap_difference([[100.0]], [[50.0]])
    assert gain["estimate"] is None and gain["includes_zero"] is None and "fewer than 2" in gain["reason"]
    verdict = _verdict(gain)
    assert verdict["decision"] == "tune" and UNSTABLE in verdict["reason"] and "fewer than 2" in verdict["reason"]
    assert _verdict(None)["decision"] == "tune"


def test_a_low_hit_rate_stays_reject_whatever_the_interval():
    rng = random.Random(4)
    gain = bootstrap_difference([_noisy(rng, 100, 20)], [_noisy(rng, 50, 20)])
    assert gain["includes_zero"] is False
    assert _verdict(gain, hit=0.1)["decision"] == "reject"


def test_a_stable_loss_is_reject_not_tune():
    rng = random.Random(5)
    gain = bootstrap_difference([_noisy(rng, 50, 20)], [_noisy(rng, 100, 20)])
    assert gain["ci_high"] < 0
    assert _verdict(gain, ttft0=50.0, ttft1=100.0)["decision"] == "reject"


def _manifest(repeats):
    return {"repeats": [{"requests": [{"status": "ok", "ttft_ms": t, "tpot_ms": 2.0} for t in rep]
                                     + [{"status": "error", "ttft_ms": None}],
                         "aggregates": {"throughput_tokens_per_s": 100.0 + len(rep)}} for rep in repeats]}


def test_differences_read_every_repeat_and_name_what_cannot_be_bounded():
    rng = random.Random(6)
    g0 = _manifest([_noisy(rng, 100, 10), _noisy(rng, 100, 12)])
    g1 = _manifest([_noisy(rng, 40, 10), _noisy(rng, 40, 12)])
    result = differences(g0, g1, resamples=300)
    ttft = result["ttft_p50_gain_ms"]
    assert (ttft["g0_values"], ttft["g0_repeats"]) == (22, 2)  # failed rows are left out
    assert ttft["ci_low"] > 0
    assert result["tpot_p50_gain_ms"]["estimate"] == 0
    assert result["throughput_gain_tokens_per_s"]["estimate"] == 0
    one = differences({"requests": g0["repeats"][0]["requests"], "aggregates": {"throughput_tokens_per_s": 1.0}},
                      {"requests": g1["repeats"][0]["requests"], "aggregates": {"throughput_tokens_per_s": 2.0}})
    assert one["throughput_gain_tokens_per_s"]["estimate"] is None
    assert "one number per run" in one["throughput_gain_tokens_per_s"]["reason"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=2, max_size=60))
def test_p50_is_the_inclusive_quantiles_50th_cut_point_bit_for_bit(values):
    """The bootstrap's one-cut-point median and the aggregates' p90 / p99 equal ``statistics.quantiles`` exactly,
    not nearly."""
    cuts = statistics.quantiles([float(v) for v in values], n=100, method="inclusive")
    assert p50(values) == cuts[49]
    assert p50(list(reversed(values))) == p50(values)
    stats = stats_of(values)
    assert (stats.p50, stats.p90, stats.p99) == (cuts[49], cuts[89], cuts[98])
