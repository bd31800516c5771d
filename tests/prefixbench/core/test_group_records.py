"""The G0 / G1 records (``core.group_records``): what ``to_json`` writes is what the dicts held, key order
included, and ``from_json`` reads it back to an equal record; a section a file lacks reads as ``None``."""

from __future__ import annotations

import json

from tools.prefixbench.core.group_records import (Aggregates, GroupRecord, SideBySide, Stats, percentile,
                                                   section)
from tools.prefixbench.core.request_rows import RequestRow
from tools.prefixbench.measure.client import RequestResult, aggregates


def _results() -> list[RequestResult]:
    ok = [RequestResult(id=f"r{i}", index=i, status="ok", prompt_tokens=10, output_tokens=3, ttft_ms=5.0 + i,
                        tpot_ms=1.0, e2e_ms=8.0 + i, itl_ms=[1.0, 1.0]) for i in range(3)]
    return ok + [RequestResult(id="bad", index=3, error="HTTP 500")]


def test_aggregates_round_trip_through_json_with_the_key_order_of_the_files():
    built = aggregates(_results(), 2.0)
    data = built.to_json()
    assert list(data) == ["requests", "successful", "error_count", "duration_s", "ttft_ms", "tpot_ms", "itl_ms",
                          "e2e_ms", "prompt_tokens", "output_tokens", "throughput_tokens_per_s",
                          "total_tokens_per_s", "request_throughput_per_s"]
    assert list(data["ttft_ms"]) == ["p50", "p90", "p99", "mean", "count"]
    assert Aggregates.from_json(json.loads(json.dumps(data))) == built
    assert (built.error_count, built.successful, percentile(built, "ttft_ms")) == (1, 3, 6.0)


def test_a_missing_section_or_metric_reads_as_none_never_zero():
    assert Aggregates.from_json(None) is None and Stats.from_json("x") is None
    assert percentile(None, "ttft_ms") is None
    assert percentile(Aggregates.from_json({"requests": 2, "ttft_ms": None}), "ttft_ms") is None
    assert section({"a": None}, "a") == {} and section(None, "a") == {} and section({"a": {"b": 1}}, "a") == {"b": 1}


def test_a_group_manifest_with_repeats_reads_as_its_runs():
    run = {"status": "ok", "hit_rate": 0.5, "hit_tokens": 8, "requests": [{"id": "r0", "status": "ok"}, "junk"],
           "backend_counters": {"server_timing_ms": {"ttft": {"mean_ms": 3.0}}}, "prediction": None}
    record = GroupRecord.from_json({"group": {"name": "g1_prefix_cache"}, "status": "failed",
                                    "repeats": [run | {"repeat": 0}, run | {"repeat": 1}]})
    assert record.name == "g1_prefix_cache" and [r.repeat for r in record.runs] == [0, 1]
    first = record.runs[0]
    assert first.rows == [RequestRow(id="r0", index=0, status="ok")] and first.server_ttft_mean_ms == 3.0
    assert first.server_tpot_mean_ms is None and first.prediction.predicted_hit_tokens is None
    assert GroupRecord.from_json(run).runs == (GroupRecord.from_json(run),)


def test_side_by_side_writes_hit_tokens_as_reused_tokens_and_reads_them_back():
    names = [f.name for f in SideBySide.__dataclass_fields__.values()]
    side = SideBySide(**{name: None for name in names} | {"hit_tokens": 240, "hit_rate_unit": "token",
                                                          "ttft_speedup_bound_definition": "1 / (1 - h)"})
    data = side.to_json()
    assert data["reused_tokens"] == 240 and "hit_tokens" not in data
    assert list(data) == [("reused_tokens" if n == "hit_tokens" else n) for n in names]
    assert SideBySide.from_json(data) == side
