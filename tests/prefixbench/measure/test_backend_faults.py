"""Faults a real vLLM server cannot show on demand, injected with a small fake server: no /metrics, counters that
go backwards (a restart between snapshots), a server that reports usage details but no counters."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("prometheus_client")

from backend_fixtures import fake_server, prometheus_text  # noqa: E402

WORKLOAD = "benchmarks/workloads/prefix_reuse.jsonl"


def _run(base_url, output, **kwargs):
    from tools.inference_project_runtime import run_backend_benchmark

    return run_backend_benchmark(project="69", base_url=base_url, model="fake", label="vllm-g1_prefix_cache",
                                 output=str(output), workload=WORKLOAD, backend="vllm", batch=1, max_tokens=4,
                                 num_prompts=4, concurrency=1, warmup=1, dtype="auto",
                                 cache_policy="prefix_cache", progress=False, **kwargs)


def test_missing_metrics_endpoint_gives_a_null_hit_rate_with_the_reason(tmp_path):
    with fake_server(metrics=None) as server:
        report = _run(server.base_url, tmp_path / "g1.json")
    assert report["status"] == "ok"  # the requests themselves worked
    assert report["hit_rate"] is None
    assert report["hit_rate_evidence"] == "backend_metrics_or_logs_required"
    assert "HTTP 404" in report["hit_rate_reason"] and "/metrics" in report["hit_rate_reason"]
    assert report["normalized_result"]["hit_rate"] is None
    assert report["prediction"]["predicted_hit_rate"] is None and "block size" in report["prediction"]["reason"]
    assert report["phases"]["reset_prefix_cache"]["status"] == "unavailable"
    assert json.loads((tmp_path / "g1.json").read_text())["hit_rate"] is None


def test_per_request_usage_is_the_fallback_evidence_and_prediction_uses_a_given_block_size(tmp_path):
    with fake_server(metrics=None, cached_tokens=lambda prompt: 256) as server:
        report = _run(server.base_url, tmp_path / "g1.json", block_size=128)
    assert report["hit_rate_evidence"] == "per_request_usage"
    assert report["hit_tokens"] == 4 * 256 and report["hit_rate"] == pytest.approx(1024 / (4 * 1324))
    assert "HTTP 404" in report["hit_rate_reason"]
    # without the reset endpoint the warm-up stays cached and is simulated first, then left out of the counts
    assert report["prediction"]["simulated_warmup_prompts"] == 1
    assert report["prediction"]["predicted_hit_tokens"] == 2 * 1024
    assert report["prediction"]["matches_measured"] is False


def test_counters_that_go_backwards_are_a_reset_not_a_hit_rate(tmp_path):
    # the history scrape before the warm-up and the phase's first scrape high, later ones low: the server restarted
    values = iter([(5000, 3000)] * 2 + [(100, 50)] * 100)

    def metrics_text():
        queries, hits = next(values)
        return prometheus_text(queries, hits)

    with fake_server(metrics=metrics_text) as server:
        report = _run(server.base_url, tmp_path / "g1.json")
    assert report["hit_rate"] is None and "counter reset" in report["hit_rate_reason"]
    assert report["backend_counters"]["problems"]
    assert report["usage"]["matches_counter_delta"] is None


def test_the_client_records_http_errors_per_request():
    from tools.prefixbench.measure.client import run_requests
    from tools.prefixbench.serve.ports import free_port

    run = run_requests(f"http://127.0.0.1:{free_port()}", "m", [{"id": "a", "prompt_token_ids": [1, 2],
                                                                "max_tokens": 2}], timeout_s=5)
    row = run["rows"][0]
    assert row["status"] == "error" and row["error"] and row["ttft_ms"] is None
    assert run["aggregates"]["error_count"] == 1 and run["aggregates"]["ttft_ms"] is None
