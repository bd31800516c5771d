"""Per-request attribution on hand-made runs (block size 4): each cause, and the shortfall breakdown."""

from __future__ import annotations

from tools.prefixbench.simulate import attribution


def attribute(*args, **kwargs):
    """The attribution as the result file holds it (``Attribution.to_json``)."""
    return attribution.attribute(*args, **kwargs).to_json()


P = list(range(10))  # two full blocks and two tokens


def _row(name, predicted, measured, sent=0.0, ttft_ms=10.0):
    return {"id": name, "predicted_hit_tokens": predicted, "cached_tokens": measured, "sent_at_s": sent,
            "ttft_ms": ttft_ms}


def test_equal_counts_have_no_cause_and_the_shortfall_is_broken_down():
    prompts = [P, P[:9] + [99], P[:8]]
    rows = [_row("a", 0, 0), _row("b", 8, 8, sent=1), _row("c", 4, 4, sent=2)]
    found = attribute(prompts, rows, 4)
    a, b, c = found["requests"]
    assert a["cold"] and a["cause"] is None and a["difference"] == 0
    assert b["shared_full_blocks"] == 2 and b["lost_tokens"]["block_alignment"] == 1  # token 8 shared, 9 not
    assert c["lost_tokens"]["last_token_rule"] == 4  # all 8 tokens cached, the last block is recomputed
    assert found["summary"]["requests_that_differ"] == 0 and found["summary"]["cold_requests"] == 1


def test_a_request_sent_before_its_source_finished_prefill_is_in_flight():
    rows = [_row("a", 0, 0, sent=0.0, ttft_ms=500), _row("b", 8, 0, sent=0.1)]
    b = attribute([P, P], rows, 4)["requests"][1]
    assert b["difference"] == -8 and b["cause"] == "in_flight" and "a" in b["detail"]


def test_a_missing_block_after_its_source_finished_is_eviction_or_preemption():
    rows = [_row("a", 0, 0, sent=0.0, ttft_ms=5), _row("b", 8, 4, sent=1.0)]
    assert attribute([P, P], rows, 4)["requests"][1]["cause"] == "eviction"
    assert attribute([P, P], rows, 4, preemptions=2)["requests"][1]["cause"] == "preemption"


def test_extra_hits_are_eviction_order_admission_order_or_earlier_traffic():
    kept = attribute([P, P], [_row("a", 0, 0), _row("b", 0, 8, sent=1)], 4)["requests"][1]
    assert kept["cause"] == "eviction_order"
    first = attribute([P, P], [_row("a", 0, 4), _row("b", 0, 0, sent=0.01)], 4)["requests"][0]
    assert first["cause"] == "admission_order" and "b" in first["detail"]
    cold = attribute([P], [_row("a", 0, 8)], 4)["requests"][0]
    assert cold["cause"] == "earlier_traffic"


def test_prefill_prompts_count_as_earlier_traffic_that_the_model_saw():
    found = attribute([P], [_row("a", 8, 8)], 4, earlier=[P[:8]])["requests"][0]
    assert found["shared_full_blocks"] == 2 and found["lost_tokens"]["eviction"] == 0 and not found["cold"]


def test_a_hit_on_an_earlier_answer_is_attributed_to_the_request_that_generated_it():
    answer = [50, 51, 52, 53, 54, 55, 56]
    first = {**_row("a", 0, 0), "output_token_ids": answer + [57]}
    turn = P + answer + [90, 91]  # the chat client resends the answer (its KV covers all but the last token)
    found = attribute([P, turn], [first, _row("b", 8, 16, sent=1.0)], 4)["requests"][1]
    assert found["shared_full_blocks"] == 4  # two prompt blocks and the two blocks of a's answer
    assert found["cause"] == "eviction_order" and "a" in found["detail"]
    without_ids = attribute([P, turn], [_row("a", 0, 0), _row("b", 8, 16, sent=1.0)], 4)["requests"][1]
    assert without_ids["shared_full_blocks"] == 2 and without_ids["cause"] == "earlier_traffic"


def test_a_miss_on_a_block_the_source_had_not_generated_yet_is_in_flight():
    answer = [50, 51, 52, 53, 54, 55, 56, 57]
    first = {**_row("a", 0, 0, sent=0.0, ttft_ms=100), "output_token_ids": answer, "itl_ms_mean": 100.0}
    turn = P + answer[:6] + [90]
    early = {**_row("b", 16, 8, sent=0.15, ttft_ms=50), "itl_ms_mean": 100.0}  # looked up at 0.2 s
    assert attribute([P, turn], [first, early], 4)["requests"][1]["cause"] == "in_flight"
    late = {**_row("b", 16, 8, sent=2.0, ttft_ms=50), "itl_ms_mean": 100.0}
    assert attribute([P, turn], [first, late], 4)["requests"][1]["cause"] == "eviction"
