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
