"""``simulate.overlap``: arrivals inferred from what a client saw, the hard bound they respect, the section."""

from __future__ import annotations

from tools.prefixbench.simulate import overlap
from tools.prefixbench.simulate.overlap import SentRequest, replay_sent
from tools.prefixbench.simulate.timeline import SchedulerSettings


def timeline_section(*args, **kwargs):
    """The section as the result file holds it (``TimelineSection.to_json``)."""
    return overlap.timeline_section(*args, **kwargs).to_json()


BLOCK = 4
PREFIX = list(range(100, 108))  # two full blocks


def _stream(first: float, count: int) -> list[tuple[float, int]]:
    return [(first + i, i + 1) for i in range(count)]


def test_a_request_sent_after_a_token_came_arrives_after_that_token_s_step():
    settings = SchedulerSettings(BLOCK, 64, 8, 64)
    first = SentRequest(PREFIX + [1, 2], list(range(500, 508)), 0.0, _stream(0.2, 8))
    # sent once the first stream had delivered 5 tokens (steps 0..4): it cannot have arrived before step 5
    second = SentRequest(PREFIX + [3], list(range(600, 604)), 4.5, _stream(5.3, 4))
    replay = replay_sent([first, second], settings)
    assert replay.arrivals[0] == 0 and replay.bounds[1][0] == 5 and replay.arrivals[1] >= 5
    assert replay.hits == [0, 8]  # the prefix was cached when the first request was scheduled


def test_one_at_a_time_requests_come_before_the_overlapping_ones():
    settings = SchedulerSettings(BLOCK, 64, 8, 64)
    warm = SentRequest(PREFIX + [9], [7, 7], 0.0, [], alone=True)
    later = [SentRequest(PREFIX + [k], [k] * 3, 0.0, _stream(0.1, 3)) for k in (1, 2)]
    replay = replay_sent([warm, *later], settings)
    assert replay.arrivals[1] > replay.arrivals[0] + 1  # after the warm-up request finished
    assert replay.hits == [0, 8, 8]


def test_the_section_names_what_differs_and_what_no_range_covers():
    first = SentRequest(PREFIX + [1, 2], list(range(500, 508)), 0.0, _stream(0.2, 8))
    second = SentRequest(PREFIX + [3], list(range(600, 604)), 4.5, _stream(5.3, 4))
    section = timeline_section(["a", "b"], [first, second], [0, 4], BLOCK, 64)
    assert section["status"] == "ok" and section["predicted_hit_tokens"] == 8
    assert section["requests_exact"] == 1 and section["requests_that_differ"] == ["b"]
    assert section["differ_outside_range"] == ["b"] and section["unsettled"] == {}
    assert [r["id"] for r in section["requests"]] == ["a", "b"]


def _batch(seq, *events):
    return {"seq": seq, "ts": float(seq), "events": list(events)}


def _stored(hashes, tokens, parent=None):
    return {"type": "BlockStored", "block_hashes": hashes, "parent_block_hash": parent, "token_ids": tokens,
            "block_size": BLOCK}


def test_kv_events_check_the_timeline_per_block_and_name_each_difference_s_cause():
    first = SentRequest(PREFIX + [1, 2], [50, 51], 0.0, _stream(0.2, 2))
    second = SentRequest(PREFIX + [3], [60, 61], 2.5, _stream(3.3, 2))
    # what the timeline expects: the first request stores both prefix blocks, the second reports them as hits
    same = [_batch(0, {"type": "AllBlocksCleared"}, _stored([11, 12], PREFIX)),
            _batch(1, _stored([11, 12], PREFIX))]
    section = timeline_section(["a", "b"], [first, second], [0, 8], BLOCK, 64, batches=same)
    assert section["requests_exact"] == 2 and section["kv_events"]["status"] == "agree"
    assert section["kv_events"]["causes"] == {}
    # the server evicted the prefix before the second request looked: it hit nothing, and its events show why
    evicted = [same[0], _batch(1, {"type": "BlockRemoved", "block_hashes": [12, 11]}), _batch(2, _stored([11, 12], PREFIX))]
    section = timeline_section(["a", "b"], [first, second], [0, 0], BLOCK, 64, batches=evicted)
    cause = section["kv_events"]["causes"]["b"]
    assert section["requests_that_differ"] == ["b"] and section["kv_events"]["status"] == "diverged"
    assert (cause["cause"], cause["block"], cause["confirmed"]) == ("eviction", 0, True), cause
    # never evicted, yet missed: it was not cached yet when the second request looked (in flight)
    late = [_batch(0, {"type": "AllBlocksCleared"}), _batch(1, _stored([11, 12], PREFIX))]
    cause = timeline_section(["a", "b"], [first, second], [0, 0], BLOCK, 64, batches=late)["kv_events"]["causes"]["b"]
    assert (cause["cause"], cause["confirmed"]) == ("in_flight", True), cause
    without = timeline_section(["a", "b"], [first, second], [0, 8], BLOCK, 64)["kv_events"]
    assert without == {"status": "not_run", "reason": "no KV events recorded"}


def test_a_reference_model_replays_the_same_arrivals_and_is_scored_against_both_sides():
    first = SentRequest(PREFIX + [1, 2], [50, 51], 0.0, _stream(0.2, 2))
    second = SentRequest(PREFIX + [3], [60, 61], 2.5, _stream(3.3, 2))
    seen = []

    def reference(timed, settings):
        seen.append([(len(r.prompt), r.arrival) for r in timed])
        return "a model that never hits", [0] * len(timed)

    section = timeline_section(["a", "b"], [first, second], [0, 8], BLOCK, 64, reference=reference)
    assert seen == [[(10, 0), (9, section["requests"][1]["arrival_step"])]]  # the timeline's own arrivals
    assert section["reference"] == {"status": "ok", "model": "a model that never hits", "hits": [0, 0],
                                    "agrees_with_timeline": 1, "agrees_with_server": 1}
