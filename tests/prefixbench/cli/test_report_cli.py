"""``prefixbench report`` on the live commands' results: a sessions, replay or isolation result (made once per
module against a fake server, as tests/prefixbench/run/test_sessions.py and its neighbours make them) re-renders
to exactly the Markdown (and plot) the command wrote; an unknown schema or a damaged result is exit 1, one line."""

from __future__ import annotations

import json
import shutil

import pytest

from backend_fixtures import FakeServer

from tools.prefixbench import cli
from tools.prefixbench.cli import report as report_cli
from tools.prefixbench.core.records import SCHEMA_SESSIONS


def _first_cold_then_one_block():
    """``cached_tokens``: 0 for the first prompt, one 128-token block for every later one that long: the reports
    then have hits, leaks and costs to show."""
    calls = []

    def cached(prompt: list[int]) -> int:
        calls.append(len(prompt))
        return 0 if len(calls) == 1 else min(128, len(prompt) - 1) // 128 * 128

    return cached


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict:
    """One result of each live command, with the files the command wrote beside it."""
    folder = tmp_path_factory.mktemp("live")
    trace = folder / "t.jsonl"
    trace.write_text("".join(json.dumps(line) + "\n" for line in [
        {"timestamp": 0, "input_length": 1024, "output_length": 8, "hash_ids": [1, 2]},
        {"timestamp": 20, "input_length": 1500, "output_length": 8, "hash_ids": [1, 2, 3]}]))
    server_flags = ["--model", "m", "--block-size", "32", "--json"]
    runs = {"sessions_g0": ["sessions", "--users", "2", "--turns", "2"],
            "sessions": ["sessions", "--users", "2", "--turns", "2", "--baseline", str(folder / "sessions_g0.json")],
            "replay": ["replay", "--trace", str(trace), "--block-tokens", "8", "--speed", "20"],
            "isolation": ["isolation", "--seed", "5", "--prompt-len", "200", "--tenants", "2",
                          "--requests-per-tenant", "2"]}
    with FakeServer(cached_tokens=_first_cold_then_one_block(), models={"data": [{"id": "m"}]}) as server:
        for name, argv in runs.items():
            code = cli.main([*argv, "--endpoint", server.base_url, *server_flags,
                             "--output", str(folder / f"{name}.json")])
            assert code == 0, name
    return {name: folder / f"{name}.json" for name in runs}


@pytest.mark.parametrize("kind, plotted", [("sessions", True), ("replay", False), ("isolation", False)])
def test_report_re_renders_what_the_command_wrote(kind, plotted, results, tmp_path, capsys):
    result = tmp_path / f"{kind}.json"
    shutil.copy(results[kind], result)
    written = results[kind].with_suffix(".md").read_text()
    assert cli.main(["report", str(result)]) == 0
    assert result.with_suffix(".md").read_text() == written
    assert result.with_suffix(".png").exists() == plotted
    if plotted:
        assert result.with_suffix(".png").read_bytes()[:4] == b"\x89PNG"
    assert cli.main(["report", str(result), "--output", str(tmp_path / "again.md"), "--print"]) == 0
    assert capsys.readouterr().out.strip() == written.strip()


def test_the_sessions_report_shows_its_baseline_and_survives_its_plot_failing(results, tmp_path, monkeypatch,
                                                                              capsys):
    def broken(result, path):
        raise RuntimeError("no display")

    render, _ = report_cli.RENDERERS[SCHEMA_SESSIONS]
    monkeypatch.setitem(report_cli.RENDERERS, SCHEMA_SESSIONS, (render, broken))
    assert cli.main(["report", str(results["sessions"]), "--output", str(tmp_path / "s.md")]) == 0
    assert "cache off (G0) vs on (G1)" in (tmp_path / "s.md").read_text()
    assert "the plot was not drawn: RuntimeError: no display" in capsys.readouterr().err
    assert not (tmp_path / "s.png").exists()


def _damaged(source, tmp_path, change) -> str:
    data = json.loads(source.read_text())
    change(data)
    path = tmp_path / "damaged.json"
    path.write_text(json.dumps(data))
    return str(path)


def _set(path: str, value):
    def change(data):
        *parents, last = path.split(".")
        node = data
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        node[last] = value
    return change


@pytest.mark.parametrize("kind, change, field", [
    ("sessions", _set("per_turn.0.cached_rate", "50%"), "damaged.json.per_turn[0].cached_rate: must be a number"),
    ("sessions", _set("per_turn.0.cached_rate", 3.5), "damaged.json.per_turn[0].cached_rate: must be in [0, 1]"),
    ("sessions", lambda d: d["baseline"]["per_turn"][0].pop("speedup"), "baseline.per_turn[0]: is missing speedup"),
    ("replay", _set("skipped", [1]), "damaged.json.skipped: must be a JSON object"),
    ("replay", _set("attribution.summary.lost_tokens", 7), "attribution.summary.lost_tokens: must be an object"),
    ("isolation", lambda d: d["requests"][0].pop("phase"), "damaged.json.requests[0]: is missing phase"),
    ("isolation", _set("cost.predicted_cost_points", "1"), "damaged.json.cost.predicted_cost_points"),
])
def test_a_damaged_live_result_is_exit_1_and_one_line_naming_the_field(kind, change, field, results, tmp_path,
                                                                        capsys):
    code = cli.main(["report", _damaged(results[kind], tmp_path, change)])
    err = capsys.readouterr().err.strip()
    assert code == 1 and len(err.splitlines()) == 1 and field in err and "Traceback" not in err, err
    assert not (tmp_path / "damaged.md").exists()


