"""``sweep`` and the new ``g0g1`` flags refuse bad input with one line naming the field, before any server starts."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from backend_fixtures import FakeServer

from tools.prefixbench.cli.main import main

pytest.importorskip("aiohttp")


@pytest.mark.parametrize("argv, field", [
    (["sweep", "--concurrency", "2,1"], "concurrency"),
    (["sweep", "--concurrency", "1,x"], "--concurrency"),
    (["sweep", "--concurrency", "1", "--request-rates", "1"], "--request-rates"),
    (["sweep"], "--concurrency"),
    (["sweep", "--request-rates", "0"], "--request-rates"),
    (["sweep", "--concurrency", "1", "--ttft-slo-ms", "-1"], "--ttft-slo-ms"),
    (["sweep", "--concurrency", "1", "--repeats", "0"], "--repeats"),
    (["sweep", "--concurrency", "1", "--replicas", "2"], "routing"),
    (["sweep", "--concurrency", "1", "--routing", "round_robin"], "routing"),
    (["g0g1", "--repeats", "0"], "--repeats"),
    (["g0g1", "--replicas", "2", "--routing", "random"], "routing"),
    (["g0g1", "--replicas", "65", "--routing", "round_robin"], "--replicas"),
    (["g0g1", "--replicas", "2", "--routing", "round_robin,round_robin"], "routing"),
    # servers the user started: both groups, as many each, reachable, nothing g0g1 would set at start-up
    (["g0g1", "--g0-endpoint", "http://127.0.0.1:9"], "--g1-endpoint"),
    (["g0g1", "--g0-endpoint", "http://127.0.0.1:9", "--g1-endpoint", "http://127.0.0.1:9", "--g1-endpoint",
      "http://127.0.0.1:10"], "--g1-endpoint"),
    (["g0g1", "--g0-endpoint", "http://127.0.0.1:9", "--g1-endpoint", "http://127.0.0.1:10", "--kv-blocks", "16"],
     "--kv-blocks"),
    (["g0g1", "--g0-endpoint", "http://127.0.0.1:9", "--g1-endpoint", "http://127.0.0.1:10", "--replicas", "2",
      "--routing", "round_robin"], "--replicas"),
    (["g0g1", "--g0-endpoint", "http://127.0.0.1:9", "--g1-endpoint", "http://127.0.0.1:10"], "--g0-endpoint"),
    (["sweep", "--concurrency", "1", "--g0-endpoint", "localhost:1", "--g1-endpoint", "http://127.0.0.1:10"],
     "--g0-endpoint"),
    (["g0g1", "--dtype", "float99"], "--dtype"),
    (["sweep", "--concurrency", "1", "--dtype", "float99"], "--dtype"),
])
def test_bad_input_is_one_line_and_exit_1(argv, field, tmp_path, capsys):
    code = main([*argv, "--model", "tiny", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert code == 1 and len(err.splitlines()) == 1 and field in err, err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_the_sweep_never_writes_over_its_workload(tmp_path, capsys):
    workload = tmp_path / "69_prefix_cache_sweep.json"
    workload.write_text('{"id": "a", "prompt_token_ids": [11, 12], "max_tokens": 2}\n')
    code = main(["sweep", "--concurrency", "1", "--workload", str(workload), "--out", str(tmp_path)])
    assert code == 1 and "--out" in capsys.readouterr().err
    assert workload.read_text().startswith('{"id": "a"')


def test_a_routing_list_places_with_the_first_and_compares_them_all():
    from tools.prefixbench.run.replicas import check_replicas

    assert check_replicas(2, "prefix_affinity, round_robin") == {
        "replicas": 2, "routing": "prefix_affinity", "compare_routings": ["prefix_affinity", "round_robin"]}
    assert check_replicas(3, "least_loaded") == {"replicas": 3, "routing": "least_loaded", "compare_routings": None}
    assert check_replicas(1, None) == {"replicas": 1, "routing": None, "compare_routings": None}


class _Failing(FakeServer):
    """Answers like a server until ``failing`` is set, then every completion is HTTP 500."""

    failing = False

    async def _completions(self, request):
        from aiohttp import web

        if self.failing:
            return web.Response(status=500, text="the engine died")
        return await super()._completions(request)


def _tree(folder: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir() if p.is_file()}


def test_a_failed_rerun_keeps_the_first_runs_points_byte_for_byte_and_says_where(tmp_path, capsys):
    """Issue 25 B: the rerun moves the first run's ``points/`` aside whole (its per-request manifests included)
    before it writes a point of its own, keeps the sweep file as ``.previous.json``, and its one error line says
    where both are."""
    workload, out = tmp_path / "w.jsonl", tmp_path / "out"
    workload.write_text("".join(json.dumps({"id": f"r{i}", "prompt_token_ids": [10 + i] * 40, "max_tokens": 4})
                                + "\n" for i in range(3)))
    models = {"data": [{"id": "m"}]}
    with _Failing(models=models) as g0, _Failing(models=models) as g1:
        argv = ["sweep", "--model", "m", "--g0-endpoint", g0.base_url, "--g1-endpoint", g1.base_url,
                "--concurrency", "1,2", "--repeats", "1", "--workload", str(workload), "--out", str(out)]
        assert main(argv) == 0, capsys.readouterr().err[-2000:]
        first, sweep = _tree(out / "points"), (out / "69_prefix_cache_sweep.json").read_bytes()
        assert len([name for name in first if name.endswith("_prefix_cache.json")]) == 2
        capsys.readouterr()
        g1.failing = True
        code = main(argv)
    err = capsys.readouterr().err
    aside = out / "points.previous"
    assert code == 2 and _tree(aside) == first  # every manifest of the first run, byte for byte
    assert (out / "69_prefix_cache_sweep.previous.json").read_bytes() == sweep
    assert f"kept as {out / '69_prefix_cache_sweep.previous.json'} and {aside}" in err.strip().splitlines()[-1]
    assert json.loads((out / "69_prefix_cache_sweep.json").read_text())["previous"]["points"] == str(aside)
    rerun = _tree(out / "points")
    assert set(rerun) == set(first) and rerun != first  # the rerun's own points, G1's failed


@pytest.mark.parametrize("command", [["g0g1"], ["sweep", "--concurrency", "1", "--repeats", "1"]])
def test_no_progress_bar_goes_to_a_log(command, tmp_path, capsys):
    """stderr that is not a terminal (``2> log``, nohup, CI) gets the run's lines, never a progress bar's frames,
    as ``hitrate``, ``sessions`` and ``trace`` already did (a review helper found G0 / G1 bars in a redirected log)."""
    from backend_fixtures import two_fake_servers, write_workload

    workload = write_workload(tmp_path / "w.jsonl", 6)
    with two_fake_servers() as (g0, g1):
        code = main([*command, "--model", "m", "--g0-endpoint", g0.base_url, "--g1-endpoint", g1.base_url,
                     "--warmup", "0", "--workload", str(workload), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code in (0, 2) and "g0_cache_off" in err, err[-2000:]  # the run's own lines are there
    assert "%|" not in err and "\r" not in err, err[-2000:]
