"""Sessions without a real server: the seeded plan, what a server without token ids does to a session, bad plans
(the CLI's bad flags and baselines are rows of ``tests/prefixbench/test_hostile.py``), and the per-turn and
baseline tables on hand-made rows."""

from __future__ import annotations

import json

import pytest

from backend_fixtures import FakeServer

from tools.prefixbench.core.errors import InputError
from tools.prefixbench.core.session_records import SessionRow
from tools.prefixbench.run.sessions import baseline_by_turn, per_turn
from tools.prefixbench.workload import sessions as ws


def test_plan_defaults_and_history_growth():
    chat = ws.session_plan(users=2, turns=3)
    agent = ws.session_plan(kind="agent", users=2, turns=3)
    assert (chat.system_prompt_len, chat.tool_output_len) == (256, None)
    assert (agent.system_prompt_len, agent.tool_output_len) == (1024, 256)
    first = ws.first_prompt(chat, 0)
    assert first[:256] == ws.first_prompt(chat, 1)[:256]  # one system prompt for every user
    assert first != ws.first_prompt(chat, 1)
    second = ws.next_prompt(chat, 0, 1, first, [7, 8])
    assert second[:len(first) + 2] == first + [7, 8] and len(second) == len(first) + 2 + 64
    tool = ws.next_prompt(agent, 0, 1, ws.first_prompt(agent, 0), [5])
    assert len(tool) == 1024 + 64 + 1 + 256
    assert ws.longest_prompt(agent) == 1024 + 64 + 2 * (256 + 16)
    assert ws.first_prompt(chat, 0) == ws.first_prompt(ws.session_plan(users=2, turns=3), 0)  # seeded


def test_bad_plans_name_the_flag():
    with pytest.raises(InputError, match="--kind"):
        ws.session_plan(kind="batch", users=1, turns=1)
    with pytest.raises(InputError, match="--tool-output-len"):
        ws.session_plan(kind="chat", users=1, turns=1, tool_output_len=5)


def test_without_streamed_token_ids_a_session_ends_after_its_first_turn_and_says_why(tmp_path):
    from tools.prefixbench import cli

    out = tmp_path / "s.json"
    with FakeServer(cached_tokens=lambda p: 0, models={"data": [{"id": "m"}]}) as server:
        code = cli.main(["sessions", "--endpoint", server.base_url, "--model", "m", "--block-size", "32",
                         "--users", "2", "--turns", "3", "--output", str(out), "--json"])
    result = json.loads(out.read_text())
    assert code == 0 and result["status"] == "ok"
    assert [r["turn"] for r in result["requests"]] == [0, 0]
    assert sum("streamed no generated token ids" in w for w in result["warnings"]) == 2
    assert result["per_turn"][1]["requests"] == 0 and result["per_turn"][1]["cached_rate"] is None


def _row(user, turn, ttft, cached=10, predicted=10, status="ok"):
    return {"id": f"u{user}t{turn}", "user": user, "turn": turn, "ttft_ms": ttft, "status": status,
            "prompt_token_ids_len": 100, "cached_tokens": cached, "predicted_hit_tokens": predicted,
            "client_estimate_tokens": 0 if turn == 0 else 90}


def _rows(*rows):
    """Rows as a sessions file holds them, read back as the run builds them."""
    return [SessionRow.from_json(row) for row in rows]


def test_per_turn_rates_and_a_failed_request_left_out():
    rows = _rows(_row(0, 0, 50.0, 0, 0), _row(1, 0, 70.0, 0, 0), _row(0, 1, 20.0, 96, 96),
                 _row(1, 1, 0, None, 96, "error"))
    table = per_turn(rows, 2)
    assert table[0].ttft_ms_p50 == 60.0 and table[0].cached_rate == 0
    assert table[1].requests == 1 and table[1].cached_rate == 0.96 and table[1].client_estimate_rate == 0.9
    assert table[1].counter_hit_rate is None  # no counters per turn: missing, not zero


