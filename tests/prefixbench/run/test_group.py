"""One G0 / G1 group's inputs: warm-up prompts and the selected requests."""

from __future__ import annotations


import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("prometheus_client")


from tools.prefixbench.core.errors import InputError  # noqa: E402
from tools.prefixbench.run.group import select_requests, warmup_requests  # noqa: E402
from tools.prefixbench.workload import load_workload  # noqa: E402


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


def test_a_servers_history_is_known_only_while_its_counters_say_it_served_nothing():
    """With a failed cache reset, a prediction is exact only where the server's history is known (its warm-up is
    then simulated); the golden sweep's second repeat used to claim an exact prediction it missed by 144 tokens.
    The answer comes from the server's own counters before the warm-up, whoever started it."""
    import requests as http
    from backend_fixtures import CachingFakeServer, FakeServer, prometheus_text

    from tools.prefixbench.run.group import GroupRun, history_known

    run = GroupRun(model="m", requests=[{"id": "r0", "prompt_token_ids": [1, 2, 3], "max_tokens": 1}],
                   group={"name": "g1_prefix_cache", "enabled": True}, progress=False)
    with CachingFakeServer() as fresh, FakeServer(metrics=None) as silent:
        url = fresh.base_url + "/metrics"
        assert history_known(run, [url]) is True
        http.post(fresh.base_url + "/v1/completions", json={"model": "m", "prompt": list(range(40)), "max_tokens": 1,
                                                            "stream": True}, timeout=10).content
        assert history_known(run, [url]) is False  # it counted a query: its cache may hold that prompt's blocks
        assert history_known(run, [silent.base_url + "/metrics"]) is False  # no counters: unknown
    idle = prometheus_text(0, 0)
    queued = idle + "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{engine=\"0\"} 1.0\n"
    with FakeServer(metrics=lambda: idle) as zero, FakeServer(metrics=lambda: queued) as waiting:
        assert history_known(run, [zero.base_url + "/metrics"]) is True
        assert history_known(run, [waiting.base_url + "/metrics"]) is False  # queued, not yet counted


@pytest.mark.parametrize("schedule,repeats", [("sequential", 1), ("interleaved", 1), ("sequential", 2)])
def test_a_group_manifest_keeps_one_key_order_whichever_path_its_run_took(tmp_path, schedule, repeats):
    """A measured group, a group whose server refused its warm-up and (with --repeats) their combination write the
    header, the hit-rate fields and ``finished_at`` in the same order (``core.group_records.GroupRunManifest``): the
    dicts filled in stages put ``finished_at`` before a failed group's null hit rate, and after it otherwise."""
    import json

    from backend_fixtures import CacheOffFakeServer, Running, closed_port

    from tools.prefixbench.run.g0g1 import run_experiment

    workload = tmp_path / "w.jsonl"
    workload.write_text("".join(json.dumps({"id": f"r{i}", "prompt_token_ids": [*range(1, 49), *[1000 + i] * 32],
                                            "max_tokens": 2}) + "\n" for i in range(4)))
    with CacheOffFakeServer() as g0:
        run_experiment(model="m", workload=str(workload), out=tmp_path / "out", progress=False, log=lambda _: None,
                       schedule=schedule, repeats=repeats, request_timeout_s=3,
                       servers={"g0_cache_off": Running(g0.base_url),
                                "g1_prefix_cache": Running(f"http://127.0.0.1:{closed_port()}")})
    keys = {name: list(json.loads((tmp_path / "out" / f"69_prefix_cache_{name}.json").read_text()))
            for name in ("g0_cache_off", "g1_prefix_cache")}
    header = ["schema", "project", "label", "status", "error", "started_at", "group", "config", "server",
              "environment", "quality", "phases"]
    rate = ["hit_rate", "hit_rate_evidence", "hit_rate_reason", "hit_tokens", "query_tokens", "hit_rate_unit"]
    tail = ["finished_at", "repeats"] if repeats > 1 else ["finished_at"]
    for name, order in keys.items():
        assert order[:len(header)] == header and order[-len(tail):] == tail, (name, order)
        assert [k for k in order if k in rate] == rate, (name, order)
    assert keys["g1_prefix_cache"] == header + rate + tail  # failed at its warm-up: nothing measured
    if schedule == "sequential":  # G0 ran first and was measured
        assert keys["g0_cache_off"].index("normalized_result") == len(keys["g0_cache_off"]) - len(tail) - 1


def test_a_server_that_never_started_writes_the_same_header_with_when_its_start_began():
    from backend_fixtures import Running

    from tools.prefixbench.run.g0g1 import GROUPS, server_failure

    class NeverStarted(Running):
        def log_tail(self, lines=20):
            return "RuntimeError: no memory for the KV cache"

    manifest = server_failure(GROUPS[1], {"model": "m"}, NeverStarted("http://127.0.0.1:9"), {"python": "3.11"},
                              RuntimeError("vLLM exited with code 1\nmore"),
                              started_at="2026-12-05T11:00:00Z").to_json()
    assert list(manifest)[:12] == ["schema", "project", "label", "status", "error", "started_at", "group", "config",
                                   "server", "environment", "quality", "phases"]
    assert list(manifest)[-2:] == ["server_log_tail", "finished_at"]
    assert manifest["started_at"] == "2026-12-05T11:00:00Z" and manifest["status"] == "failed"
    assert manifest["error"] == "vLLM exited with code 1" and manifest["hit_rate"] is None
    assert manifest["hit_rate_reason"] == "the server did not start" and manifest["phases"] == {}


def test_repeats_combine_into_the_first_run_failed_by_the_first_that_failed_with_its_log_tail():
    from tools.prefixbench.core.group_records import GroupRunManifest
    from tools.prefixbench.run.group import combine_repeats

    def run(i, status, error=None, tail=None):
        return GroupRunManifest(label="vllm-g1", group={"name": "g1"}, config={}, server={"port": 1},
                                environment={}, started_at=f"start{i}", status=status, error=error,
                                measured={"hit_rate": i / 10}, server_log_tail=tail, finished_at=f"end{i}")

    ok, broken = run(0, "ok"), run(1, "failed", "the server died", "RuntimeError: out of memory")
    combined = combine_repeats([ok, broken], 3).to_json()
    assert (combined["status"], combined["error"]) == ("failed", "repeat 1: the server died")
    assert list(combined)[-3:] == ["server_log_tail", "finished_at", "repeats"]
    assert (combined["server_log_tail"], combined["finished_at"], combined["started_at"]) == (
        "RuntimeError: out of memory", "end1", "start0")
    assert [r["repeat"] for r in combined["repeats"]] == [0, 1] and combined["repeats"][1]["hit_rate"] == 0.1
    assert not {"config", "environment", "server", "schema", "project"} & set(combined["repeats"][0])
    short = combine_repeats([ok], 2).to_json()
    assert (short["status"], short["error"]) == ("failed", "only 1 of 2 repeats ran") and "server_log_tail" not in short
    assert combine_repeats([ok], 1) is ok  # one planned run: that run, unchanged
