"""The attribution's records write the keys the files always had, in that order, and read them back."""

from tools.prefixbench.core.attribution_records import (Attribution, AttributedRequest, AttributionSummary,
                                                        LostTokens)
from tools.prefixbench.simulate.attribution import CAUSES, attribute

P = list(range(10))  # two full blocks of 4 and two tokens


def test_a_differing_request_is_written_with_its_first_block_last_and_an_equal_one_without():
    rows = [{"id": "a", "predicted_hit_tokens": 0, "cached_tokens": 0, "sent_at_s": 0.0, "ttft_ms": 500.0},
            {"id": "b", "predicted_hit_tokens": 8, "cached_tokens": 0, "sent_at_s": 0.1, "ttft_ms": 10.0}]
    found = attribute([P, P], rows, 4)
    equal, differs = (r.to_json() for r in found.requests)
    assert list(equal) == ["id", "predicted", "measured", "shared_full_blocks", "cold", "lost_tokens", "difference",
                           "cause", "detail"]
    assert list(differs) == [*equal, "first_block"] and differs["first_block"] == 0
    assert list(differs["lost_tokens"]) == ["block_alignment", "last_token_rule", "eviction"]
    assert list(found.to_json()) == ["requests", "summary"]
    assert list(found.summary.to_json()) == ["requests", "requests_that_differ", "difference_tokens", "by_cause",
                                             "cold_requests", "lost_tokens"]
    assert Attribution.from_json(found.to_json()) == found
    assert Attribution.from_json(None) is None and Attribution.from_json({"requests": [], "summary": None}) is None


def test_the_summary_counts_every_cause_and_sums_known_lost_tokens_only():
    requests = [AttributedRequest("a", None, 4, 1, False, LostTokens(1, 0, None), None, None, "not predicted"),
                AttributedRequest("b", 8, 4, 2, False, LostTokens(0, 4, 0), -4, "eviction", "gone", 1),
                AttributedRequest("c", 0, 0, 0, True, LostTokens(0, 0, 0), 0, None, None)]
    summary = AttributionSummary.of(requests, CAUSES)
    assert (summary.requests, summary.requests_that_differ, summary.difference_tokens, summary.cold_requests) == \
        (3, 1, -4, 1)
    assert summary.by_cause == {cause: int(cause == "eviction") for cause in CAUSES}
    assert summary.lost_tokens == {"block_alignment": 1, "last_token_rule": 4, "eviction": 0}
