"""The live commands' JSON on a fake server, against committed golden files: what a run reports may change only
on purpose (the golden files' git history is the before / after of every change), never as a side effect of
moving code. Timings, timestamps, the environment, ports and folders are normalised away; everything else, the
key structure, counters, predictions, warnings, rows, must be equal.

The fake server keeps a cache of its own (full blocks, chained by prefix, vLLM's last-token rule, the salt in
the first block's key) and reports what it hit as ``cached_tokens`` and in its Prometheus counters, so the
evidence, prediction and attribution sections carry real numbers. ``PREFIXBENCH_WRITE_GOLDEN=1`` rewrites the
files (then read the diff)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("aiohttp")

from backend_fixtures import CachingFakeServer  # noqa: E402
from golden_files import normalized  # noqa: E402

from backend_fixtures import closed_port  # noqa: E402
from tools.prefixbench.cli import main  # noqa: E402

GOLDEN = Path(__file__).with_name("golden")
BLOCK = CachingFakeServer.block


def _trace(path: Path) -> Path:
    lines = []
    for i in range(6):
        length = 1024 + 100 * (i % 3)
        ids = [0, 1 if i % 2 else 100 + i, *range(10 * i, 10 * i + -(-length // 512) - 2)]
        lines.append({"timestamp": i * 10, "input_length": length, "output_length": 4, "hash_ids": ids})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


COMMON = ["--model", "m", "--json"]
HIT = ["--num-requests", "6", "--input-len", "64", "--hit-rate", "0.5", "--prefix-num", "2", "--output-len", "2"]
CASES = {
    "hitrate": ["hitrate", *HIT, "--concurrency", "1", "--reset-cache"],
    "hitrate_reset": ["hitrate", *HIT, "--concurrency", "1", "--reset-cache"],
    "hitrate_kv_blocks": ["hitrate", *HIT, "--concurrency", "2", "--kv-blocks", "1000"],
    "hitrate_replicas": ["hitrate", "--endpoint", "{second}", *HIT, "--concurrency", "1", "--routing",
                         "prefix_affinity"],
    "sessions": ["sessions", "--users", "2", "--turns", "2", "--system-prompt-len", "40", "--user-len", "10",
                 "--output-len", "2"],
    "sessions_turns": ["sessions", "--users", "2", "--turns", "3", "--system-prompt-len", "40", "--user-len", "10",
                       "--output-len", "2"],
    "replay": ["replay", "--trace", "{tmp}/trace.jsonl", "--block-tokens", "16", "--speed", "1",
               "--concurrency", "1", "--max-output-len", "2"],
    "isolation": ["isolation", "--seed", "3", "--prompt-len", "40", "--tenants", "2", "--requests-per-tenant", "2",
                  "--suffix-len", "8"],
}


STREAMING_TOKEN_IDS = {"sessions_turns"}
"""Cases whose first server streams the generated token ids (vLLM's ``return_token_ids``): without them a session
ends after its first turn, with them every turn resends the history and the per-turn table has a line per turn."""

RESETTING = {"hitrate_reset"}
"""Cases whose fake servers honour ``/reset_prefix_cache`` (vLLM with ``VLLM_SERVER_DEV_MODE=1``) and have served
earlier traffic, which only the reset keeps out of the prediction; the others answer 404 and served nothing yet,
so ``hitrate``'s ``--reset-cache`` takes the path of an untouched server started without it."""


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_live_commands_json_is_the_golden_one_apart_from_timings(case, tmp_path, monkeypatch):
    resets, token_ids = case in RESETTING, case in STREAMING_TOKEN_IDS
    with CachingFakeServer(resets=resets, token_ids=token_ids) as first, CachingFakeServer(resets=resets) as second:
        if resets:  # earlier traffic in the cache and the counters: only the reset makes the prediction exact
            for server in (first, second):
                server._cache(list(range(1, 200)))
        _trace(tmp_path / "trace.jsonl")
        argv = [a.format(tmp=tmp_path, second=second.base_url) for a in CASES[case]]
        monkeypatch.chdir(tmp_path)
        out = tmp_path / "out.json"
        code = main([argv[0], "--endpoint", first.base_url, *COMMON, "--output", str(out), *argv[1:]])
    written = json.loads(out.read_text())
    got = {"exit": code, "keys": list(written), "result": normalized(written)}
    text = json.dumps(got, indent=1) + "\n"  # in the order written, every nested object's keys included
    path = GOLDEN / f"{case}.json"
    if os.environ.get("PREFIXBENCH_WRITE_GOLDEN"):
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text()


@pytest.mark.parametrize("case", ["hitrate", "sessions", "replay", "isolation"])
def test_a_run_that_never_reached_its_server_writes_its_sections_in_the_same_order(case, tmp_path, monkeypatch):
    """A failed run holds fewer sections than a measured one, in the order of the golden measured run's keys:
    ``hitrate`` wrote its empty ``requests`` after the verdict when nothing was measured, and before it otherwise."""
    _trace(tmp_path / "trace.jsonl")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out.json"
    argv = [a.format(tmp=tmp_path) for a in CASES[case]]
    code = main([argv[0], "--endpoint", f"http://127.0.0.1:{closed_port()}", *COMMON, "--output", str(out),
                 *argv[1:]])
    result = json.loads(out.read_text())
    assert code == 2 and result["status"] == "failed" and "ConnectionError" in result["error"]
    measured_order = json.loads((GOLDEN / f"{case}.json").read_text())["keys"]
    assert list(result) == [key for key in measured_order if key in result], list(result)
    after_finish = list(result)[list(result).index("finished_at") + 1:]
    assert after_finish if case != "replay" else not after_finish  # replay plans nothing without the server
    if case == "hitrate":
        assert list(result)[-3:] == ["hit_rates", "requests", "verdict"] and result["requests"] == []
