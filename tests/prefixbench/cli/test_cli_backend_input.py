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
