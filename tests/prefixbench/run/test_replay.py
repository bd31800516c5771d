"""Replay without a real server: the token mapping keeps the trace's sharing and partial blocks, the context check
skips and names, timestamps become send offsets. Bad traces and flags (exit 1 before anything is sent) are rows
of ``tests/prefixbench/test_hostile.py``."""

from __future__ import annotations

import json

from backend_fixtures import FakeServer

from tools.prefixbench.workload.trace_tokens import TraceTokens, output_lengths
from tools.prefixbench.workload.traces import TraceRequest


def test_shared_hash_ids_give_shared_tokens_and_a_partial_block_stays_partial():
    tokens = TraceTokens(16)
    a = tokens.prompt(TraceRequest(1024 + 100, (1, 2, 3)))
    b = tokens.prompt(TraceRequest(1024, (1, 2)))
    c = tokens.prompt(TraceRequest(1024, (1, 9)))
    assert len(a) == 32 + 100 * 16 // 512 and len(b) == 32 and a[:32] == b
    assert c[:16] == a[:16] and c[16:] != a[16:32]
    assert tokens.last_block_len(TraceRequest(1, (4,))) == 1  # at least one token
    assert tokens.last_block_len(TraceRequest(511, (4,))) == 15  # never a full block
    assert TraceTokens(16).prompt(TraceRequest(1024, (1, 2))) == b  # deterministic
    assert output_lengths([{"output_length": 300}, {"output_length": 0}, {}], 16) == [16, 1, 1]


def _trace(path, lines):
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_requests_longer_than_the_context_are_skipped_and_named(tmp_path):
    from tools.prefixbench import cli

    trace = _trace(tmp_path / "t.jsonl", [
        {"timestamp": 0, "input_length": 1024, "output_length": 8, "hash_ids": [1, 2]},
        {"timestamp": 50, "input_length": 5000, "output_length": 8, "hash_ids": list(range(1, 11))},
        {"timestamp": 100, "input_length": 1500, "output_length": 8, "hash_ids": [1, 2, 3]}])
    out = tmp_path / "r.json"
    models = {"data": [{"id": "m", "max_model_len": 50}]}
    with FakeServer(cached_tokens=lambda p: 0, models=models) as server:
        code = cli.main(["replay", "--endpoint", server.base_url, "--model", "m", "--block-size", "32",
                         "--block-tokens", "8", "--trace", str(trace), "--speed", "10", "--output", str(out),
                         "--json", "--max-output-len", "4"])
        prompts = list(server.prompts)
    result = json.loads(out.read_text())
    assert code == 0 and result["status"] == "ok"
    assert [len(p) for p in prompts] == [16, 8 * 2 + 1500 % 512 * 8 // 512]
    assert result["skipped"]["count"] == 1 and result["skipped"]["requests"][0]["line"] == "t.jsonl:2"
    assert result["skipped"]["requests"][0]["prompt_tokens"] == 9 * 8 + (5000 - 9 * 512) * 8 // 512
    assert list(result["skipped"]) == ["count", "context_tokens", "requests", "reason"]  # as the files always had
    assert list(result["skipped"]["requests"][0]) == ["line", "index", "prompt_tokens", "output_tokens"]
    sent = [r["sent_at_s"] for r in result["requests"]]
    assert sent[0] < sent[1] and sent[1] >= 0.01 - 0.002  # 100 ms of trace time at x10 (send offsets from the start:
    # a busy machine can send the first one late, never the second one early)
    assert "t.jsonl:2" in out.with_suffix(".md").read_text()


def test_the_help_of_the_live_commands_shows_the_bounds(capsys):
    from tools.prefixbench import cli

    for command, flag in (("replay", "--speed"), ("sessions", "--think-time-s"), ("isolation", "--prompt-len")):
        assert cli.main([command, "--help"]) == 0
        text = capsys.readouterr().out
        assert flag in text and "--kv-blocks" in text and ("a number in" in text or "an integer in" in text), command


def test_a_hit_is_order_dependent_until_its_source_was_answered_before_it_was_sent():
    from tools.prefixbench.measure.client import RequestResult
    from tools.prefixbench.run.replay import order_dependent

    prompts = {"a": list(range(40)), "b": list(range(32)) + [99] * 8}
    hits = {"a": 0, "b": 32}

    def pair(b_sent_s, a_answered_s):
        a = RequestResult(id="a", index=0, sent_at_s=0.0, answered_at_s=a_answered_s)
        b = RequestResult(id="b", index=1, sent_at_s=b_sent_s)
        return order_dependent([a, b], prompts, hits, 16)

    assert pair(1.0, 0.05) == 0  # a's response had begun when b was sent: a's blocks were there
    assert pair(1.0, 1.2) == 32  # a second apart, but a was still waiting for its connection: either may be first
    assert pair(1.0, None) == 32  # a never answered: nothing says when it arrived
    assert pair(None, 0.05) == 32
