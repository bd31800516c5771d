"""The KV-event and timeline records write the keys the files always had, in that order (the literals below are
what the code before these records wrote), and read them back unchanged."""

from __future__ import annotations

from tools.prefixbench.core.kv_event_records import KvEventCheck, TimelineEvents
from tools.prefixbench.core.timeline_records import TimelineSection
from tools.prefixbench.simulate.block_events import compare_block_events, engine_replay
from tools.prefixbench.simulate.overlap import SentRequest, timeline_section

BLOCK = 4
PREFIX = list(range(100, 108))  # two full blocks


def _stored(hashes, tokens):
    return {"type": "BlockStored", "block_hashes": hashes, "parent_block_hash": None, "token_ids": tokens,
            "block_size": BLOCK}


def _section(**kwargs) -> TimelineSection:
    first = SentRequest(PREFIX + [1, 2], [50, 51], 0.0, [(0.2, 1), (1.2, 2)])
    second = SentRequest(PREFIX + [3], [60, 61], 2.5, [(3.3, 1), (4.3, 2)])
    return timeline_section(["a", "b"], [first, second], [0, 0], BLOCK, 64, **kwargs)


def test_a_timeline_with_a_cause_and_a_reference_keeps_every_key_in_order_and_reads_back():
    evicted = [{"events": [{"type": "AllBlocksCleared"}, _stored([11, 12], PREFIX)]},
               {"events": [{"type": "BlockRemoved", "block_hashes": [12, 11]}]},
               {"events": [_stored([11, 12], PREFIX)]}]
    section = _section(batches=evicted, reference=lambda timed, settings: ("ref", [0] * len(timed)))
    written = section.to_json()
    assert list(written) == ["status", "model", "scheduler", "window_steps", "predicted_hit_tokens", "requests_exact",
                             "requests_that_differ", "unsettled", "differ_outside_range", "kv_events", "reference",
                             "requests"]
    assert list(written["scheduler"]) == ["max_num_seqs", "max_num_batched_tokens", "source"]
    assert list(written["kv_events"]) == ["status", "reason", "first_divergence", "events_expected", "events_seen",
                                          "causes"]
    assert list(written["kv_events"]["causes"]["b"]) == ["cause", "block", "confirmed", "detail"]
    assert list(written["kv_events"]["first_divergence"]) == ["event", "request", "block", "expected", "seen"]
    assert list(written["reference"]) == ["status", "model", "hits", "agrees_with_timeline", "agrees_with_server"]
    assert list(written["requests"][0]) == ["id", "predicted_hit_tokens", "cached_tokens", "arrival_step", "range"]
    assert TimelineSection.from_json(written) == section and TimelineSection.from_json(written).to_json() == written


def test_sections_that_did_not_run_write_their_status_and_reason_only():
    assert TimelineSection.not_run("no block size").to_json() == {"status": "not_run", "reason": "no block size"}
    without = _section().to_json()
    assert "reference" not in without and without["kv_events"] == {"status": "not_run",
                                                                    "reason": "no KV events recorded"}
    assert TimelineSection.from_json(without).to_json() == without
    assert TimelineEvents.from_json(without["kv_events"]) == TimelineEvents.not_run("no KV events recorded")


def test_a_check_that_could_not_be_aligned_keeps_its_counts_and_reads_back():
    replay = engine_replay([PREFIX], [[50]], BLOCK, 8, record_events=True, report_hits=True)
    check = compare_block_events([], replay, ["a"], reset=False)
    assert check.to_json() == {"events_expected": 2, "events_seen": None, "first_divergence": None,
                               "hits_published": True, "batches": 0, "status": "not_comparable",
                               "reason": "the cache was not reset: the events cannot be aligned with the model's start"}
    assert KvEventCheck.from_json(check.to_json()) == check
