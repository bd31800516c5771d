"""``hitrate --twin vllm`` where vLLM cannot be imported: one line naming the flag, before any request."""

from __future__ import annotations

import importlib.util

from backend_fixtures import FakeServer

from tools.prefixbench.cli import main


def test_twin_vllm_without_vllm_is_refused_in_one_line_before_any_request(tmp_path, monkeypatch, capsys):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real(name, *a))
    with FakeServer() as server:
        code = main(["hitrate", "--endpoint", server.base_url, "--model", "m", "--num-requests", "2",
                     "--input-len", "32", "--output", str(tmp_path / "r.json"), "--twin", "vllm"])
        sent = server.requests_seen
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "--twin" in err[0] and "vllm is not importable" in err[0], err
    assert sent == 0 and not (tmp_path / "r.json").exists()
