"""A server that wants an API key (vLLM's ``--api-key``): the key comes from ``$PREFIXBENCH_API_KEY`` only, goes
to every address of the run as a bearer token, and is never written into a result; a missing or wrong key is one
line naming the variable, before anything is measured. Against fake servers (the real one:
tests/prefixbench/run/test_api_key_vllm.py)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("aiohttp")

from backend_fixtures import FakeServer, prometheus_text, two_fake_servers, write_workload  # noqa: E402

from tools.prefixbench.cli.main import main  # noqa: E402

KEY = "s3cret-key-for-tests"
MODELS = {"data": [{"id": "m"}]}


def _hitrate(server, out):
    return main(["hitrate", "--endpoint", server.base_url, "--model", "m", "--num-requests", "4", "--input-len",
                 "64", "--hit-rate", "0.5", "--output-len", "2", "--block-size", "16", "--reset-cache",
                 "--output", str(out), "--json"])


def test_with_the_key_every_request_carries_it_and_no_file_holds_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PREFIXBENCH_API_KEY", KEY)
    out = tmp_path / "r.json"
    with FakeServer(metrics=lambda: prometheus_text(0, 0), models=MODELS, api_key=KEY) as server:
        code = _hitrate(server, out)
    assert code == 0, capsys.readouterr().err[-2000:]
    result = json.loads(out.read_text())
    assert result["status"] == "ok" and len(result["requests"]) == 4
    assert len(server.prompts) == 4 + result["config"]["prefix_num"]  # the prefill, then the measured requests
    assert set(server.authorizations) == {f"Bearer {KEY}"}  # completions, models, metrics and the cache reset
    assert KEY not in out.read_text() and KEY not in capsys.readouterr().out


@pytest.mark.parametrize("given, said", [(None, "wants an API key"), ("wrong", "refused the key")])
def test_a_missing_or_wrong_key_is_one_line_naming_the_variable_and_nothing_is_sent(given, said, tmp_path,
                                                                                    monkeypatch, capsys):
    if given is None:
        monkeypatch.delenv("PREFIXBENCH_API_KEY", raising=False)
    else:
        monkeypatch.setenv("PREFIXBENCH_API_KEY", given)
    with FakeServer(metrics=lambda: prometheus_text(0, 0), models=MODELS, api_key=KEY) as server:
        code = _hitrate(server, tmp_path / "r.json")
    err = capsys.readouterr().err.strip()
    assert code == 1 and len(err.splitlines()) == 1, err
    assert err.startswith("error: PREFIXBENCH_API_KEY:") and said in err and "HTTP 401" in err, err
    assert server.prompts == [] and not (tmp_path / "r.json").exists()


def test_g0g1_against_servers_that_want_the_key(tmp_path, monkeypatch, capsys):
    write_workload(tmp_path / "w.jsonl", 3, max_tokens=2)
    argv = ["g0g1", "--model", "m", "--warmup", "0", "--workload", str(tmp_path / "w.jsonl"),
            "--out", str(tmp_path / "out"), "--json"]
    with two_fake_servers(api_key=KEY) as (g0, g1):
        monkeypatch.delenv("PREFIXBENCH_API_KEY", raising=False)
        refused = main([*argv, "--g0-endpoint", g0.base_url, "--g1-endpoint", g1.base_url])
        err = capsys.readouterr().err.strip()
        monkeypatch.setenv("PREFIXBENCH_API_KEY", KEY)
        code = main([*argv, "--g0-endpoint", g0.base_url, "--g1-endpoint", g1.base_url])
    assert refused == 1 and "PREFIXBENCH_API_KEY" in err and len(err.splitlines()) == 1, err
    assert code in (0, 2), capsys.readouterr().err[-2000:]
    for name in ("69_prefix_cache.json", "69_prefix_cache_g0_cache_off.json", "69_prefix_cache_g1_prefix_cache.json"):
        text = (tmp_path / "out" / name).read_text()
        assert KEY not in text and json.loads(text)["status"] in ("ok", "accept", "tune", "reject"), name
    assert len(g1.prompts) == 3 and f"Bearer {KEY}" in g1.authorizations


def test_a_key_no_header_can_carry_is_one_line_that_does_not_repeat_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PREFIXBENCH_API_KEY", "pasted\u2019key")  # a curly quote: not Latin-1, not a header
    with FakeServer(metrics=lambda: prometheus_text(0, 0), models=MODELS, api_key=KEY) as server:
        code = _hitrate(server, tmp_path / "r.json")
    err = capsys.readouterr().err.strip()
    assert code == 1 and len(err.splitlines()) == 1 and err.startswith("error: PREFIXBENCH_API_KEY:"), err
    assert "pasted" not in err and server.prompts == []


def test_the_router_we_start_is_ready_behind_keyed_replicas_and_its_recorded_command_hides_the_key(monkeypatch):
    """vllm-router takes the workers' key as ``--api-key``; the readiness probe sends ours (it once waited out its
    whole timeout in front of replicas that want a key), and ``describe()`` (what a result records) hides it, as
    the servers' own command lines do."""
    from tools.prefixbench.serve.router import RouterConfig, RouterError, VllmRouter, router_binary
    from tools.prefixbench.serve.server import ServerConfig, VllmServer

    try:
        router_binary()
    except RouterError as exc:
        pytest.skip(str(exc))
    monkeypatch.setenv("PREFIXBENCH_API_KEY", KEY)
    with FakeServer(metrics=lambda: prometheus_text(0, 0), models=MODELS, api_key=KEY) as a, \
            FakeServer(metrics=lambda: prometheus_text(0, 0), models=MODELS, api_key=KEY) as b:
        router = VllmRouter(RouterConfig(workers=[a.base_url, b.base_url], startup_timeout_s=30,
                                         extra_args=("--api-key", KEY)))
        try:
            router.start()
            recorded = json.dumps(router.describe())
        finally:
            router.stop()
    assert KEY not in recorded and '"--api-key", "<redacted>"' in recorded, recorded
    server = VllmServer(ServerConfig(model="m", served_model_name="m", enable_prefix_caching=True,
                                     extra_args=(f"--api-key={KEY}",)))
    assert "--api-key=<redacted>" in server.describe()["argv"] and KEY not in json.dumps(server.describe())


