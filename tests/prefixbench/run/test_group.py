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


def test_only_a_server_this_process_started_and_no_run_measured_has_a_known_history():
    """With a failed cache reset, a prediction is exact only where the server's history is known (its warm-up is
    then simulated); the golden sweep's second repeat used to claim an exact prediction it missed by 144 tokens."""
    from tools.prefixbench.measure.endpoints import RunningServer
    from tools.prefixbench.run.group import claim_history
    from tools.prefixbench.serve.server import ServerConfig, VllmServer

    started = VllmServer(ServerConfig(model="m", served_model_name="m", enable_prefix_caching=True),
                         platform={"kind": "cpu"})
    user = RunningServer("http://127.0.0.1:9")
    assert claim_history([started, user, None]) == [True, False, False]
    assert claim_history([started]) == [False]  # measured once: its cache holds that run's blocks
    assert user.fresh is False