def test_baseline_by_turn_speedup_and_mismatch_warning():
    plan = ws.session_plan(users=1, turns=2)
    rows = _rows(_row(0, 0, 50.0), _row(0, 1, 20.0))
    baseline = {"config": {**plan.to_dict(), "endpoint": "x"}, "requests": [_row(0, 0, 50.0), _row(0, 1, 80.0)]}
    out = baseline_by_turn(rows, baseline, plan)
    assert [t.speedup for t in out.per_turn] == [1.0, 4.0] and out.warning is None
    baseline["config"]["turns"] = 3
    assert "turns" in baseline_by_turn(rows, baseline, plan).warning


def test_with_caching_off_the_per_turn_hit_rate_is_missing_not_zero(tmp_path):
    from backend_fixtures import prometheus_text

    from tools.prefixbench import cli

    info = ('# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{block_size="32",enable_prefix_caching='
            '"False",engine="0",num_gpu_blocks="1000"} 1.0\n')
    out = tmp_path / "off.json"
    with FakeServer(metrics=lambda: prometheus_text(0, 0) + info, cached_tokens=lambda p: 0,
                    models={"data": [{"id": "m"}]}) as server:
        code = cli.main(["sessions", "--endpoint", server.base_url, "--model", "m", "--users", "2", "--turns", "1",
                         "--output", str(out), "--json"])
    result = json.loads(out.read_text())
    assert code == 0 and result["hit_rates"]["measured_evidence"] == "not_applicable"
    first = result["per_turn"][0]
    assert first["cached_tokens"] == 0 and first["cached_rate"] is None  # reported 0, but no cache was queried
    assert first["predicted_hit_rate"] > 0 and first["measured_reason"] == "prefix caching is off"


def test_a_last_turn_longer_than_the_context_is_exit_1_before_any_completion(tmp_path, capsys):
    from tools.prefixbench import cli

    with FakeServer(models={"data": [{"id": "m", "max_model_len": 512}]}) as server:
        code = cli.main(["sessions", "--endpoint", server.base_url, "--model", "m", "--turns", "5",
                         "--output", str(tmp_path / "o.json")])
        assert server.prompts == []  # the probe read /v1/models and /metrics; no completion was sent
    err = capsys.readouterr().err
    assert code == 1 and "--turns" in err and "context is 512" in err


@pytest.mark.parametrize("row, field", [
    ({"user": 0, "ttft_ms": 1.0, "status": "ok"}, "baseline.requests[1].turn"),
    ({"turn": 0, "user": 0, "ttft_ms": None, "status": "ok"}, "baseline.requests[1].ttft_ms"),
    ({"turn": True, "user": 0, "ttft_ms": 1.0, "status": "ok"}, "baseline.requests[1].turn"),
    ({"turn": 0, "user": 0, "ttft_ms": 1.0}, "baseline.requests[1].status"),
])
def test_a_baseline_the_end_of_the_run_cannot_read_is_refused_before_any_request(row, field):
    """Issue 25 G: ``baseline_by_turn`` reads the baseline only after every request was sent; a row it cannot
    read used to crash the run there and leave the result ``running``. Now nothing is sent."""
    from tools.prefixbench.run.sessions import check_baseline, run_sessions

    good = {"turn": 0, "user": 0, "ttft_ms": 2.0, "status": "ok"}
    baseline = {"schema": "prefixbench.sessions/1", "config": {}, "requests": [good, row]}
    with FakeServer(models={"data": [{"id": "m"}]}) as server:
        with pytest.raises(InputError) as info:
            run_sessions(endpoint=server.base_url, model="m", metrics=[], plan=ws.session_plan(users=1, turns=2),
                         baseline=baseline)
        assert server.requests_seen == 0
    assert info.value.field == field
    failed = {**good, "ttft_ms": None, "status": "failed"}  # a failed row has no TTFT, and that is fine
    assert check_baseline({**baseline, "requests": [good, failed]}, "baseline")["requests"][1] is failed
