"""Issue 24 without a vLLM server: the router flags, the placement read from KV events, the router's own view, and
a ``vllm-router`` that cannot start (exit 1, one line, nothing sent to the replicas)."""

from __future__ import annotations

import contextlib
import io
import shutil
import sys
from pathlib import Path

import pytest

from backend_fixtures import fake_server

from tools.prefixbench.cache.blocks import BlockKeys
from tools.prefixbench.core.errors import InputError
from tools.prefixbench.measure import metrics as prom
from tools.prefixbench.run.replicas import check_replica_flags
from tools.prefixbench.run.router_watch import kv_placement, router_view, stored_since_clear

A, B = "http://127.0.0.1:8001", "http://127.0.0.1:8002"
EVENTS = ["tcp://127.0.0.1:5601", "tcp://127.0.0.1:5602"]


def _flags(endpoints, replica_metrics=None, routing=None, **router):
    return check_replica_flags(endpoints, replica_metrics, routing, metrics_endpoints=None, kv_events=None, **router)


def test_replica_metrics_accepts_a_base_url_and_appends_metrics():
    replicas = _flags(["http://127.0.0.1:9000/v1"], [f"a={A}", f"b={B}/metrics", "http://127.0.0.3:8003/"])
    assert replicas.metrics_urls == [f"{A}/metrics", f"{B}/metrics", "http://127.0.0.3:8003/metrics"]
    assert replicas.base_urls == [A, B, "http://127.0.0.3:8003"]
    with pytest.raises(InputError, match="twice"):
        _flags(["http://127.0.0.1:9000"], [A, f"{A}/metrics"])


def test_router_flags_start_a_router_in_front_of_the_endpoints():
    replicas = _flags([A, B], router="cache_aware", router_args=["--cache-threshold=0.3"])
    assert replicas.mode == "router" and replicas.base_urls == [A, B] and replicas.router_url is None
    assert replicas.router.policy == "cache_aware" and replicas.router.args == ["--cache-threshold=0.3"]
    kv = _flags([A, B], router="kv_aware", replica_kv_events=EVENTS)
    assert kv.router.kv_events == EVENTS


@pytest.mark.parametrize("endpoints, extra, flag", [
    ([A, B], {"router": "fastest"}, "--router"),
    ([A], {"router": "round_robin"}, "--router"),
    ([A, B], {"router": "round_robin", "routing": "round_robin"}, "--routing"),
    ([A, B], {"router_args": ["--x"]}, "--router-arg"),
    ([A, B], {"router": "kv_aware"}, "--router"),
    ([A, B], {"router": "kv_aware", "replica_kv_events": EVENTS[:1]}, "--replica-kv-events"),
    ([A, B], {"router": "round_robin", "replica_kv_events": ["http://x:1", "tcp://y:2"]}, "--replica-kv-events"),
    ([A, B], {"router": "round_robin", "router_metrics": "http://127.0.0.1:9/metrics"}, "--router-metrics"),
    ([A], {"replica_kv_events": EVENTS[:1]}, "--replica-kv-events"),
])
def test_router_flag_conflicts_are_one_error_naming_the_flag(endpoints, extra, flag):
    routing = extra.pop("routing", None)
    with pytest.raises(InputError) as caught:
        _flags(endpoints, None, routing, **extra)
    assert caught.value.field == flag


def _stored(keys: BlockKeys, prompt, size: int, parent=None, hashes=None) -> dict:
    blocks = len(prompt) // size
    return {"type": "BlockStored", "block_hashes": hashes or [f"h{i}" for i in range(blocks)],
            "parent_block_hash": parent, "token_ids": list(prompt[:blocks * size]), "block_size": size}


def test_the_replica_that_stored_a_requests_own_blocks_served_it():
    size = 4
    shared = [1, 2, 3, 4]
    prompts = [shared + [5, 6, 7, 8, 9], shared + [10, 11, 12, 13], shared + [1]]
    keys = BlockKeys()
    replica0 = [{"events": [_stored(keys, prompts[0], size, hashes=["s", "a"])]}]
    replica1 = [{"events": [{"type": "BlockStored", "block_hashes": ["old"], "parent_block_hash": None,
                             "token_ids": [9, 9, 9, 9], "block_size": size},
                            {"type": "AllBlocksCleared"}, _stored(keys, prompts[1], size, hashes=["s", "b"])]}]
    stored = [stored_since_clear(replica0, keys), stored_since_clear(replica1, keys)]
    placement, reasons = kv_placement(prompts, stored, size, keys)
    assert placement == [0, 1, None]
    assert reasons[2].startswith("no full block of its own")
    # a block whose parent was stored before the subscription is not named, so it confirms nothing
    orphan = [{"events": [_stored(keys, [10, 11, 12, 13], size, parent="unknown", hashes=["b2"])]}]
    assert kv_placement(prompts[1:2], [stored_since_clear(orphan, keys)], size, keys)[0] == [None]
    both = kv_placement(prompts[:1], [stored[0], stored[0]], size, keys)
    assert both == ([None], ["2 replicas published its own blocks"])


