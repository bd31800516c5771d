"""The engine model against vLLM's own scheduler, driven in-process (no server, no weights, a fake model runner).

Every mode must agree on every request over thousands of seeded cases: one request at a time through the
send-order engine model, overlapping requests and preemption through the timeline replay, which sees only the
steps a client observes (each request's first and last token), never the arrival steps. The harness itself is
checked too: a deliberately wrong model is caught, shrunk and printed as a test that fails when pasted.
"""

from __future__ import annotations

import pytest

from backend_fixtures import requires_vllm

from tools.prefixbench.twin.cases import Case, CaseRequest, make_case
from tools.prefixbench.twin.conformance import EXACT_MODES, check_case, record, reproduction, run_suite, shrink

pytestmark = requires_vllm


@pytest.fixture(scope="module")
def suite():
    tallies = run_suite(seeds=range(4), cases_per_seed=25, requests_per_case=12)
    tallies.update(run_suite(["concurrent"], seeds=range(4, 8), cases_per_seed=25, requests_per_case=12))
    return tallies


@pytest.mark.parametrize("mode", EXACT_MODES)
def test_every_mode_agrees_with_vllm_on_every_request(suite, mode):
    tally = suite[mode]
    assert tally.requests >= 1200
    assert tally.agreeing == tally.requests, tally.first_divergence


def test_overlap_needs_the_timeline(suite):
    """Send-order replay misses requests once they overlap; the timeline replay settles every one of them."""
    for mode in ("concurrent", "preemption"):
        assert suite[mode].send_order_agreeing < suite[mode].requests
        assert suite[mode].agreeing == suite[mode].requests
        assert suite[mode].unsettled == 0


def test_the_cases_exercise_what_they_claim(suite):
    """Eviction changes hits, chunked budgets split prompts, the preemption mode preempts: else agreement is cheap."""
    assert suite["preemption"].preempted_cases >= 20
    evicting = sum(check_case(case).vllm != _unbounded_hits(case)
                   for case in (make_case("sequential", seed) for seed in range(20)))
    assert evicting >= 3
    chunked = [make_case("chunked", seed) for seed in range(20)]
    assert sum(any(len(r.prompt) > c.max_num_batched_tokens for r in c.requests) for c in chunked) >= 10


def _unbounded_hits(case: Case) -> list[int]:
    from dataclasses import replace

    from tools.prefixbench.twin.conformance import model_hits

    return model_hits(replace(case, num_blocks=100_000))


def test_the_record_names_versions_models_and_agreement(suite):
    rec = record(suite, "0.32.0")
    modes = {m["mode"]: m for m in rec["modes"]}
    assert rec["exact_modes_agree"] is True and rec["rules_version"] == "0.32.0"
    assert modes["concurrent"]["model"] == "timeline" and modes["reset"]["model"] == "send_order"
    assert modes["concurrent"]["agreement"] == 1.0 > modes["concurrent"]["send_order_agreement"]


def test_same_arrival_steps_give_the_same_hits_every_time():
    case = make_case("concurrent", 7)
    first, second = check_case(case), check_case(case)
    assert first.vllm == second.vllm and any(first.vllm), first.vllm  # the same, and the case does reuse blocks
    assert first.differing == []  # the timeline model agrees with it on every request


def test_blocks_are_cached_when_scheduled_not_when_computed():
    """Two identical 64-token prompts added before the same step both run in it; the second hits 48 tokens."""
    prompt = tuple(range(100, 164))
    case = Case("concurrent", 0, 16, 64, 4, 4096,
                (CaseRequest(prompt, (7, 7), arrival=0), CaseRequest(prompt, (7, 7), arrival=0)))
    assert check_case(case).vllm == [0, 48]


def test_a_wrong_model_is_caught_shrunk_and_printed_as_a_failing_test(monkeypatch):
    """The harness can fail: a model that forgets the last-token rule differs, and the printed case still fails."""
    import tools.prefixbench.twin.conformance as conformance

    def no_last_token_rule(case):
        return [min(h + case.block_size, len(r.prompt) // case.block_size * case.block_size)
                if h and len(r.prompt) % case.block_size == 0 else h
                for h, r in zip(real_model(case), case.requests)]

    real_model = conformance.model_hits
    prompt = tuple(range(200, 232))
    case = Case("reset", 3, 16, 64, requests=(CaseRequest(prompt, (5,)), CaseRequest(prompt, (6,)),
                                                     CaseRequest(prompt + (9,), (5, 5))))
    monkeypatch.setattr(conformance, "model_hits", no_last_token_rule)
    result = check_case(case)
    assert result.differing == [1]
    small = shrink(case, lambda c: bool(check_case(c).differing))
    assert len(small.requests) == 2
    source = reproduction(check_case(small))
    namespace: dict = {}
    exec(compile(source, "<reproduction>", "exec"), namespace)
    with pytest.raises(AssertionError):
        namespace["test_conformance_reset_seed_3"]()
