"""The typed result records: one validating loader per schema, one clear line when a file is not one."""

import json
import subprocess
import sys

import pytest

from tools.prefixbench.core.errors import InputError
from tools.prefixbench.core.records import load_g0g1_summary, load_group_manifest, load_hitrate_result

EXAMPLES = "benchmarks/results/examples/cpu_small"


def test_the_committed_example_manifests_load_with_their_own_loader_only(repo_root):
    folder = repo_root / EXAMPLES
    summary = load_g0g1_summary(folder / "69_prefix_cache.json")
    g1 = load_group_manifest(folder / "69_prefix_cache_g1_prefix_cache.json")
    assert summary["paired_summary"]["decision"] in ("accept", "tune", "reject")
    assert g1["prediction"]["predicted_hit_tokens"] == g1["hit_tokens"]
    with pytest.raises(InputError, match=r"not a hit-rate result \(schema prefixbench.hitrate/1\)"):
        load_hitrate_result(folder / "69_prefix_cache.json")
    with pytest.raises(InputError, match="not a G0 / G1 summary"):
        load_g0g1_summary(folder / "69_prefix_cache_g1_prefix_cache.json")


def test_the_committed_examples_name_no_path_of_the_machine_they_ran_on(repo_root):
    """Examples are read on other machines: a path like /root/... or /tmp/... would point nowhere there."""
    for path in (repo_root / EXAMPLES).glob("*.json"):
        found = []

        def walk(value, where):
            if isinstance(value, dict):
                for key, item in value.items():
                    walk(item, f"{where}.{key}")
            elif isinstance(value, list):
                for i, item in enumerate(value):
                    walk(item, f"{where}[{i}]")
            elif isinstance(value, str) and value.startswith(("/root/", "/tmp/", "/work/", "/home/")):
                found.append(f"{where}: {value}")

        walk(json.loads(path.read_text()), path.name)
        assert not found, found


def _hitrate(tmp_path, **changes):
    data = {"schema": "prefixbench.hitrate/1", "status": "ok",
            "config": {"model": "m", "endpoint": "http://127.0.0.1:1", "workload": "w.jsonl", "workload_id": "w",
                       "num_requests": 1, "input_len": 64, "prefix_len": 32, "prefix_num": 1, "concurrency": 1,
                       "request_rate": None, "prefill": True},
            "summary": {"requests": 1}, "hit_rates": {"measured": None}}
    data.update(changes)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("changes, field, problem", [
    ({"summary": [1, 2]}, "summary", "must be a JSON object, got list"),
    ({"requests": {"a": 1}}, "requests", "must be a JSON array, got dict"),
    ({"config": None}, "config", "is missing"),
    ({"config": {"model": "m", "endpoint": "e", "workload": "w.jsonl"}}, "config.workload_id", "is missing"),
    ({"hit_rates": {"measured": 3.0}}, "hit_rates.measured", "must be in [0, 1], got 3.0"),
    ({"verdict": {"latency_checks": [{"check": "TTFT"}]}}, "verdict.latency_checks[0]", "is missing ok, value"),
    ({"hit_rates": {"measured": "70%"}}, "hit_rates.measured", "must be a number or null, got str '70%'"),
    ({"verdict": {"reasons": ["ok", 3]}}, "verdict.reasons[1]", "must be a string, got int '3'"),
    ({"summary": {"ttft_ms": {"p50": True}}}, "summary.ttft_ms.p50", "must be a number or null, got bool 'True'"),
    ({"status": "done"}, "status", "must be one of running, ok, partial, failed, interrupted, got 'done'"),
])
def test_a_malformed_section_is_named_in_one_line(tmp_path, changes, field, problem):
    path = _hitrate(tmp_path, **changes)
    with pytest.raises(InputError) as info:
        load_hitrate_result(path)
    assert str(info.value) == f"{path}.{field}: {problem}"


def test_a_section_a_failed_run_never_produced_may_be_null(tmp_path):
    assert load_hitrate_result(_hitrate(tmp_path, status="failed", summary=None, verdict=None))["summary"] is None


def test_report_and_compare_refuse_a_malformed_result_with_exit_1_and_one_line(tmp_path):
    path = _hitrate(tmp_path, verdict="GOOD")
    for args in (["report", str(path)], ["compare", str(path), str(path)]):
        run = subprocess.run([sys.executable, "-m", "tools.prefixbench", *args], capture_output=True, text=True,
                             timeout=120)
        assert run.returncode == 1 and run.stderr.splitlines() == [
            f"error: {path}.verdict: must be a JSON object, got str"], run.stderr
