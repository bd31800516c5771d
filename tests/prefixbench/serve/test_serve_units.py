"""Serving without a server: local model builds, model resolution, the server's command line."""

from __future__ import annotations

import json
import sys

import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("prometheus_client")


from tools.prefixbench.core.errors import InputError  # noqa: E402
from tools.prefixbench.workload import load_workload  # noqa: E402


def test_local_model_build_is_deterministic_and_covers_workload_ids(tmp_path, monkeypatch):
    from tools.prefixbench.serve import models

    hashes = []
    for name in ("a", "b"):
        monkeypatch.setenv("PREFIXBENCH_CACHE", str(tmp_path / name))
        path = models.ensure_local_model("tiny")
        record = models.build_record(path)
        hashes.append((record["weights_sha256"], (path / "tokenizer.json").read_bytes()))
        assert record["vocab_size"] >= models.MIN_VOCAB > max(max(p) for p in load_workload().prompts)
        assert json.loads((path / "config.json").read_text())["vocab_size"] == record["vocab_size"]
    assert hashes[0] == hashes[1]
    assert models.ensure_local_model("tiny") == path  # cached: same folder, no rebuild
    with pytest.raises(InputError, match="^model: "):
        models.ensure_local_model("huge")


def test_resolve_model_substitutes_only_when_auto_on_cpu(monkeypatch, tmp_path):
    from tools.prefixbench.serve.resolve import resolve_model

    monkeypatch.setenv("PREFIXBENCH_CACHE", str(tmp_path))
    monkeypatch.setenv("PREFIXBENCH_LOCAL_MODEL", "tiny")
    cpu, gpu = {"kind": "cpu"}, {"kind": "gpu"}
    assert resolve_model("Qwen/Qwen2.5-0.5B-Instruct", "auto", gpu).source == "hub"
    local = resolve_model("Qwen/Qwen2.5-0.5B-Instruct", "auto", cpu)
    assert local.source == "local" and local.local_name == "tiny"
    assert local.substituted_for == "Qwen/Qwen2.5-0.5B-Instruct"
    assert resolve_model("Qwen/Qwen2.5-0.5B-Instruct", "hub", cpu).path == "Qwen/Qwen2.5-0.5B-Instruct"
    with pytest.raises(InputError, match="^model_source: "):
        resolve_model("tiny", "cloud")


def test_a_model_folder_whose_build_record_lacks_the_parameter_count_resolves_without_it(tmp_path):
    """The count is what the record says or ``None`` (as for a local model), never a ``KeyError`` or ``{}``."""
    from tools.prefixbench.serve.models import BUILD_RECORD
    from tools.prefixbench.serve.resolve import resolve_model

    for record, parameters in (({"parameters": 1234}, 1234), ({"name": "older"}, None), ({}, None)):
        (tmp_path / BUILD_RECORD).write_text(json.dumps(record))
        resolved = resolve_model(str(tmp_path), "auto", {"kind": "cpu"})
        assert (resolved.source, resolved.parameters) == ("path", parameters), record
    (tmp_path / BUILD_RECORD).unlink()
    assert resolve_model(str(tmp_path), "auto", {"kind": "cpu"}).parameters is None  # any other folder


def test_server_command_is_a_list_bound_to_localhost_with_the_needed_switches():
    from tools.prefixbench.serve.server import ServerConfig, VllmServer

    on = VllmServer(ServerConfig(model="/m", served_model_name="m", enable_prefix_caching=True),
                    platform={"kind": "cpu"})
    off = VllmServer(ServerConfig(model="/m", served_model_name="m", enable_prefix_caching=False),
                     platform={"kind": "gpu"})
    argv = on.argv()
    assert argv[:3] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
    assert argv[argv.index("--host") + 1] == "127.0.0.1" and "--enable-prompt-tokens-details" in argv
    assert "--enable-prefix-caching" in argv and "--kv-cache-memory-bytes" in argv
    assert "--no-enable-prefix-caching" in off.argv() and "--kv-cache-memory-bytes" not in off.argv()
    assert on.environment()["VLLM_SERVER_DEV_MODE"] == "1"
    assert on.port != off.port


def test_a_vllm_api_key_exported_for_other_servers_does_not_reach_ours(monkeypatch):
    """vLLM reads ``VLLM_API_KEY`` as ``--api-key``: an operator's exported key made the servers g0g1 starts answer
    every request HTTP 401. A key asked for in the server's own settings still goes through."""
    from tools.prefixbench.serve.server import ServerConfig, VllmServer

    monkeypatch.setenv("VLLM_API_KEY", "the-operators-key")
    plain = VllmServer(ServerConfig(model="/m", served_model_name="m", enable_prefix_caching=True),
                       platform={"kind": "cpu"})
    keyed = VllmServer(ServerConfig(model="/m", served_model_name="m", enable_prefix_caching=True,
                                    env={"VLLM_API_KEY": "asked-for"}), platform={"kind": "cpu"})
    assert "VLLM_API_KEY" not in plain.environment() and keyed.environment()["VLLM_API_KEY"] == "asked-for"


def test_a_reset_stops_at_the_runs_deadline():
    """A server that keeps refusing the reset cannot hold the run past its deadline."""
    import json
    import threading
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from tools.prefixbench.serve.control import reset_prefix_cache

    class Busy(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            body = json.dumps({"success": False}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Busy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        start = time.monotonic()
        outcome = reset_prefix_cache(f"http://127.0.0.1:{server.server_address[1]}", attempts=50, delay_s=0.2,
                                     ends_at=start + 1.0)
        took = time.monotonic() - start
    finally:
        server.shutdown()
    assert outcome["status"] == "failed" and "deadline" in outcome["detail"]
    assert took < 3


def test_a_cpu_server_runs_its_engine_in_one_process_with_one_openmp_thread_unless_told_otherwise(monkeypatch):
    """serve.server.CPU_SERVING_ENV: set on CPU, never on a GPU, and the caller's own value wins."""
    from tools.prefixbench.serve.server import ServerConfig, VllmServer

    for name in ("VLLM_ENABLE_V1_MULTIPROCESSING", "OMP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    config = ServerConfig(model="/m", served_model_name="m", enable_prefix_caching=True)
    cpu, gpu = VllmServer(config, platform={"kind": "cpu"}), VllmServer(config, platform={"kind": "gpu"})
    assert cpu.serving_env() == {"VLLM_ENABLE_V1_MULTIPROCESSING": "0", "OMP_NUM_THREADS": "1"}
    assert cpu.describe()["serving_env"] == cpu.serving_env()
    assert gpu.serving_env() == {"VLLM_ENABLE_V1_MULTIPROCESSING": None, "OMP_NUM_THREADS": None}
    monkeypatch.setenv("OMP_NUM_THREADS", "8")
    told = VllmServer(ServerConfig(model="/m", served_model_name="m", enable_prefix_caching=True,
                                   env={"VLLM_ENABLE_V1_MULTIPROCESSING": "1"}), platform={"kind": "cpu"})
    assert told.serving_env() == {"VLLM_ENABLE_V1_MULTIPROCESSING": "1", "OMP_NUM_THREADS": "8"}
