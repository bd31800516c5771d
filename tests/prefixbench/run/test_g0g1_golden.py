"""The G0 / G1 files (both group manifests, the summary) and a sweep's file, from the CLI against fake servers the
user "started", against committed golden files: a refactor may move code, never change what is written. Timings,
timestamps, the environment, ports and folders are normalised away; everything else must be equal, key order
included (the files are compared as text). The client's clock is a counter (``TickingClock``), so latencies,
the paired statistics and the decision they feed are the same on every run; at concurrency 1 the order of clock
reads is fixed. ``PREFIXBENCH_WRITE_GOLDEN=1`` rewrites them (then read the diff)."""

from __future__ import annotations

import json
import os
import time
from contextlib import ExitStack
from pathlib import Path

import pytest

pytest.importorskip("aiohttp")

from backend_fixtures import CacheOffFakeServer, CachingFakeServer  # noqa: E402
from golden_files import normalized  # noqa: E402

from tools.prefixbench.cli import main  # noqa: E402

GOLDEN = Path(__file__).with_name("golden")
G0, G1, SUMMARY = ("69_prefix_cache_g0_cache_off.json", "69_prefix_cache_g1_prefix_cache.json",
                   "69_prefix_cache.json")
SWEEP = "69_prefix_cache_sweep.json"
BLOCK = CachingFakeServer.block


class TickingClock:
    """``time`` for the client and the interleaved schedule: ``perf_counter`` advances 1/1024 s per read (a power
    of two, so differences of readings are exact: equal latencies give a difference of exactly 0, never a
    rounding error whose sign could flip a decision when the client reads its clock once more)."""

    def __init__(self):
        self.reads = 0

    def perf_counter(self) -> float:
        self.reads += 1
        return self.reads / 1024

    def __getattr__(self, name):
        return getattr(time, name)


def _workload(path: Path) -> Path:
    """Six requests sharing a 3-block prefix, each with its own 2-block suffix."""
    shared = list(range(1, 3 * BLOCK + 1))
    lines = [{"id": f"r{i}", "prompt_token_ids": shared + [1000 + 100 * i + k for k in range(2 * BLOCK)],
              "max_tokens": 2} for i in range(6)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


MORE_KEYS = {"updated_at", "port"}
"""Beside golden_files.TIMING_KEYS: the summary's rewrite time and the servers' ports."""


def _without(value, keys: set):
    if isinstance(value, dict):
        return {k: _without(v, keys) for k, v in value.items() if k not in keys}
    return [_without(v, keys) for v in value] if isinstance(value, list) else value


def _text(data, tmp: Path) -> str:
    data = json.loads(json.dumps(data).replace(str(tmp), "TMP"))
    return json.dumps(normalized(_without(data, MORE_KEYS)), indent=1) + "\n"


def _check(name: str, got: str) -> None:
    path = GOLDEN / name
    if os.environ.get("PREFIXBENCH_WRITE_GOLDEN"):
        path.write_text(got)
    assert got == path.read_text()


CASES = {
    "g0g1": (["g0g1", "--num-prompts", "6", "--warmup", "1", "--concurrency", "1"], (G0, G1, SUMMARY)),
    "g0g1_repeats": (["g0g1", "--repeats", "2", "--warmup", "0", "--schedule", "sequential"], (G0, G1, SUMMARY)),
    "g0g1_replicas": (["g0g1", "--replicas", "2", "--routing", "prefix_affinity,round_robin", "--warmup", "1",
                       "--concurrency", "1", "--schedule", "sequential"], (G0, G1, SUMMARY)),
    "g0g1_reset": (["g0g1", "--repeats", "2", "--warmup", "1", "--concurrency", "1"], (G0, G1, SUMMARY)),
    "sweep": (["sweep", "--concurrency", "1", "--repeats", "2", "--ttft-slo-ms", "100"], (SWEEP,)),
}
RESETTING = {"g0g1_reset"}
"""Cases whose fake servers honour ``/reset_prefix_cache`` (the main job's path: the servers it starts run with
``VLLM_SERVER_DEV_MODE=1``); the others answer 404, as a server the user started without it does."""


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_g0g1_and_sweep_files_are_the_golden_ones_apart_from_timings(case, tmp_path, monkeypatch, capsys):
    argv, files = CASES[case]
    workload, out = _workload(tmp_path / "w.jsonl"), tmp_path / "out"
    monkeypatch.chdir(tmp_path)
    from tools.prefixbench.measure import client
    from tools.prefixbench.run import interleave

    clock = TickingClock()
    monkeypatch.setattr(client, "time", clock)
    monkeypatch.setattr(interleave, "time", clock)
    replicas = int(argv[argv.index("--replicas") + 1]) if "--replicas" in argv else 1
    with ExitStack() as servers:
        endpoints = []
        for _ in range(replicas):
            for kind, flag in ((CacheOffFakeServer, "--g0-endpoint"), (CachingFakeServer, "--g1-endpoint")):
                endpoints += [flag, servers.enter_context(kind(resets=case in RESETTING)).base_url]
        code = main([argv[0], "--model", "m", *endpoints, "--workload", str(workload), "--out", str(out), "--json",
                     *argv[1:]])
    assert code == 0, capsys.readouterr().err[-2000:]
    got = {name: json.loads((out / name).read_text()) for name in files}
    if SUMMARY in files:  # the summary's table as Markdown beside it, what `prefixbench report` renders again
        from tools.prefixbench.report.g0g1 import render_g0g1_markdown

        assert (out / "69_prefix_cache.md").read_text() == render_g0g1_markdown(got[SUMMARY])
    _check(f"{case}.json", _text({"exit": code, "files": got}, tmp_path))
    _check(f"{case}_report.txt", _report(case, got, capsys).replace(str(tmp_path), "TMP"))


def _report(case: str, files: dict, capsys) -> str:
    """What the reports make of the files: the G0 / G1 table, or the sweep's markdown."""
    from tools.prefixbench.report.sweep import render_sweep_markdown
    from tools.prefixbench.report.tables import print_g0g1_report

    if case == "sweep":
        return render_sweep_markdown(files[SWEEP])
    capsys.readouterr()
    print_g0g1_report(files[SUMMARY])
    return capsys.readouterr().out