def _router_metrics(processed: dict, decisions: dict) -> prom.Snapshot:
    text = "".join(f'vllm_router_processed_requests_total{{worker="{w}"}} {n}\n' for w, n in processed.items())
    text += "".join(f'vllm_router_policy_decisions_total{{policy="round_robin",worker="{w}"}} {n}\n'
                    for w, n in decisions.items())
    return prom.parse("http://router/metrics", text)


def test_the_routers_view_is_set_beside_the_replicas_counters():
    before = _router_metrics({A: 2, B: 1}, {A: 2, B: 1})
    after = _router_metrics({A: 8, B: 7}, {A: 8, B: 7})
    view = router_view("http://router/metrics", before, after, [A, B], ["a", "b"], [6, 6])
    assert [r["router_processed"] for r in view["per_replica"]] == [6, 6] and view["agrees"]
    assert view["counters"][f"vllm_router_processed_requests_total{{worker='{A}'}}"] == 6
    assert len(view["counters"]) == 4  # every router counter that moved, by its labels
    wrong = router_view("http://router/metrics", before, after, [A, B], ["a", "b"], [5, 7])
    assert not wrong["agrees"] and wrong["disagreements"][0].startswith("a: the router says 6 processed")
    missing = router_view("http://router/metrics", None, after, [A, B], ["a", "b"], [6, 6])
    assert missing["status"] == "unavailable" and missing["per_replica"] is None
    short = router_view("http://router/metrics", before, after, [A, B], ["a", "b"], [6])  # b has no row
    assert [r["replica_counted"] for r in short["per_replica"]] == [6, None] and short["not_counted"] == ["b"]
    assert short["agrees"] is None and short["disagreements"] == []  # unknown, not agreement
    assert router_view("http://router/metrics", before, after, [A, B], ["a", "b"], [5, None])["agrees"] is False
    assert view["not_counted"] == []


def _hitrate(tmp_path, *args) -> tuple[int, list[str]]:
    from tools.prefixbench import cli

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(["hitrate", "--model", "m", "--num-requests", "2", "--input-len", "64", "--prefix-len", "32",
                         "--output", str(tmp_path / "r.json"), *args])
    return code, err.getvalue().strip().splitlines()


def test_a_missing_router_binary_is_exit_1_in_one_line_before_any_request(tmp_path, monkeypatch):
    monkeypatch.setenv("PREFIXBENCH_VLLM_ROUTER", str(tmp_path / "nowhere" / "vllm-router"))
    with fake_server() as a, fake_server() as b:
        code, lines = _hitrate(tmp_path, "--endpoint", a.base_url, "--endpoint", b.base_url, "--router", "round_robin")
        assert (code, len(lines)) == (1, 1) and lines[0].startswith("error: --router: PREFIXBENCH_VLLM_ROUTER=")
        assert a.requests_seen == b.requests_seen == 0
    assert not (tmp_path / "r.json").exists()


def test_a_flag_the_router_refuses_is_exit_1_in_one_line_before_any_request(tmp_path):
    binary = Path(sys.executable).parent / "vllm-router"
    if not binary.is_file() and not shutil.which("vllm-router"):
        pytest.skip("vllm-router is not installed (requirements-backend.txt)")
    with fake_server() as a, fake_server() as b:
        code, lines = _hitrate(tmp_path, "--endpoint", a.base_url, "--endpoint", b.base_url, "--router", "round_robin",
                               "--router-arg=--no-such-flag")
        assert (code, len(lines)) == (1, 1), lines
        assert lines[0].startswith("error: --router: vllm-router exited with code 2 at startup") and \
            "--no-such-flag" in lines[0]
        assert a.prompts == b.prompts == []
    assert not (tmp_path / "r.json").exists()


def test_the_router_a_run_starts_is_stopped_when_the_run_ends(tmp_path, monkeypatch):
    """Through a real vllm-router in front of two fake replicas: the requests go through it, and its process is
    gone once hitrate returns."""
    binary = Path(sys.executable).parent / "vllm-router"
    if not binary.is_file() and not shutil.which("vllm-router"):
        pytest.skip("vllm-router is not installed (requirements-backend.txt)")
    from backend_fixtures import prometheus_text

    from tools.prefixbench.serve import router as router_module

    started = []
    real_start = router_module.VllmRouter.start

    def start(self):
        started.append(self)
        return real_start(self)

    monkeypatch.setattr(router_module.VllmRouter, "start", start)
    models = {"object": "list", "data": [{"id": "m", "object": "model"}]}
    servers: list = []

    def counting(i: int):
        """A replica's counters with vLLM's finished-request counter, so the placement is read after each request
        (without it each one waits out replicas.OBSERVE_TIMEOUT_S)."""
        return lambda: prometheus_text(0, 0) + ("# TYPE vllm:request_success_total counter\n"
                                                f'vllm:request_success_total{{engine="0",finished_reason="length"}} '
                                                f"{len(servers[i].prompts)}\n")

    with fake_server(models=models, metrics=counting(0)) as a, fake_server(models=models, metrics=counting(1)) as b:
        servers += [a, b]
        code, lines = _hitrate(tmp_path, "--endpoint", a.base_url, "--endpoint", b.base_url, "--router", "round_robin",
                               "--no-prefill")
        sent = len(a.prompts) + len(b.prompts)
    assert len(started) == 1 and started[0].process is not None
    assert started[0].process.poll() is not None, "the router outlived the run"
    assert sent == 2, (code, lines)
