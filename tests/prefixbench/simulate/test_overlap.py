"""``simulate.overlap``: arrivals inferred from what a client saw, the hard bound they respect, the section."""

from __future__ import annotations

from tools.prefixbench.simulate.overlap import SentRequest, replay_sent, timeline_section
from tools.prefixbench.simulate.timeline import SchedulerSettings

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
