"""``sessions``' records read back from a file the command wrote: each row, turn line and the baseline write
exactly what was read (keys and order), and the per-turn table recomputed from the rows read back is the one the
run wrote."""

from __future__ import annotations

import json

from backend_fixtures import CachingFakeServer

from tools.prefixbench.cli import main
from tools.prefixbench.core.session_records import SessionRow, SessionsBaseline, TurnLine
from tools.prefixbench.run.sessions import per_turn

ROW_KEYS = ("id", "index", "status", "error", "http_status", "prompt_tokens", "output_tokens", "cached_tokens",
            "sent_at_s", "ttft_ms", "tpot_ms", "e2e_ms", "output_token_ids", "usage_reason", "itl_ms_mean", "itl_ms_max",
            "predicted_hit_tokens", "user", "turn", "counter_hit_tokens", "counter_query_tokens", "prompt_token_ids_len",
            "client_estimate_tokens")
TURN_KEYS = ("turn", "requests", "prompt_tokens", "predicted_hit_tokens", "cached_tokens", "counter_hit_tokens",
             "client_estimate_tokens", "ttft_ms_p50", "predicted_hit_rate", "cached_rate", "counter_hit_rate",
             "client_estimate_rate")
BASELINE_KEYS = (("per_turn", "baseline_endpoint", "baseline_caching_enabled", "warning"),
                 ("turn", "g0_ttft_ms_p50", "g1_ttft_ms_p50", "speedup"))
"""The keys and order the sessions files had before their sections were records (written by the previous tree,
2026-12-05): a reader of old files and new ones sees one format."""

PLAN = ["--users", "2", "--turns", "3", "--system-prompt-len", "40", "--user-len", "10", "--output-len", "2"]


def _sessions(tmp_path, name, *extra):
    out = tmp_path / f"{name}.json"
    with CachingFakeServer(token_ids=True) as server:
        code = main(["sessions", "--endpoint", server.base_url, "--model", "m", *PLAN, "--output", str(out), "--json",
                     *extra])
    assert code == 0
    return json.loads(out.read_text())


def test_rows_turns_and_baseline_read_back_write_what_was_read(tmp_path):
    g0 = _sessions(tmp_path, "g0")
    written = _sessions(tmp_path, "g1", "--baseline", str(tmp_path / "g0.json"))
    assert all(tuple(r) == ROW_KEYS for r in written["requests"])
    assert all(tuple(t) == TURN_KEYS for t in written["per_turn"])
    assert (tuple(written["baseline"]), tuple(written["baseline"]["per_turn"][0])) == BASELINE_KEYS
    rows = [SessionRow.from_json(r) for r in written["requests"]]
    assert [list(r.to_json().items()) for r in rows] == [list(r.items()) for r in written["requests"]]
    assert [(r.user, r.turn) for r in rows] == [(u, t) for u in range(2) for t in range(3)]  # one session at a time
    assert all(r.counter_hit_tokens is not None for r in rows)  # so the counters are read per request
    assert [list(TurnLine.from_json(t).to_json().items()) for t in written["per_turn"]] == [
        list(t.items()) for t in written["per_turn"]]
    assert [t.to_json() for t in per_turn(rows, 3)] == written["per_turn"]
    assert [t["requests"] for t in written["per_turn"]] == [2, 2, 2]
    assert written["per_turn"][2]["client_estimate_rate"] > 0  # later turns resend the history
    baseline = SessionsBaseline.from_json(written["baseline"])
    assert baseline is not None and baseline.to_json() == written["baseline"] and baseline.warning is None
    assert [t.turn for t in baseline.per_turn] == [1, 2, 3]
    assert [t.g0_ttft_ms_p50 for t in baseline.per_turn] == [line["ttft_ms_p50"] for line in g0["per_turn"]]
    assert SessionsBaseline.from_json(None) is None


def test_a_turn_line_of_a_run_without_caching_keeps_its_reason():
    line = TurnLine(1, 2, 100, 10, 0, 0, 0, 1.0, 0.1, 0.0, 0.0, 0.0).caching_off("prefix caching is off")
    data = line.to_json()
    assert data["cached_rate"] is None and data["counter_hit_rate"] is None and data["predicted_hit_rate"] == 0.1
    assert list(data)[-1] == "measured_reason" and TurnLine.from_json(data) == line


def _row(user, turn, ttft, status="ok"):
    return SessionRow.from_json({"id": f"u{user}t{turn}", "user": user, "turn": turn, "ttft_ms": ttft, "status": status,
                                 "prompt_token_ids_len": 100, "cached_tokens": 10, "predicted_hit_tokens": 10,
                                 "client_estimate_tokens": 0})


def test_per_turn_and_baseline_take_the_median_of_the_finished_requests_only():
    from tools.prefixbench.run.sessions import baseline_by_turn
    from tools.prefixbench.workload import sessions as ws

    rows = [_row(0, 0, 10.0), _row(1, 0, 20.0), _row(2, 0, 90.0), _row(3, 0, 1.0, status="error")]
    assert per_turn(rows, 1)[0].ttft_ms_p50 == 20.0 and per_turn(rows, 1)[0].requests == 3  # not the mean (40)
    plan = ws.session_plan(users=4, turns=1)
    g0 = {"config": plan.to_dict(), "requests": [r.to_json() for r in (
        _row(0, 0, 30.0), _row(1, 0, 40.0), _row(2, 0, 100.0), _row(3, 0, 1000.0, status="error"))]}
    line = baseline_by_turn(rows, g0, plan).per_turn[0]
    assert (line.g0_ttft_ms_p50, line.g1_ttft_ms_p50, line.speedup) == (40.0, 20.0, 2.0)
