"""Mooncake traces: verified download over real HTTP, strict parsing, and replay against a naive count."""

import functools
import http.server
import json
import shutil
import socket
import threading

import pytest

from tools.prefixbench import InputError
from tools.prefixbench.traces import (
    TRACES,
    TraceUnavailable,
    download_trace,
    load_trace,
    parse_trace_line,
    replay_trace,
    resolve_trace,
)


@pytest.fixture(scope="module")
def conversation(shared_traces):
    return load_trace("conversation", allow_download=False)


def _naive_unlimited_hit_tokens(path):
    """Count hits with a plain set: a request hits its leading full blocks already seen."""
    seen, hits = set(), 0
    for line in open(path):
        row = json.loads(line)
        full = row["input_length"] // 512
        ids = row["hash_ids"][:full]
        k = 0
        while k < full and ids[k] in seen:
            k += 1
        hits += k * 512
        seen.update(ids)
    return hits


def test_unlimited_replay_matches_naive_count(conversation, shared_traces):
    r = replay_trace(conversation, None)
    assert r["requests"] == 12031
    assert r["hit_tokens"] == _naive_unlimited_hit_tokens(shared_traces / "conversation_trace.jsonl")
    assert r["token_hit_rate"] == r["hit_tokens"] / r["input_tokens"]
    assert r["eviction_count"] == 0
    # close to the paper's reported cache ratio, below it because partial blocks never hit here
    assert abs(r["token_hit_rate"] - TRACES["conversation"].paper_cache_ratio) < 0.05


def test_capacity_curve_is_monotone_and_lru_strands_nothing(conversation):
    rates = []
    for capacity in (500, 5000, 50000, None):
        lru = replay_trace(conversation, capacity, "lru")
        assert lru["orphan_blocks"] == 0
        rates.append(lru["token_hit_rate"])
    assert rates == sorted(rates) and rates[0] < rates[-1]
    assert replay_trace(conversation, 20000, "seed")["orphan_blocks"] > 0


def test_last_token_rule_only_lowers_hits(conversation):
    plain = replay_trace(conversation, None)
    capped = replay_trace(conversation, None, last_token_rule=True)
    assert capped["hit_tokens"] <= plain["hit_tokens"]


def test_synthetic_trace_near_paper_ratio(shared_traces):
    r = replay_trace(load_trace("synthetic", allow_download=False), None)
    assert abs(r["token_hit_rate"] - TRACES["synthetic"].paper_cache_ratio) < 0.05


@pytest.mark.parametrize("obj, field", [
    ({"input_length": 600}, "t:1.hash_ids"),
    ({"hash_ids": [1]}, "t:1.input_length"),
    ({"input_length": 600, "hash_ids": [1]}, "t:1.hash_ids"),
    ({"input_length": 600, "hash_ids": [1, -2]}, "t:1.hash_ids[1]"),
    ({"input_length": 600, "hash_ids": [1, "2"]}, "t:1.hash_ids[1]"),
    ({"input_length": 600, "hash_ids": "12"}, "t:1.hash_ids"),
    ({"input_length": 0, "hash_ids": []}, "t:1.input_length"),
])
def test_bad_trace_lines_name_the_field(obj, field):
    with pytest.raises(InputError) as err:
        parse_trace_line("t:1", obj)
    assert err.value.field == field


def test_ragged_line_in_a_trace_file(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"input_length": 512, "hash_ids": [0]}\n{"input_length": 51\n')
    with pytest.raises(InputError, match=r"t\.jsonl:2: not valid JSON"):
        load_trace(path)


def test_unknown_name(tmp_path):
    with pytest.raises(InputError, match="neither a file nor a known trace name"):
        resolve_trace(str(tmp_path / "missing.jsonl"))


# --------------------------------------------------------------------------------- download, over real HTTP

@pytest.fixture
def mirror(tmp_path, shared_traces):
    """A real HTTP server on loopback serving a folder that plays the upstream repository."""
    root = tmp_path / "mirror"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_download_verifies_and_caches(mirror, shared_traces, tmp_path, monkeypatch):
    root, url = mirror
    shutil.copy(shared_traces / "synthetic_trace.jsonl", root)
    monkeypatch.setenv("PREFIXBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("PREFIXBENCH_TRACE_DIR", raising=False)
    monkeypatch.setenv("PREFIXBENCH_TRACE_BASE_URL", url)
    path = resolve_trace("synthetic")
    assert path == tmp_path / "cache" / "traces" / "synthetic_trace.jsonl"
    assert path.read_bytes() == (shared_traces / "synthetic_trace.jsonl").read_bytes()
    (root / "synthetic_trace.jsonl").unlink()  # second use must come from the cache
    assert resolve_trace("synthetic") == path


def test_corrupt_download_is_refused_and_not_kept(mirror, shared_traces, tmp_path):
    root, url = mirror
    data = (shared_traces / "synthetic_trace.jsonl").read_bytes()
    (root / "synthetic_trace.jsonl").write_bytes(data[:-2] + b"9\n")
    with pytest.raises(TraceUnavailable, match="does not match the published size/sha256"):
        download_trace("synthetic", tmp_path / "cache", base_url=url)
    assert list((tmp_path / "cache").iterdir()) == []


def test_offline_download_fails_with_a_clear_message(tmp_path, monkeypatch):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("PREFIXBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("PREFIXBENCH_TRACE_DIR", raising=False)
    monkeypatch.setenv("PREFIXBENCH_TRACE_BASE_URL", f"http://127.0.0.1:{port}")
    with pytest.raises(TraceUnavailable) as err:
        resolve_trace("conversation")
    message = str(err.value)
    assert message.startswith("conversation: cannot download") and "PREFIXBENCH_TRACE_DIR" in message
    with pytest.raises(TraceUnavailable, match="downloads are off"):
        resolve_trace("conversation", allow_download=False)


def test_a_cache_that_cannot_be_written_gives_the_traces_advice_not_a_traceback(tmp_path, monkeypatch):
    """A read-only home (or PREFIXBENCH_CACHE naming a file): the course cell catches ``TraceUnavailable`` and
    prints how to get the trace; an ``OSError`` went past it as a traceback (a review helper's finding)."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("PREFIXBENCH_CACHE", str(blocker))
    monkeypatch.delenv("PREFIXBENCH_TRACE_DIR", raising=False)
    monkeypatch.setenv("PREFIXBENCH_TRACE_BASE_URL", "http://127.0.0.1:9")
    with pytest.raises(TraceUnavailable) as err:
        resolve_trace("conversation")
    message = str(err.value)
    assert message.startswith(f"conversation: cannot write to the trace cache {blocker / 'traces'}"), message
    assert "PREFIXBENCH_CACHE" in message and "PREFIXBENCH_TRACE_DIR" in message
    assert blocker.read_text() == ""


def test_replay_rejects_bad_arguments(conversation):
    with pytest.raises(InputError, match="requests"):
        replay_trace([{"input_length": 512, "hash_ids": [1]}], None)
    with pytest.raises(InputError, match="capacity_blocks"):
        replay_trace(conversation[:5], 0)
    with pytest.raises(InputError, match="policy"):
        replay_trace(conversation[:5], 10, "clock")
