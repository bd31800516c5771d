"""Backend pieces that need no vLLM server: counter parsing and diffs, evidence rules, prediction, decision,
client aggregates, model builds, server command lines and failures, CLI input errors."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time

import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("prometheus_client")

from backend_fixtures import prometheus_text  # noqa: E402

from tools.prefixbench import metrics  # noqa: E402
from tools.prefixbench.client import RequestResult, aggregate, arrival_offsets  # noqa: E402
from tools.prefixbench.decision import recommend_prefix_cache_run  # noqa: E402
from tools.prefixbench.errors import InputError  # noqa: E402
from tools.prefixbench.experiment import (  # noqa: E402
    OVERHEAD_DEFINITION, paired_summary, predict_hits, select_requests, warmup_requests)
from tools.prefixbench.simulate import simulate_prefix_cache  # noqa: E402
from tools.prefixbench.workload import generate_shared_prefix_workload, load_workload  # noqa: E402

REAL_SHAPE = """# HELP vllm:prefix_cache_queries_total Prefix cache queries.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 100.0
vllm:prefix_cache_queries_total{engine="1",model_name="m"} 50.0
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 40.0
vllm:prefix_cache_hits_total{engine="1",model_name="m"} 10.0
# TYPE vllm:prompt_tokens_by_source_total counter
vllm:prompt_tokens_by_source_total{engine="0",model_name="m",source="local_cache_hit"} 40.0
vllm:prompt_tokens_by_source_total{engine="0",model_name="m",source="local_compute"} 60.0
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 1.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 4.0
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="128",enable_prefix_caching="True",engine="0",num_gpu_blocks="16384"} 1.0
"""


def _bump(text: str, **new_values: float) -> str:
    """The same exposition with some sample values replaced: ``name__engine=value``."""
    lines = []
    for line in text.splitlines():
        for key, value in new_values.items():
            name, engine = key.split("__")
            if line.startswith(f"vllm:{name}{{engine=\"{engine}\""):
                line = line.rsplit(" ", 1)[0] + f" {value}"
        lines.append(line)
    return "\n".join(lines) + "\n"


# -------------------------------------------------------------------------------------------- metrics

def test_diff_gives_per_engine_and_summed_deltas_and_server_timing():
    before = metrics.parse("u", REAL_SHAPE)
    after = metrics.parse("u", _bump(REAL_SHAPE, prefix_cache_queries_total__0=400, prefix_cache_hits_total__0=240,
                                     prefix_cache_queries_total__1=150, prefix_cache_hits_total__1=10,
                                     time_to_first_token_seconds_sum__0=2.0,
                                     time_to_first_token_seconds_count__0=8))
    delta = metrics.diff([before], [after])
    assert delta["problems"] == []
    assert delta["counters"]["queries"] == {"name": "vllm:prefix_cache_queries", "total": 400,
                                            "per_engine": {"0": 300, "1": 100}}
    assert delta["counters"]["hits"]["per_engine"] == {"0": 200, "1": 0}
    assert delta["server_timing_ms"]["ttft"]["mean_ms"] == pytest.approx(250.0)
    evidence = metrics.hit_rate_evidence(delta, caching_enabled=True)
    assert evidence["hit_rate"] == 200 / 400 and evidence["hit_rate_evidence"] == "backend_metrics"
    assert metrics.cache_config([after])["block_size"] == 128
    assert metrics.cache_config([after])["enable_prefix_caching"] is True


def test_older_counter_names_are_a_fallback():
    old = prometheus_text(10, 5).replace("vllm:prefix_cache_", "vllm:gpu_prefix_cache_")
    new = prometheus_text(30, 15).replace("vllm:prefix_cache_", "vllm:gpu_prefix_cache_")
    delta = metrics.diff([metrics.parse("u", old)], [metrics.parse("u", new)])
    assert delta["counters"]["queries"]["name"] == "vllm:gpu_prefix_cache_queries"
    assert metrics.hit_rate_evidence(delta, caching_enabled=True)["hit_rate"] == 0.5


def test_counter_going_backwards_or_recreated_is_a_reset_not_a_rate():
    backwards = metrics.diff([metrics.parse("u", prometheus_text(500, 200))],
                             [metrics.parse("u", prometheus_text(100, 50))])
    recreated = metrics.diff([metrics.parse("u", prometheus_text(100, 50, created=1.0))],
                             [metrics.parse("u", prometheus_text(900, 450, created=2.0))])
    for delta in (backwards, recreated):
        assert any("counter reset" in p for p in delta["problems"])
        evidence = metrics.hit_rate_evidence(delta, caching_enabled=True)
        assert evidence["hit_rate"] is None
        assert evidence["hit_rate_evidence"] == metrics.EVIDENCE_REQUIRED
        assert "counter reset" in evidence["hit_rate_reason"]


def test_zero_queries_is_no_evidence_never_zero_percent():
    same = metrics.parse("u", prometheus_text(0, 0))
    delta = metrics.diff([same], [same])
    off = metrics.hit_rate_evidence(delta, caching_enabled=False, usage_cached_tokens=[0], usage_prompt_tokens=[9])
    assert off["hit_rate"] is None and off["hit_rate_evidence"] == "not_applicable"
    assert "0/0" in off["hit_rate_reason"]
    unknown = metrics.hit_rate_evidence(delta, caching_enabled=None)
    assert unknown["hit_rate"] is None and unknown["hit_rate_evidence"] == metrics.EVIDENCE_REQUIRED


def test_usage_is_the_fallback_only_when_complete():
    failed = metrics.Snapshot("u", time.time(), error="u answered HTTP 404")
    delta = metrics.diff([failed], [failed])
    complete = metrics.hit_rate_evidence(delta, caching_enabled=True, usage_cached_tokens=[0, 64, 64],
                                         usage_prompt_tokens=[100, 100, 100])
    assert complete["hit_rate_evidence"] == "per_request_usage" and complete["hit_rate"] == 128 / 300
    assert "HTTP 404" in complete["hit_rate_reason"]
    partial = metrics.hit_rate_evidence(delta, caching_enabled=True, usage_cached_tokens=[0, None],
                                        usage_prompt_tokens=[100, 100])
    assert partial["hit_rate"] is None and "1 of 2" in partial["hit_rate_reason"]


def test_scrape_of_a_closed_port_is_recorded_not_raised():
    from tools.prefixbench.server import free_port

    snap = metrics.scrape(f"http://127.0.0.1:{free_port()}/metrics", timeout_s=2)
    assert not snap.ok and "cannot reach" in snap.error


# ------------------------------------------------------------------------------------------ prediction

def test_prediction_matches_the_simulator_and_skips_warmup_counts():
    workload = load_workload()
    prompts = workload.prompts
    direct = simulate_prefix_cache(prompts, 128, None, last_token_rule=True)
    predicted = predict_hits(prompts, 128, None)
    assert predicted["predicted_hit_tokens"] == direct["reused_tokens"]
    assert predicted["predicted_query_tokens"] == direct["total_prompt_tokens"]
    # a warm-up prompt equal to the first request makes request 0 hit, and the warm-up itself is not counted
    warm = predict_hits(prompts, 128, None, warmup_prompts=[prompts[0]])
    assert warm["per_request_hit_tokens"][0] == (len(prompts[0]) - 1) // 128 * 128
    assert len(warm["per_request_hit_tokens"]) == len(prompts)


def test_warmup_prompts_share_no_block_with_the_workload():
    requests = select_requests(load_workload(), None, None)
    warm = warmup_requests(3, requests)
    firsts = {tuple(r["prompt_token_ids"][:16]) for r in requests}
    assert len(warm) == 3 and all(tuple(w["prompt_token_ids"][:16]) not in firsts for w in warm)
    assert all(len(w["prompt_token_ids"]) == len(requests[0]["prompt_token_ids"]) for w in warm)


def test_select_requests_rejects_bad_counts_with_the_field_name():
    workload = load_workload()
    with pytest.raises(InputError, match="^num_prompts: "):
        select_requests(workload, len(workload) + 1, None)
    with pytest.raises(InputError, match="^max_tokens: "):
        select_requests(workload, 2, 0)
    assert [r["max_tokens"] for r in select_requests(workload, 2, 7)] == [7, 7]


# --------------------------------------------------------------------------------------------- client

def _result(i, ttft, tpot, e2e, out=4, status="ok", gaps=(1.0, 2.0, 3.0)):
    return RequestResult(id=str(i), index=i, status=status, ttft_ms=ttft, tpot_ms=tpot, e2e_ms=e2e,
                         output_tokens=out, prompt_tokens=10, itl_ms=list(gaps),
                         error=None if status == "ok" else "boom")


def test_aggregate_percentiles_throughput_and_errors():
    rows = [_result(i, ttft=float(i + 1), tpot=2.0, e2e=10.0) for i in range(10)] + [
        _result(10, None, None, None, out=None, status="error")]
    agg = aggregate(rows, duration_s=2.0)
    assert agg["error_count"] == 1 and agg["successful"] == 10
    assert agg["ttft_ms"]["p50"] == pytest.approx(5.5) and agg["ttft_ms"]["p90"] == pytest.approx(9.1)
    assert agg["ttft_ms"]["p99"] == pytest.approx(9.91)
    assert agg["itl_ms"]["count"] == 30
    assert agg["throughput_tokens_per_s"] == 40 / 2.0
    empty = aggregate([_result(0, None, None, None, out=None, status="error")], 1.0)
    assert empty["ttft_ms"] is None and empty["throughput_tokens_per_s"] is None


def test_arrival_offsets():
    assert arrival_offsets(3, None) == [0.0, 0.0, 0.0]
    assert arrival_offsets(3, 4.0) == [0.0, 0.25, 0.5]
    poisson = arrival_offsets(200, 10.0, poisson=True, seed=1)
    assert poisson == arrival_offsets(200, 10.0, poisson=True, seed=1)
    assert 15 < poisson[-1] < 25  # mean gap 0.1 s


# ------------------------------------------------------------------------------------------- decision

def _group(status="ok", hit=None, evidence="backend_metrics", ttft=100.0, tpot=2.0, server_tpot=None):
    manifest = {"status": status, "error": None if status == "ok" else "server died", "group": {"name": "g"},
                "hit_rate": hit, "hit_rate_evidence": evidence, "hit_rate_reason": None, "hit_tokens": None,
                "aggregates": {"ttft_ms": {"p50": ttft}, "tpot_ms": {"p50": tpot}, "e2e_ms": {"p50": 1.0},
                               "throughput_tokens_per_s": 10.0, "error_count": 0},
                "memory": {"peak_memory_mib": 1.0, "source": "process_tree_rss"}, "prediction": {}}
    if server_tpot is not None:
        manifest["backend_counters"] = {"server_timing_ms": {"tpot": {"mean_ms": server_tpot}}}
    return manifest


def test_paired_summary_uses_the_library_decision_and_the_bound():
    g0 = _group(hit=None, evidence="not_applicable", ttft=300.0, tpot=2.0)
    g1 = _group(hit=0.7, ttft=90.0, tpot=2.1)
    summary = paired_summary(g0, g1, min_hit_rate=0.5, max_overhead=0.1)
    expected = recommend_prefix_cache_run({"hit_rate": 0.0, "ttft_ms": 300.0, "overhead": 0.0},
                                          {"hit_rate": 0.7, "ttft_ms": 90.0, "overhead": 2.1 / 2.0 - 1}, 0.5, 0.1)
    assert summary["decision"] == expected["decision"] == "accept"
    assert summary["ttft_speedup_bound"] == pytest.approx(1 / 0.3)
    assert summary["ttft_speedup"] == pytest.approx(300 / 90)
    assert summary["overhead"]["definition"] == OVERHEAD_DEFINITION
    assert summary["overhead"]["source"] == "client_tpot_p50"
    assert "0 by construction" in summary["decision_inputs"]["baseline_hit_rate_basis"]


def test_paired_summary_prefers_server_tpot_for_overhead():
    summary = paired_summary(_group(ttft=300.0, tpot=2.0, server_tpot=2.0),
                             _group(hit=0.7, ttft=90.0, tpot=2.0, server_tpot=3.0))
    assert summary["overhead"]["source"] == "server_tpot_mean"
    assert summary["overhead"]["g1"] == pytest.approx(0.5)
    assert summary["decision"] == "tune"


def test_paired_summary_without_evidence_or_with_a_failure_does_not_decide_from_ttft():
    no_evidence = paired_summary(_group(ttft=300.0), _group(hit=None, evidence="backend_metrics_or_logs_required",
                                                            ttft=50.0))
    assert no_evidence["decision"] == "tune" and "no backend hit-rate evidence" in no_evidence["reason"]
    assert no_evidence["hit_rate"] is None and no_evidence["ttft_speedup_bound"] is None
    failed = paired_summary(_group(), _group(status="failed", hit=0.7))
    assert failed["status"] == "failed" and failed["decision"] is None and "server died" in failed["reason"]
    not_run = paired_summary(_group(), None)
    assert not_run["status"] == "failed" and "did not run" in not_run["reason"]


# --------------------------------------------------------------------------------------- models, server

def test_local_model_build_is_deterministic_and_covers_workload_ids(tmp_path, monkeypatch):
    from tools.prefixbench import models

    hashes = []
    for name in ("a", "b"):
        monkeypatch.setenv("PREFIXBENCH_CACHE", str(tmp_path / name))
        path = models.ensure_local_model("tiny")
        record = models.build_record(path)
        hashes.append((record["weights_sha256"], (path / "tokenizer.json").read_bytes()))
        assert record["vocab_size"] >= models.MIN_VOCAB > max(max(p) for p in load_workload().prompts)
        assert json.loads((path / "config.json").read_text())["vocab_size"] == record["vocab_size"]
    assert hashes[0] == hashes[1]
    assert models.ensure_local_model("tiny") == path  # cached: same folder, no rebuild
    with pytest.raises(InputError, match="^model: "):
        models.ensure_local_model("huge")


def test_resolve_model_substitutes_only_when_auto_on_cpu(monkeypatch, tmp_path):
    from tools.prefixbench import server

    monkeypatch.setenv("PREFIXBENCH_CACHE", str(tmp_path))
    monkeypatch.setenv("PREFIXBENCH_LOCAL_MODEL", "tiny")
    cpu, gpu = {"kind": "cpu"}, {"kind": "gpu"}
    assert server.resolve_model("Qwen/Qwen2.5-0.5B-Instruct", "auto", gpu).source == "hub"
    local = server.resolve_model("Qwen/Qwen2.5-0.5B-Instruct", "auto", cpu)
    assert local.source == "local" and local.local_name == "tiny"
    assert local.substituted_for == "Qwen/Qwen2.5-0.5B-Instruct"
    assert server.resolve_model("Qwen/Qwen2.5-0.5B-Instruct", "hub", cpu).path == "Qwen/Qwen2.5-0.5B-Instruct"
    with pytest.raises(InputError, match="^model_source: "):
        server.resolve_model("tiny", "cloud")


def test_server_command_is_a_list_bound_to_localhost_with_the_needed_switches():
    from tools.prefixbench.server import ServerConfig, VllmServer

    on = VllmServer(ServerConfig(model="/m", served_model_name="m", enable_prefix_caching=True),
                    platform={"kind": "cpu"})
    off = VllmServer(ServerConfig(model="/m", served_model_name="m", enable_prefix_caching=False),
                     platform={"kind": "gpu"})
    argv = on.argv()
    assert argv[:3] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
    assert argv[argv.index("--host") + 1] == "127.0.0.1" and "--enable-prompt-tokens-details" in argv
    assert "--enable-prefix-caching" in argv and "--kv-cache-memory-bytes" in argv
    assert "--no-enable-prefix-caching" in off.argv() and "--kv-cache-memory-bytes" not in off.argv()
    assert on.environment()["VLLM_SERVER_DEV_MODE"] == "1"
    assert on.port != off.port


def test_cli_bad_input_is_one_line_without_starting_a_server(tmp_path):
    env = {**os.environ, "PREFIXBENCH_CACHE": str(tmp_path)}
    for args, field in ((["--num-prompts", "999"], "num_prompts"), (["--warmup", "-1"], "--warmup"),
                        (["--max-overhead", "-1"], "max_overhead"), (["--num-prompts", "0"], "--num-prompts")):
        proc = subprocess.run([sys.executable, "-m", "tools.prefixbench", "g0g1", "--model", "tiny",
                               "--out", str(tmp_path), *args], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 1, proc.stderr
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
        assert field in proc.stderr
    assert not list(tmp_path.glob("69_*.json"))


def test_environment_snapshot_names_the_backend():
    from tools.inference_project_runtime import runtime_snapshot

    snap = runtime_snapshot()
    assert snap["backend"]["kind"] in {"cpu", "gpu", "none"}
    assert snap["python"] and snap["cpu_count"] >= 1
    assert math.isfinite(snap["memory_total_gib"])