@pytest.mark.parametrize("kind, change, line", [
    ("replay", _set("trace_hit_rate.token_hit_rate", None), "| trace (paper's blocks, unbounded cache) | 512 | n/a |"),
    ("isolation", _set("cost.salted", None), "| salted | n/a | n/a | n/a |"),
    ("sessions", _set("attribution.summary.lost_tokens", None), "n/a in partial blocks, n/a by the last-token rule"),
])
def test_a_value_that_was_not_measured_renders_as_n_a(kind, change, line, results, tmp_path):
    assert cli.main(["report", _damaged(results[kind], tmp_path, change)]) == 0
    assert line in (tmp_path / "damaged.md").read_text()


@pytest.mark.parametrize("body", [{"schema": "prefixbench.backend_group/1", "status": "ok"}, {"status": "ok"}, [1, 2]])
def test_an_unknown_schema_is_exit_1_one_line_naming_the_file_and_what_report_takes(body, tmp_path, capsys):
    path = tmp_path / "other.json"
    path.write_text(json.dumps(body))
    assert cli.main(["report", str(path)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{path}: schema" in err and "sessions result" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.json"]


def test_report_renders_a_g0g1_summary_and_its_drift_from_the_manifests_beside_it(tmp_path, capsys):
    """The G0 / G1 summary's console rows as Markdown, the drift picture from the group manifests beside it; the
    summary copied alone elsewhere still renders, and the missing plot is one warning line."""
    from backend_fixtures import CacheOffFakeServer, CachingFakeServer

    from tools.prefixbench.report.tables import g0g1_rows

    shared = list(range(1, 49))
    workload = tmp_path / "w.jsonl"
    workload.write_text("".join(json.dumps({"id": f"r{i}", "max_tokens": 2, "prompt_token_ids": shared + [
        1000 + 100 * i + k for k in range(32)]}) + "\n" for i in range(4)))
    out = tmp_path / "out"
    with CacheOffFakeServer() as g0, CachingFakeServer() as g1:
        assert cli.main(["g0g1", "--model", "m", "--g0-endpoint", g0.base_url, "--g1-endpoint", g1.base_url,
                         "--workload", str(workload), "--out", str(out), "--json"]) == 0
    summary = out / "69_prefix_cache.json"
    capsys.readouterr()
    assert cli.main(["report", str(summary)]) == 0
    md = (out / "69_prefix_cache.md").read_text()
    rows = g0g1_rows(json.loads(summary.read_text()))
    assert rows["hit rate (evidence)"] == "0.450 (backend_metrics)"  # 3 of 5 blocks per request after the first
    assert "| hit rate (evidence) | 0.450 (backend_metrics) |" in md and f"| decision | {rows['decision']} |" in md
    assert "| g1_prefix_cache | ok |" in md and (out / "69_prefix_cache.png").stat().st_size > 0
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(summary, alone)
    capsys.readouterr()
    assert cli.main(["report", str(alone / "69_prefix_cache.json")]) == 0
    err = capsys.readouterr().err
    assert "the plot was not drawn" in err and "g0_cache_off and g1_prefix_cache" in err, err
    assert (alone / "69_prefix_cache.md").read_text() == md and not (alone / "69_prefix_cache.png").exists()
    # the manifests are inputs too: --output onto one is refused, and it is kept
    manifest = out / "69_prefix_cache_g1_prefix_cache.json"
    before = manifest.read_bytes()
    capsys.readouterr()
    assert cli.main(["report", str(summary), "--output", str(manifest)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "g1_prefix_cache manifest" in err, err
    assert manifest.read_bytes() == before
    # a manifest of another run (a rerun that ended before G1 leaves the previous G1 manifest): no plot from it
    other = json.loads(before)
    other["normalized_result"]["hit_rate"] = 0.25
    manifest.write_text(json.dumps(other))
    (out / "69_prefix_cache.png").unlink()
    assert cli.main(["report", str(summary)]) == 0
    assert "this run's g1_prefix_cache" in capsys.readouterr().err and not (out / "69_prefix_cache.png").exists()


def test_a_g0g1_summary_that_ended_early_says_why_and_escapes_its_cells(tmp_path):
    from tools.prefixbench.report.g0g1 import render_g0g1_markdown

    summary = {"schema": "prefixbench.g0g1_summary/1", "status": "interrupted", "config": {"model": "a|b"},
               "reason": "interrupted during g1_prefix_cache", "groups": [
                   {"group": {"name": "g0_cache_off"}, "status": "ok", "error": None, "report_path": "x.json"},
                   {"group": {"name": "g1_prefix_cache"}, "status": "failed", "error": "line 1\nline | 2",
                    "report_path": "y.json"}]}
    path = tmp_path / "69_prefix_cache.json"
    path.write_text(json.dumps(summary))
    assert cli.main(["report", str(path)]) == 0
    md = (tmp_path / "69_prefix_cache.md").read_text()
    assert md == render_g0g1_markdown(summary)
    assert "No G0 / G1 comparison: interrupted during g1_prefix_cache." in md and "# Prefix cache G0 / G1: a\\|b" in md
    assert "| g1_prefix_cache | failed | line 1 line \\| 2 | y.json |" in md
    assert "| decision | n/a |" in md  # nothing was decided
