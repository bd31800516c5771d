"""The paired summary's records (``core.paired_records``): ``summarize`` builds them, ``to_json`` writes the keys
the summary files have always had, in their order, and ``from_json`` reads a written summary back to an equal
record."""

from __future__ import annotations

import json

import pytest

from tools.prefixbench.core.paired_records import Decision, Overhead, PairedSummary, ServerSignal
from tools.prefixbench.decision.paired import paired_summary, summarize

SIDE_KEYS = ["g0_ttft_p50_ms", "g1_ttft_p50_ms", "g0_tpot_p50_ms", "g1_tpot_p50_ms", "g0_e2e_p50_ms",
             "g1_e2e_p50_ms", "g0_server_ttft_mean_ms", "g1_server_ttft_mean_ms", "g0_server_tpot_mean_ms",
             "g1_server_tpot_mean_ms", "g0_throughput_tokens_per_s", "g1_throughput_tokens_per_s", "g0_error_count",
             "g1_error_count", "hit_rate", "hit_rate_evidence", "hit_rate_reason", "hit_rate_unit", "reused_tokens",
             "query_tokens", "g0_hit_rate", "g0_hit_rate_evidence", "predicted_hit_rate", "predicted_hit_tokens",
             "prediction_matches_measured", "g0_peak_memory_mib", "g1_peak_memory_mib", "peak_memory_source",
             "ttft_speedup", "server_ttft_speedup", "ttft_speedup_bound", "ttft_speedup_bound_definition"]
MIDDLE_KEYS = ["overhead", "thresholds", "evidence_level", "repeats", "confidence", "paired", "routing",
               "server_ttft_signal"]


def _group(hit, ttft, tpot=2.0, status="ok", server=None):
    rows = [{"status": "ok", "ttft_ms": ttft + d, "tpot_ms": tpot} for d in (-2, -1, 0, 1, 2)]
    manifest = {"requests": rows, "status": status, "error": None if status == "ok" else "server died",
                "group": {"name": "g"}, "hit_rate": hit, "hit_rate_evidence": "backend_metrics",
                "aggregates": {"ttft_ms": {"p50": ttft}, "tpot_ms": {"p50": tpot}, "throughput_tokens_per_s": 10.0,
                               "error_count": 0}, "prediction": {}}
    if server is not None:
        manifest["backend_counters"] = {"server_timing_ms": {"ttft": {"mean_ms": server}, "tpot": {"mean_ms": tpot}}}
    return manifest


CASES = {
    "accept": (_group(None, 300.0), _group(0.7, 90.0, 2.1)),
    "reject": (_group(None, 100.0), _group(0.2, 150.0)),
    "tune, no hit rate": (_group(None, 100.0), _group(None, 90.0)),
    "failed": (_group(None, 100.0, status="failed"), _group(0.6, 90.0)),
    "client and engine disagree": (_group(None, 100.0, server=50.0), _group(0.7, 90.0, server=80.0)),
    "did not run": (None, None),
}


@pytest.mark.parametrize("case", CASES)
def test_the_json_has_the_files_keys_in_their_order_and_reads_back_equal(case):
    g0, g1 = CASES[case]
    built = summarize(g0, g1)
    data = json.loads(json.dumps(built.to_json(), allow_nan=False))
    decided = ["status", "decision_inputs", "decision", "reason", "next_action", "checks", "comparison"]
    undecided = ["status", "decision", "next_action", "reason"]
    assert list(data) == SIDE_KEYS + MIDDLE_KEYS + (decided if built.decision.inputs is not None else undecided)
    assert PairedSummary.from_json(data) == built
    assert paired_summary(g0, g1) == data  # the notebook's entry point is the same JSON


def test_the_decision_and_its_signal_read_as_attributes():
    accepted = summarize(*CASES["accept"])
    assert (accepted.decision.status, accepted.decision.decision) == ("ok", "accept")
    assert accepted.decision.next_action and accepted.decision.checks
    failed = summarize(*CASES["failed"])
    assert (failed.decision.status, failed.decision.decision, failed.decision.inputs) == ("failed", None, None)
    assert failed.decision.reason.startswith("no decision: ")
    disagree = summarize(*CASES["client and engine disagree"])
    assert disagree.server_ttft_signal is not None and disagree.server_ttft_signal.agreement == "disagree"
    assert disagree.decision.reason.endswith("; " + disagree.server_ttft_signal.note)


def test_an_older_summary_without_the_newer_sections_reads_as_none_or_empty():
    old = {"hit_rate": 0.5, "status": "ok", "decision": "tune", "reason": "r", "next_action": "n"}
    read = PairedSummary.from_json(old)
    assert read.server_ttft_signal is None and read.routing is None and read.confidence is None
    assert read.paired is None and read.to_json()["confidence"] == read.to_json()["paired"] == {}
    assert read.overhead == Overhead("", None, None, None, None, None) and read.repeats == (None, None)
    assert read.decision == Decision("ok", "tune", "r", "n") and read.side.hit_rate == 0.5
    assert ServerSignal.from_json("junk") is None and ServerSignal.from_json({}) is None
