"""Simulated replicas: one pool per replica, placed by a routing policy, checked against independent replays."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from tools.prefixbench.core.errors import InputError
from tools.prefixbench.core.paths import REPO_ROOT
from tools.prefixbench.simulate.replay import replay_trace
from tools.prefixbench.simulate.routing import BALANCE, Cluster, compare_routings, route_trace
from tools.prefixbench.workload.traces import TraceRequest, load_trace


def _trace(n: int = 400, prefixes: int = 6, seed: int = 0) -> list[TraceRequest]:
    """Requests that start with one of ``prefixes`` shared chains (2-6 blocks) and end with unique blocks."""
    rng = random.Random(seed)
    chains = [[1000 * p + b for b in range(rng.randint(2, 6))] for p in range(prefixes)]
    out, fresh = [], 10**6
    for _ in range(n):
        chain = list(rng.choice(chains))
        tail = rng.randint(1, 4)
        ids = chain + list(range(fresh, fresh + tail))
        fresh += tail
        out.append(TraceRequest(512 * len(ids) - rng.randint(0, 300), tuple(ids)))
    return out


@pytest.mark.parametrize("routing", ["round_robin", "least_loaded", "prefix_affinity", "prefix_affinity_bounded"])
def test_one_replica_is_the_single_cache_replay(routing):
    trace = _trace()
    for capacity in (None, 20):
        single = replay_trace(trace, capacity, last_token_rule=True)
        routed = route_trace(trace, 1, routing, capacity, last_token_rule=True)
        assert routed["hit_tokens"] == single["hit_tokens"] and routed["input_tokens"] == single["input_tokens"]
        assert routed["per_replica"][0]["eviction_count"] == single["eviction_count"]


def test_round_robin_is_every_replica_replaying_its_share():
    trace = _trace(seed=1)
    for replicas in (2, 3, 4):
        routed = route_trace(trace, replicas, "round_robin", 15)
        for i, replica in enumerate(routed["per_replica"]):
            alone = replay_trace(trace[i::replicas], 15)
            assert (replica["hit_tokens"], replica["prompt_tokens"]) == (alone["hit_tokens"], alone["input_tokens"])
        assert routed["hit_tokens"] == sum(r["hit_tokens"] for r in routed["per_replica"])


def test_with_unlimited_pools_prefix_affinity_loses_nothing_and_round_robin_does():
    """A replica that holds block k of a chain holds its whole prefix, so the longest match anywhere is the
    single cache's match; round robin splits each prefix over the replicas and computes it on each."""
    trace = _trace(seed=2)
    single = replay_trace(trace, None)["hit_tokens"]
    result = compare_routings(trace, [2, 4], ["round_robin", "prefix_affinity"])
    by = {(r["replicas"], r["routing"]): r for r in result["results"]}
    for n in (2, 4):
        assert by[n, "prefix_affinity"]["hit_tokens"] == single
        assert by[n, "round_robin"]["hit_tokens"] < single
        assert by[n, "round_robin"]["hit_rate_lost_to_best"] > 0 == by[n, "prefix_affinity"]["hit_rate_lost_to_best"]
    assert by[4, "round_robin"]["hit_tokens"] < by[2, "round_robin"]["hit_tokens"]


def test_least_loaded_balances_work_and_the_bounded_affinity_caps_imbalance():
    trace = [TraceRequest(512 * 8, tuple([7] + list(range(100 * i, 100 * i + 7)))) for i in range(200)]
    free = route_trace(trace, 4, "prefix_affinity")  # every request shares block 7: one replica takes all
    assert free["load_imbalance"] == pytest.approx(4.0)
    bounded = route_trace(trace, 4, "prefix_affinity_bounded")
    assert bounded["load_imbalance"] <= BALANCE + 0.05
    balanced = route_trace(trace, 4, "least_loaded")
    assert balanced["load_imbalance"] < 1.05
    assert free["hit_tokens"] >= bounded["hit_tokens"] >= balanced["hit_tokens"]


def test_bad_arguments_name_the_field():
    with pytest.raises(InputError, match="routing"):
        Cluster(2, "random")
    with pytest.raises(InputError, match="replicas"):
        route_trace(_trace(10), 0, "round_robin")
    with pytest.raises(InputError, match="requests"):
        route_trace([{"input_length": 5}], 2, "round_robin")


def test_mooncake_conversation_round_robin_loses_more_with_more_replicas(shared_traces):
    trace = load_trace(shared_traces / "conversation_trace.jsonl")[:3000]
    result = compare_routings(trace, [2, 4, 8], ["round_robin", "prefix_affinity_bounded"], None)
    rr = [r for r in result["results"] if r["routing"] == "round_robin"]
    assert [r["replicas"] for r in rr] == [2, 4, 8]
    assert result["single_replica_token_hit_rate"] > rr[0]["token_hit_rate"] > rr[1]["token_hit_rate"] > \
        rr[2]["token_hit_rate"]
    bounded = [r for r in result["results"] if r["routing"] == "prefix_affinity_bounded"]
    assert all(b["token_hit_rate"] > r["token_hit_rate"] and b["load_imbalance"] <= BALANCE + 0.05
               for b, r in zip(bounded, rr))


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "tools.prefixbench", "trace", *args], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120)


def test_cli_routing_table_and_bad_flags(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"input_length": r.input_length, "hash_ids": list(r.hash_ids)}) + "\n"
                            for r in _trace(100)))
    proc = _cli(str(path), "--capacity", "inf", "--replicas", "1,2", "--routing", "round_robin,prefix_affinity",
                "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert [(r["replicas"], r["routing"]) for r in data["results"]] == [
        (1, "round_robin"), (1, "prefix_affinity"), (2, "round_robin"), (2, "prefix_affinity")]
    assert data["results"][2]["hit_tokens"] == route_trace(_trace(100), 2, "round_robin")["hit_tokens"]
    bad_flags = ((["--routing", "round_robin"], "--replicas"), (["--replicas", "2", "--routing", "nope"], "nope"),
                 (["--replicas", "0"], "--replicas"))
    for bad, field in bad_flags:
        proc = _cli(str(path), "--capacity", "inf", *bad)
        assert proc.returncode == 1 and field in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
