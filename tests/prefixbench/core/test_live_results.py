"""``LiveRunResult``: a live command's result as its run fills it in, written in one key order per command."""

import json

import pytest

from tools.prefixbench.core.live_records import Prediction
from tools.prefixbench.core.live_results import HEADER, SECTIONS, LiveRunResult, Verdict
from tools.prefixbench.core.records import SCHEMA_HITRATE, SCHEMA_ISOLATION, SCHEMA_REPLAY, SCHEMA_SESSIONS
from tools.prefixbench.core.request_rows import RequestRow


def canonical(schema: str) -> list[str]:
    """Every key a finished result of ``schema`` may hold, in the order it is written."""
    early, late = SECTIONS[schema]
    return [*HEADER, *early, "environment", "finished_at", *late]


def in_order(keys, schema: str) -> bool:
    order = canonical(schema)
    return list(keys) == [k for k in order if k in keys]


def test_sections_are_written_in_the_commands_order_whatever_order_the_run_set_them():
    result = LiveRunResult(SCHEMA_HITRATE, "2026-12-05T00:00:00Z", {"model": "m"})
    result.put(verdict=Verdict("UNKNOWN", ["nothing measured"], rules="r"))
    result.put(requests=[])
    result.put(chat_template={"status": "not_checked"})
    data = result.to_json()
    assert list(data) == [*HEADER, "chat_template", "requests", "verdict"]
    assert data["verdict"] == {"verdict": "UNKNOWN", "reasons": ["nothing measured"], "rules": "r"}
    assert data["status"] == "running" and data["error"] is None


def test_the_phase_is_written_only_while_running_and_the_finish_only_once_finished():
    result = LiveRunResult(SCHEMA_REPLAY, "t0", {})
    result.put(skipped={"count": 0})
    result.phase = "measure"
    running = result.to_json()
    assert list(running) == [*HEADER, "skipped", "phase"] and running["phase"] == "measure"
    result.phase, result.status, result.environment, result.finished_at = None, "ok", {"python": "3"}, "t1"
    result.put(summary=None, prediction=Prediction.unpredicted("no block size"))
    done = result.to_json()
    assert list(done) == [*HEADER, "skipped", "environment", "finished_at", "prediction", "summary"]
    assert done["summary"] is None  # a section that exists and says nothing was measured stays null
    assert done["prediction"] == {"predicted_hit_rate": None, "predicted_hit_tokens": None, "exact_expected": False,
                                  "reason": "no block size"}
    json.dumps(done, allow_nan=False)


def test_records_in_a_section_become_json_only_when_written():
    row = RequestRow.from_json({"id": "r0", "status": "ok", "cached_tokens": 16})
    result = LiveRunResult(SCHEMA_SESSIONS, "t0", {})
    result.put(requests=[row])
    assert result.sections["requests"][0] is row
    assert result.to_json()["requests"] == [row.to_json()]


@pytest.mark.parametrize("schema", sorted(SECTIONS))
def test_a_section_the_command_does_not_have_is_a_programming_error(schema):
    result = LiveRunResult(schema, "t0", {})
    with pytest.raises(KeyError, match="no section 'per_minute'"):
        result.put(per_minute=[])
    assert "per_minute" not in result.to_json()


def test_each_command_has_its_own_sections_and_none_repeats_the_header():
    assert set(SECTIONS) == {SCHEMA_HITRATE, SCHEMA_SESSIONS, SCHEMA_REPLAY, SCHEMA_ISOLATION}
    for schema in SECTIONS:
        order = canonical(schema)
        assert len(order) == len(set(order)), schema


def test_isolations_cost_and_verdict_are_written_and_read_back_as_the_files_hold_them():
    from tools.prefixbench.core.live_results import IsolationVerdict, SaltedPhase, SaltingCost

    cost = SaltingCost.of(salted=SaltedPhase(8, 800, 0.25, 0.24), unsalted=SaltedPhase(8, 800, 0.75, None))
    assert cost.predicted_cost_points == pytest.approx(50.0) and cost.measured_cost_points is None
    data = cost.to_json()
    assert list(data) == ["salted", "unsalted", "predicted_cost_points", "measured_cost_points"]
    assert list(data["salted"]) == ["requests", "query_tokens", "predicted_hit_rate", "measured_hit_rate"]
    assert SaltingCost.from_json(json.loads(json.dumps(data))) == cost
    hand_edited = {**data, "measured_cost_points": 3.0}  # a file is read as written, never recomputed
    assert SaltingCost.from_json(hand_edited).measured_cost_points == 3.0
    assert SaltingCost.from_json({}) is None
    assert IsolationVerdict("FAIL", ["probe2"], ["why"]).to_json() == {"verdict": "FAIL", "leaks": ["probe2"],
                                                                       "reasons": ["why"]}
