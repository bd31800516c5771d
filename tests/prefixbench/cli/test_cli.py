"""The CLI as a user runs it: a subprocess, JSON on stdout, one readable line on stderr for mistakes."""

import json
import subprocess
import sys

import pytest

from tools.prefixbench.traces import load_trace, replay_trace
from tools.prefixbench.workload import DEFAULT_WORKLOAD


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "tools.prefixbench", *map(str, args)],
                          capture_output=True, text=True, timeout=120, cwd=cwd)


def test_simulate_json_predicts_the_cpu_server_counts(repo_root):
    run = cli("simulate", "--block-size", 128, "--last-token-rule", "--json", cwd=repo_root)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert (result["reused_tokens"], result["total_prompt_tokens"]) == (18432, 26480)
    assert result["capacity_blocks"] is None and result["policy"] == "lru" and result["workload_id"]


def test_simulate_table_is_human_readable(repo_root):
    run = cli("simulate", "--workload", DEFAULT_WORKLOAD, "--block-size", 16, "--capacity", 40,
              "--policy", "seed", cwd=repo_root)
    assert run.returncode == 0, run.stderr
    assert "token_reuse_rate" in run.stdout and "orphan_blocks" in run.stdout and "seed" in run.stdout
    assert not run.stdout.lstrip().startswith("{")


def test_trace_json_has_the_documented_keys(repo_root, shared_traces):
    run = cli("trace", "conversation", "--capacity", 20000, "--json", cwd=repo_root)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    for key in ("token_hit_rate", "block_hit_rate", "request_hit_rate", "hit_tokens", "input_tokens",
                "capacity_blocks", "policy"):
        assert key in result
    expected = replay_trace(load_trace("conversation"), 20000, "lru")
    assert result["hit_tokens"] == expected["hit_tokens"]
    assert result["token_hit_rate"] == result["hit_blocks"] * 512 / result["input_tokens"]
    assert result["paper_cache_ratio"] == 0.40


def test_trace_accepts_a_file_path(repo_root, shared_traces, tmp_path):
    path = tmp_path / "mini.jsonl"
    path.write_text('{"input_length": 1100, "hash_ids": [7, 8, 9]}\n' * 3)
    run = cli("trace", path, "--capacity", "inf", "--json", cwd=repo_root)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["hit_tokens"] == 2 * 2 * 512


def test_workload_command_regenerates_the_committed_file(repo_root, tmp_path):
    out = tmp_path / "w.jsonl"
    run = cli("workload", "--out", out, cwd=repo_root)
    assert run.returncode == 0, run.stderr
    assert out.read_bytes() == DEFAULT_WORKLOAD.read_bytes()


@pytest.mark.parametrize("args, needle", [
    (["simulate", "--block-size", "0"], "--block-size"),
    (["simulate", "--capacity", "-3"], "--capacity"),
    (["simulate", "--policy", "fifo"], "policy: unknown policy 'fifo'"),
    (["simulate", "--workload", "/nonexistent/w.jsonl"], "file not found"),
    (["trace", "nope", "--capacity", "10"], "trace: 'nope' is neither a file nor a known trace name"),
    (["trace", "conversation"], "--capacity"),
    (["trace", "conversation", "--capacity", "10", "--policy", "mru"], "policy: unknown policy"),
    (["workload", "--prefix-len", "5000"], "prefix_len: must be <= input_len"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_input_is_one_line_and_exit_1(repo_root, args, needle):
    run = cli(*args, cwd=repo_root)
    assert run.returncode == 1
    assert "Traceback" not in run.stderr
    assert needle in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 or run.stderr.startswith("usage:")


@pytest.mark.parametrize("line, needle", [
    ('{"input_length": 600}', "bad.jsonl:2.hash_ids: is missing"),
    ('{"input_length": 600, "hash_ids": [1, 2', "bad.jsonl:2: not valid JSON"),
    ('{"input_length": 600, "hash_ids": [1, true]}', "bad.jsonl:2.hash_ids[1]"),
])
def test_bad_trace_files_name_line_and_field(repo_root, tmp_path, line, needle):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"input_length": 512, "hash_ids": [1]}\n' + line + "\n")
    run = cli("trace", path, "--capacity", "10", cwd=repo_root)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert needle in run.stderr


def test_bad_workload_file_names_line_and_field(repo_root, tmp_path):
    path = tmp_path / "w.jsonl"
    path.write_text('{"prompt_token_ids": [11, 12, 13]}\n{"prompt_token_ids": [11, 12.5]}\n')
    run = cli("simulate", "--workload", path, cwd=repo_root)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert "w.jsonl:2.prompt_token_ids[0][1]: token ids must be integers, got float 12.5" in run.stderr


def test_help_names_the_command_the_user_typed(repo_root):
    import shutil
    from pathlib import Path

    script = shutil.which("prefixbench", path=str(Path(sys.executable).parent))
    assert script is not None
    assert subprocess.run([script, "--help"], capture_output=True, text=True).stdout.startswith("usage: prefixbench")
    module = subprocess.run([sys.executable, "-m", "tools.prefixbench", "--help"], capture_output=True, text=True,
                            cwd=repo_root)
    assert module.stdout.startswith("usage: python -m tools.prefixbench")


def test_a_command_that_sends_no_request_does_not_import_the_http_client(repo_root, tmp_path):
    """aiohttp (a quarter of a second of the CLI's start) is imported where requests are sent: ``--help`` and
    the offline commands (simulate, plan, report) never load it; sending a request does."""
    probe = ("import sys\nfrom tools.prefixbench.cli import main\n"
             "main(['simulate', '--capacity', '4', '--json'])\n"
             "before = 'aiohttp' in sys.modules\n"
             "from tools.prefixbench.measure import client\n"
             "client.run_requests('http://127.0.0.1:9', 'm', [{'id': 'a', 'prompt_token_ids': [1], 'max_tokens': 1}],"
             " timeout_s=1)\n"
             "print(before, 'aiohttp' in sys.modules, file=sys.stderr)\n")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=repo_root, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stderr.strip().splitlines()[-1] == "False True"


def test_the_kv_events_help_gives_a_config_vllm_accepts_as_json():
    """`hitrate --help` tells how to start vLLM for --kv-events; copied from there, the config must parse (a stray
    quote once made it invalid JSON)."""
    import argparse
    import json
    import re

    from tools.prefixbench.cli.hitrate import add_evidence_flags

    parser = argparse.ArgumentParser()
    add_evidence_flags(parser)
    text = next(a.help for a in parser._actions if "--kv-events" in a.option_strings)
    config = json.loads(re.search(r"--kv-events-config '([^']*)'", text).group(1))
    assert config == {"enable_kv_cache_events": True, "publisher": "zmq", "endpoint": "tcp://127.0.0.1:PORT"}
