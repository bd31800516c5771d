"""g0g1 input errors: one line, exit 1, no server started."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("prometheus_client")




def test_cli_bad_input_is_one_line_without_starting_a_server(tmp_path):
    env = {**os.environ, "PREFIXBENCH_CACHE": str(tmp_path)}
    for args, field in ((["--num-prompts", "999"], "num_prompts"), (["--warmup", "-1"], "--warmup"),
                        (["--max-overhead", "-1"], "max_overhead"), (["--num-prompts", "0"], "--num-prompts")):
        proc = subprocess.run([sys.executable, "-m", "tools.prefixbench", "g0g1", "--model", "tiny",
                               "--out", str(tmp_path), *args], capture_output=True, text=True, timeout=120, env=env)
        assert proc.returncode == 1, proc.stderr
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
        assert field in proc.stderr
    assert not list(tmp_path.glob("69_*.json"))
    assert not (tmp_path / "models").exists()  # refused before the tiny model was built into the cache


def test_a_workload_named_like_a_report_file_is_refused_before_anything_starts(tmp_path, capsys):
    """The Markdown and the drift picture g0g1 writes beside its manifests would replace the workload."""
    from tools.prefixbench.cli import main

    workload = tmp_path / "69_prefix_cache.md"
    workload.write_text('{"id": "r0", "prompt_token_ids": [1, 2, 3], "max_tokens": 1}\n')
    before = workload.read_bytes()
    assert main(["g0g1", "--model", "m", "--g0-endpoint", "http://127.0.0.1:9", "--g1-endpoint",
                 "http://127.0.0.1:9", "--workload", str(workload), "--out", str(tmp_path)]) == 1
    assert workload.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == [workload.name]
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--out (69_prefix_cache.md)" in err and "--workload" in err, err


def _fake_g0g1(tmp_path, out, servers) -> list[str]:
    workload = tmp_path / "w.jsonl"
    workload.write_text("".join(f'{{"id": "r{i}", "prompt_token_ids": {list(range(1, 49)) + [1000 + i] * 32}, '
                                f'"max_tokens": 2}}\n' for i in range(3)))
    g0, g1 = servers
    return ["g0g1", "--model", "m", "--g0-endpoint", g0.base_url, "--g1-endpoint", g1.base_url, "--workload",
            str(workload), "--out", str(out), "--json"]


@pytest.mark.parametrize("kind", ["file", "folder", "link"])
def test_someone_elses_report_file_in_out_is_refused_and_kept_before_anything_starts(kind, tmp_path, capsys):
    from tools.prefixbench.cli import main

    out = tmp_path / "out"
    out.mkdir()
    theirs = out / ("69_prefix_cache_drift.png" if kind == "folder" else "69_prefix_cache.md")
    target = tmp_path / "elsewhere.md"  # a link to a file that even begins as the Markdown does
    target.write_text("# Prefix cache G0 / G1: someone else's\n")
    if kind == "file":
        theirs.write_text("my notes\n")
    elif kind == "link":
        theirs.symlink_to(target)
    else:
        theirs.mkdir()
    assert main(["g0g1", "--model", "m", "--g0-endpoint", "http://127.0.0.1:9", "--g1-endpoint",
                 "http://127.0.0.1:9", "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"--out ({theirs.name})" in err, err
    assert sorted(p.name for p in out.iterdir()) == [theirs.name]
    assert kind != "file" or theirs.read_text() == "my notes\n"
    assert target.read_text() == "# Prefix cache G0 / G1: someone else's\n" and (kind != "link" or theirs.is_symlink())


def test_a_rerun_replaces_its_own_report_and_a_stopped_run_leaves_its_own(tmp_path, monkeypatch, capsys):
    """The second run replaces the Markdown and drift picture the first wrote; a run stopped by Ctrl-C writes
    the Markdown of its interrupted summary, so the first run's table does not stay beside it."""
    from backend_fixtures import CacheOffFakeServer, CachingFakeServer

    from tools.prefixbench.cli import main
    from tools.prefixbench.run import g0g1

    out = tmp_path / "out"
    with CacheOffFakeServer() as a, CachingFakeServer() as b:
        argv = _fake_g0g1(tmp_path, out, (a, b))
        assert main(argv) == 0 and main(argv) == 0
        assert (out / "69_prefix_cache.md").read_text().startswith("# Prefix cache G0 / G1: m")

        def stopped(*_args, **_kwargs):
            raise KeyboardInterrupt

        monkeypatch.setattr(g0g1, "_run_groups", stopped)
        assert main(argv) != 0
    capsys.readouterr()
    md = (out / "69_prefix_cache.md").read_text()
    assert "Status interrupted" in md and "No G0 / G1 comparison: interrupted during None." in md, md