def test_g0g1_refuses_a_key_no_header_can_carry_before_it_starts_a_server(tmp_path, monkeypatch, capsys):
    from tools.prefixbench.serve.server import VllmServer

    monkeypatch.setattr(VllmServer, "start", lambda self: pytest.fail("a server started"))
    monkeypatch.setenv("PREFIXBENCH_API_KEY", "line\nbreak")
    code = main(["g0g1", "--model", "tiny", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert code == 1 and len(err.splitlines()) == 1 and err.startswith("error: PREFIXBENCH_API_KEY:"), err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", [["sessions", "--users", "2", "--turns", "2", "--output-len", "2"],
                                     ["isolation", "--tenants", "2", "--requests-per-tenant", "2"],
                                     ["replay", "--trace", "{tmp}/t.jsonl", "--block-tokens", "8", "--speed", "20"]])
def test_the_other_live_commands_send_the_key_and_without_it_stop_in_one_line(command, tmp_path, monkeypatch,
                                                                               capsys):
    """``sessions``, ``isolation`` and ``replay`` reach the server through the same probe and client as
    ``hitrate``."""
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(line) + "\n" for line in [
        {"timestamp": 0, "input_length": 1024, "output_length": 2, "hash_ids": [1, 2]},
        {"timestamp": 20, "input_length": 1500, "output_length": 2, "hash_ids": [1, 2, 3]}]))
    argv = [*command, "--endpoint", "{url}", "--model", "m", "--block-size", "16", "--output", str(tmp_path / "r.json")]
    with FakeServer(metrics=lambda: prometheus_text(0, 0), models=MODELS, api_key=KEY) as server:
        monkeypatch.delenv("PREFIXBENCH_API_KEY", raising=False)
        refused = main([a.format(url=server.base_url, tmp=tmp_path) for a in argv])
        err = capsys.readouterr().err.strip()
        assert refused == 1 and err.startswith("error: PREFIXBENCH_API_KEY:") and server.prompts == [], err
        monkeypatch.setenv("PREFIXBENCH_API_KEY", KEY)
        before = len(server.authorizations)
        code = main([a.format(url=server.base_url, tmp=tmp_path) for a in argv])
    assert code == 0, capsys.readouterr().err[-2000:]
    assert server.prompts and set(server.authorizations[before:]) == {f"Bearer {KEY}"}
    assert KEY not in (tmp_path / "r.json").read_text()
