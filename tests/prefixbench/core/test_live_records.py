"""The records of a measured phase (``core.live_records``) write the JSON the files always held and read it back:
every section of the live golden files survives ``from_json`` then ``to_json`` unchanged."""

import json
from pathlib import Path

import pytest

from tools.prefixbench.core.attribution_records import Attribution, AttributionSummary
from tools.prefixbench.core.live_records import CounterDelta, Evidence, HitRates, Prediction, Speedup
from tools.prefixbench.core.live_results import LatencyCheck, LiveResult, Verdict
from tools.prefixbench.evidence import measure_hit_rate
from tools.prefixbench.simulate.predict import RunConditions, judged, predict_pool

GOLDEN = Path(__file__).parents[1] / "run" / "golden"
LIVE = ["hitrate", "hitrate_kv_blocks", "hitrate_replicas", "isolation", "replay", "sessions"]


@pytest.mark.parametrize("case", LIVE)
def test_every_golden_section_reads_back_into_its_record_and_writes_the_same_json(case):
    result = json.loads((GOLDEN / f"{case}.json").read_text())["result"]
    predictions = [result["prediction"]] + [r["prediction"] for r in result.get("replicas") or []]
    for prediction in predictions:
        assert Prediction.from_json(prediction).to_json() == prediction
    assert HitRates.from_json(result["hit_rates"]).to_json() == result["hit_rates"]
    if "measured" in result:
        assert Evidence.from_json(result["measured"]).to_json() == result["measured"]
    if result.get("attribution"):
        summary = result["attribution"]["summary"]
        assert AttributionSummary.from_json(summary).to_json() == summary
        assert Attribution.from_json(result["attribution"]).to_json() == result["attribution"]
    if "speedup" in result:
        assert Speedup.from_json(result["speedup"]).to_json() == result["speedup"]
    if "rules" in result["verdict"]:  # decision.verdict's (isolation writes its own)
        assert Verdict.from_json(result["verdict"]).to_json() == result["verdict"]


def test_a_verdict_with_nothing_measured_writes_verdict_reasons_and_rules_only():
    unmeasured = Verdict("UNKNOWN", ["interrupted during measure"], rules="the rules")
    assert list(unmeasured.to_json()) == ["verdict", "reasons", "rules"]
    judged = Verdict("GOOD", ["within 0.1 points"], "predicted", 0.1, (LatencyCheck("TTFT p50 <= 5 ms", 4.0, True),),
                     "the rules")
    assert list(judged.to_json()) == ["verdict", "reference", "gap_points", "reasons", "latency_checks", "rules"]
    assert Verdict.from_json(judged.to_json()) == judged and Verdict.from_json(unmeasured.to_json()) == unmeasured


def test_a_speedup_with_a_baseline_writes_the_files_keys_in_order_and_reads_back():
    """The bound is ttft_speedup_bound in code (as in the paired summary), theoretical_prefill_speedup in the file."""
    with_baseline = Speedup(2.0, "1 / (1 - h)", measured_ttft_speedup=1.5, baseline_ttft_p50_ms=30.0, ttft_p50_ms=20.0,
                            baseline_ttft_ms=[30.0, 31.0], baseline_workload_id="w1", warning="another workload")
    data = with_baseline.to_json()
    assert list(data) == ["theoretical_prefill_speedup", "definition", "baseline_ttft_p50_ms", "ttft_p50_ms",
                          "baseline_ttft_ms", "measured_ttft_speedup", "baseline_workload_id", "warning"]
    assert data["theoretical_prefill_speedup"] == 2.0 and Speedup.from_json(data) == with_baseline
    assert "warning" not in Speedup(2.0, "d", 1.5, baseline_workload_id="w1").to_json()
    assert Speedup.from_json(None) is None


def test_a_prediction_writes_its_keys_in_the_files_order():
    prediction, _ = predict_pool([[1, 2, 3, 4, 5], [1, 2, 3, 4, 6]], 4, None)
    judged_one = judged(prediction, RunConditions(overlapping=False), 4, 10)
    assert list(judged_one.to_json()) == [
        "predicted_hit_tokens", "predicted_query_tokens", "predicted_hit_rate", "per_request_hit_tokens",
        "block_size", "capacity_blocks", "policy", "last_token_rule", "simulated_warmup_prompts",
        "predicted_evictions", "in_phase_reuse_tokens", "engine_model", "exact_expected", "caveats",
        "measured_hit_tokens", "difference_tokens", "matches_measured"]
    assert judged_one.matches_measured and judged_one.exact_expected
    assert list(Prediction.unpredicted("why").to_json()) == [
        "predicted_hit_rate", "predicted_hit_tokens", "exact_expected", "reason"]


def test_null_keys_of_a_loaded_prediction_take_their_defaults():
    loaded = Prediction.from_json({"predicted_hit_tokens": 4, "predicted_query_tokens": 8, "caveats": None,
                                   "exact_expected": None, "engine_model": None})
    assert loaded.caveats == [] and loaded.exact_expected is False and loaded.engine_model is None


def test_evidence_writes_the_counter_fields_then_the_usage():
    delta = {"problems": [], "counters": {"hits": {"total": 3}, "queries": {"total": 4}}}
    found = measure_hit_rate(delta, caching_enabled=True, usage_cached_tokens=[3], usage_prompt_tokens=[4])
    assert list(found.to_json()) == ["hit_rate", "hit_rate_evidence", "hit_rate_reason", "hit_tokens",
                                     "query_tokens", "usage"]
    assert found.hit_rate == 0.75 and CounterDelta.of(delta).usable and not CounterDelta.of(None).usable


def test_a_result_without_sections_loads_with_nothing_measured():
    loaded = LiveResult.from_json({"status": "failed", "config": {}}, reset_missing="n/a")
    assert loaded.reset_status == "n/a" and loaded.verdict.verdict == "UNKNOWN"
    assert loaded.prediction is None and loaded.hit_rates is None and loaded.attribution is None
    assert loaded.part("cost") == {} and loaded.rows("per_turn") == []
