"""Isolation verdicts without a real server: a fake server whose cache ignores the salt must FAIL with the reason
(a real vLLM cannot be made to ignore it); the verdict rules on hand-made rows."""

from __future__ import annotations

import json

from backend_fixtures import FakeServer

from tools.prefixbench.core.request_rows import RequestRow, rows_of
from tools.prefixbench.run.isolation import isolation_verdict, salting_cost
from tools.prefixbench.workload.salts import SaltSpace, salted_prompts


def _salt_blind_cache(block: int = 128):
    """``cached_tokens`` of a prefix cache keyed by tokens only: what a server that drops the salt reports."""
    seen: list[list[int]] = []

    def cached(prompt: list[int]) -> int:
        best = 0
        for earlier in seen:
            n = 0
            while n < min(len(earlier), len(prompt)) and earlier[n] == prompt[n]:
                n += 1
            best = max(best, min(n, len(prompt) - 1) // block * block)
        seen.append(list(prompt))
        return best

    return cached


def test_a_server_that_ignores_the_salt_fails_with_the_reason(tmp_path):
    from tools.prefixbench import cli

    out = tmp_path / "iso.json"
    with FakeServer(cached_tokens=_salt_blind_cache(), models={"data": [{"id": "m"}]}) as server:
        code = cli.main(["isolation", "--endpoint", server.base_url, "--model", "m", "--block-size", "128",
                         "--output", str(out), "--json", "--seed", "5"])
    result = json.loads(out.read_text())
    assert code == 0
    verdict = result["isolation"]
    assert verdict["verdict"] == "FAIL"
    assert verdict["leaks"] == ["probe2", "probe3"]  # salt b, then no salt, reuse salt a's blocks
    assert "salt b" in verdict["reasons"][0] and "reused blocks of salt a" in verdict["reasons"][0]
    probe = [r for r in result["requests"] if r["phase"] == "probe"]
    assert [r["cached_tokens"] for r in probe] == [0, 384, 384, 384, 384, 384]
    assert [r["predicted_hit_tokens"] for r in probe] == [0, 384, 0, 0, 384, 384]
    # the fake's salt-blind cache shares the prefix across tenants: salting costs nothing measured
    assert result["cost"]["measured_cost_points"] == 0 and result["cost"]["predicted_cost_points"] > 0
    assert "FAIL" in out.with_suffix(".md").read_text()


def _row(i, salt, may_hit, hit, status="ok"):
    return RequestRow.from_json({"id": f"p{i}", "label": str(salt), "salt_class": salt, "may_hit": may_hit,
                                 "status": status, "measured_hit_tokens": hit})


def test_verdict_rules():
    passing = [_row(0, "a", False, 0), _row(1, "a", True, 384), _row(2, None, False, 0), _row(3, None, True, 384)]
    assert isolation_verdict(passing, expected=4).verdict == "PASS"
    assert isolation_verdict(passing, expected=6).verdict == "UNKNOWN"  # an interrupted probe never passes
    caching_off = [_row(0, "a", False, 0), _row(1, "a", True, 0)]
    assert isolation_verdict(caching_off, expected=2).verdict == "UNKNOWN"
    unmeasured = [_row(0, "a", False, 0), _row(1, "a", True, None)]
    assert isolation_verdict(unmeasured, expected=2).verdict == "UNKNOWN"
    failed = [_row(0, "a", False, 0), _row(1, "a", None, None, status="error")]
    assert isolation_verdict(failed, expected=2).verdict == "UNKNOWN"
    leak = [_row(0, "a", False, 0), _row(1, "b", False, 128)]
    assert isolation_verdict(leak, expected=6).verdict == "FAIL"  # a leak fails even when cut short


def test_salting_cost_is_null_when_a_request_failed():
    rows = [{"phase": p, "sent_prompt_tokens": 100, "measured_hit_tokens": 50, "predicted_hit_tokens": 50,
             "status": "ok"} for p in ("salted", "unsalted")]
    assert salting_cost(rows_of(rows)).measured_cost_points == 0
    rows[1]["measured_hit_tokens"] = None  # finished, but without a figure
    assert salting_cost(rows_of(rows)).measured_cost_points is None
    assert salting_cost(rows_of(rows)).predicted_cost_points == 0
    rows[1]["measured_hit_tokens"] = 50
    rows[0]["status"] = "error"
    assert salting_cost(rows_of(rows)).measured_cost_points is None


def test_a_requests_own_counter_delta_comes_before_its_cached_tokens():
    from tools.prefixbench.run.isolation import _measured_tokens

    row = RequestRow.from_json({"id": "p0", "status": "ok", "cached_tokens": 16, "counter_hit_tokens": 32})
    assert _measured_tokens(row) == 32
    assert _measured_tokens(RequestRow.from_json({"id": "p0", "status": "ok", "cached_tokens": 16,
                                                   "counter_hit_tokens": None})) == 16


def test_salt_changes_every_block_key_and_same_salt_keeps_them():
    from tools.prefixbench.cache.blocks import BlockKeys

    prompt = list(range(10, 10 + 64))
    a1, a2, b, plain = salted_prompts([prompt] * 4, ["a", "a", "b", None])
    keys = BlockKeys()
    ka1, ka2, kb, kp = (keys.of(p, 16) for p in (a1, a2, b, plain))
    assert ka1 == ka2 and len(ka1) == 4
    assert not set(ka1) & set(kb) and not set(ka1) & set(kp) and not set(kb) & set(kp)
    assert SaltSpace().tokens(prompt, None) == prompt


def test_ctrl_c_writes_the_partial_result_and_exits_3(tmp_path, monkeypatch):
    from tools.prefixbench import cli
    from tools.prefixbench.run import live

    real, calls = live.send_one, []

    def interrupted_on_the_third(run, spec, t0):
        calls.append(spec.id)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(run, spec, t0)

    monkeypatch.setattr(live, "send_one", interrupted_on_the_third)
    out = tmp_path / "iso.json"
    with FakeServer(cached_tokens=_salt_blind_cache(), models={"data": [{"id": "m"}]}) as server:
        code = cli.main(["isolation", "--endpoint", server.base_url, "--model", "m", "--block-size", "128",
                         "--output", str(out), "--json"])
    result = json.loads(out.read_text())
    assert code == 3 and result["status"] == "interrupted" and "measure" in result["error"]
    assert [r["id"] for r in result["requests"]] == ["probe0", "probe1"]
    assert result["isolation"]["verdict"] == "UNKNOWN"


def test_a_first_request_that_hits_with_no_other_salt_before_it_names_earlier_traffic():
    found = isolation_verdict([_row(0, "a", False, 128), _row(1, "a", True, 128)], expected=2)
    assert found.verdict == "FAIL" and not found.reasons[0].rstrip().endswith("of")
    assert "before the run" in found.reasons[0]
