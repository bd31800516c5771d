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
