"""The replica records (``core.replica_records``) against the golden files of a real client-placed run on fake
servers (timings normalised away: ``golden_files``): a row read back writes the same text in both layouts, the cluster's prediction is the sum of the rows'
ones, and the load balance counts what each replica computed."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from golden_files import normalized

from tools.prefixbench.core.live_records import Evidence, Prediction
from tools.prefixbench.core.replica_records import (GROUP, LIVE, ClientRouting, LoadBalance, Placement, PolicyRun, ReplicaRow,
                                                    RouterRecord, RoutingComparison)
from tools.prefixbench.report.markdown import _replicas
from tools.prefixbench.run.replicas import cluster_prediction

GOLDEN = Path(__file__).parents[1] / "run" / "golden"


def _g1() -> dict:
    files = json.loads((GOLDEN / "g0g1_replicas.json").read_text())["files"]
    return files["69_prefix_cache_g1_prefix_cache.json"]


def _hitrate() -> dict:
    return json.loads((GOLDEN / "hitrate_replicas.json").read_text())["result"]


def test_a_group_row_read_back_is_written_in_the_files_order():
    for row in _g1()["replicas"]:
        record = ReplicaRow.from_json(row)
        assert record.layout == GROUP and record.aggregates is not None
        assert json.dumps(normalized(record.to_json())) == json.dumps(row)


def test_a_live_row_read_back_is_written_with_the_same_keys_and_values():
    for row in _hitrate()["replicas"]:  # the live golden file is stored with sorted keys
        record = ReplicaRow.from_json(row)
        assert record.layout == LIVE and record.label == f"replica{record.replica}"
        written = record.to_json()
        assert normalized(written) == row
        assert list(written)[:5] == ["replica", "label", "base_url", "metrics_url", "requests"]


def test_the_clusters_prediction_is_the_sum_of_the_replicas():
    result = _hitrate()
    rows = [ReplicaRow.from_json(r) for r in result["replicas"]]
    predicted = cluster_prediction(rows, result["measured"]["hit_tokens"])
    assert predicted.to_json() == result["prediction"]
    assert predicted.predicted_hit_tokens == sum(r.prediction.predicted_hit_tokens for r in rows)
    assert predicted.caveats == [] and predicted.exact_expected and predicted.replicas_matching == 2
    rows[1] = replace(rows[1], prediction=replace(rows[1].prediction, caveats=["the cache was not reset"],
                                                  exact_expected=False))
    inexact = cluster_prediction(rows, result["measured"]["hit_tokens"])
    assert inexact.caveats == ["replica1: the cache was not reset"] and inexact.exact_expected is False
    group = _g1()
    rows = [ReplicaRow.from_json(r) for r in group["replicas"]]
    assert json.dumps(cluster_prediction(rows, group["hit_tokens"]).to_json()) == json.dumps(group["prediction"])


def test_a_missing_prediction_makes_the_cluster_null_naming_the_replica():
    rows = [ReplicaRow.from_json(r) for r in _hitrate()["replicas"]]
    rows[1] = replace(rows[1], prediction=Prediction.unpredicted("the replica publishes no cache config"))
    predicted = cluster_prediction(rows, 192).to_json()
    assert predicted == {"predicted_hit_tokens": None, "predicted_hit_rate": None, "exact_expected": False,
                         "matches_measured": None, "per_replica": True,
                         "reason": "replica1: the replica publishes no cache config"}


def test_the_load_balance_counts_what_each_replica_computed():
    rows = [ReplicaRow.from_json(r) for r in _hitrate()["replicas"]]
    load = LoadBalance.of(rows)
    assert load.requests == [3, 3] and load.computed_tokens == [96, 96] and load.imbalance == 1.0
    idle = replace(rows[1], requests=0, evidence=Evidence(None, "backend_metrics_or_logs_required", "0/0", None, None))
    load = LoadBalance.of([rows[0], idle])
    assert load.computed_tokens == [96, 0] and load.imbalance == 2.0
    unknown = replace(rows[1], requests=None, evidence=idle.evidence)
    assert LoadBalance.of([rows[0], unknown]).imbalance is None


def test_the_routing_comparison_is_written_in_the_files_order():
    written = _g1()["routing_comparison"]
    policies = {name: PolicyRun(**run) for name, run in written["policies"].items()}
    again = RoutingComparison(written["replicas"], policies, written["best_hit_rate"], written["best_ttft"])
    assert json.dumps(again.to_json()) == json.dumps(written)


def test_the_markdown_table_reads_the_rows_back():
    lines = _replicas(_hitrate())
    assert "| replica0 | 3 | 50.00% | 96 | 192 | 96 | True |" in lines
    assert "| replica1 | 3 | 50.00% | 96 | 192 | 96 | True |" in lines


def test_a_client_placement_read_back_is_written_with_the_same_keys_and_values():
    routing = _hitrate()["routing"]
    placement = Placement.from_json(routing)
    assert placement.mode == "client" and placement.policy == "prefix_affinity" and placement.placement is not None
    assert placement.policies is not None and placement.policies.best_policy == routing["best_policy"]
    assert normalized(placement.to_json()) == routing


def test_a_router_placement_keeps_the_files_key_order():
    """The router's record follows the block model's policies, the yardstick comes last (the order of the files
    written before these records: the router's keys were appended to the client's)."""
    base = Placement.from_json(_hitrate()["routing"])
    load = LoadBalance([3, 3], [96, 96], 1.0)
    routed = replace(base, mode="router", policy="cache_aware", router="http://127.0.0.1:9",
                     router_record=RouterRecord(None, "counters", None, {"status": "unavailable"}, load))
    keys = list(routed.to_json())
    assert keys[:9] == ["mode", "policy", "replicas", "router", "placement", "prefill_placement",
                        "placement_reason", "prefix_spread", "note"]
    assert keys[9:15] == ["predicted_by_policy", "predicted_single_pool", "best_policy",
                          "measured_lost_to_best_policy", "measured_lost_to_single_pool", "model_note"]
    assert keys[15:] == ["router_process", "placement_source", "kv_events_placement", "router_view", "load",
                         "yardstick"]
    assert routed.to_json()["note"].startswith("placed by the router")
    assert routed.to_json()["load"]["definition"] == LoadBalance.DEFINITION


def test_a_groups_client_routing_read_back_is_written_in_the_files_order():
    written = _g1()["routing"]
    routing = ClientRouting.from_json(written)
    assert routing.placement == [0] * 6 and routing.predicted_lost_to_best["prefix_affinity"] == 0
    assert json.dumps(routing.to_json()) == json.dumps(written)


def test_damaged_routing_and_prediction_read_back_without_a_traceback():
    """Group manifests are read without field checks: a policy's rate that is not a number reads as unknown, and a
    prediction carrying a stray ``judged`` key is read as any other."""
    routing = ClientRouting.from_json({"predicted_by_policy": {"a": "x", "b": 0.5, "c": True}, "placement": 3})
    assert routing.predicted_lost_to_best == {"a": None, "b": 0.0, "c": None} and routing.placement == []
    row = dict(_g1()["replicas"][0])
    row["prediction"] = {**row["prediction"], "judged": True}
    assert ReplicaRow.from_json(row).prediction.predicted_hit_tokens == 240
