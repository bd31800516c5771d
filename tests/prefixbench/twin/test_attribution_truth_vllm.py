"""Attribution against the truth: vLLM's own scheduler runs overlapping requests, the send-order prediction
differs for some of them, and the attribution must name why, as the engine's own block events tell it.

The timeline replay with the arrivals vLLM used is the same run as vLLM's (tests/prefixbench/twin proves it per
request), so its KV events say, for the first block a request missed, whether that block had been cached before
the request was first looked up and evicted in between (``eviction`` / ``preemption``), or was not cached yet
(``in_flight``: both computed it). The attribution itself sees only what a client sees: send times, TTFTs, the
inter-token gap and the generated token ids (here one engine step is one second).
"""

from __future__ import annotations

import pytest

from backend_fixtures import requires_vllm

from tools.prefixbench.cache.engine_pool import REMOVED, STORED
from tools.prefixbench.simulate.attribution import attribute
from tools.prefixbench.simulate.timeline import KeyCache, SchedulerSettings, TimelineRequest, replay_timeline
from tools.prefixbench.twin.cases import make_case
from tools.prefixbench.twin.conformance import model_hits
from tools.prefixbench.twin.vllm_core import run_case

pytestmark = requires_vllm


def _truth(case, twin, request: int, block: int) -> str:
    """``evicted`` or ``not_cached`` for block ``block`` of ``request`` when vLLM first looked it up."""
    keys = KeyCache(case.block_size)
    reqs = [TimelineRequest(r.prompt, r.outputs, t.added_step) for r, t in zip(case.requests, twin.requests)]
    settings = SchedulerSettings(case.block_size, case.num_blocks, case.max_num_seqs, case.max_num_batched_tokens)
    replay = replay_timeline(reqs, settings, keys=keys, record_events=True)
    assert replay.hits == twin.hits
    key = keys.of(reqs[request])[block]
    before = replay.events[:replay.admitted_events[request]]
    stored = [i for i, e in enumerate(before) if e.kind == STORED and e.key == key]
    if not stored:
        return "not_cached"
    removed = [i for i, e in enumerate(before) if e.kind == REMOVED and e.key == key and i > stored[-1]]
    return "evicted" if removed else "cached"


def _rows(case, twin, predicted):
    return [{"id": str(i), "predicted_hit_tokens": p, "cached_tokens": t.hit_tokens, "sent_at_s": float(t.added_step),
             "ttft_ms": (t.first_token_step - t.added_step) * 1000.0, "itl_ms_mean": 1000.0,
             "output_token_ids": list(r.outputs)}
            for i, (r, t, p) in enumerate(zip(case.requests, twin.requests, predicted))]


@pytest.fixture(scope="module")
def misses():
    found = []
    for mode in ("concurrent", "preemption"):
        for seed in range(60):
            case = make_case(mode, seed)
            twin = run_case(case)
            predicted = model_hits(case)
            result = attribute([r.prompt for r in case.requests], _rows(case, twin, predicted), case.block_size,
                               preemptions=sum(t.preemptions for t in twin.requests) or None).to_json()
            for i, entry in enumerate(result["requests"]):
                if entry["difference"] and entry["difference"] < 0:
                    found.append((entry["cause"], _truth(case, twin, i, entry["first_block"])))
    return found


def test_there_are_misses_of_both_kinds(misses):
    kinds = {truth for _, truth in misses}
    assert len(misses) >= 30 and {"evicted", "not_cached"} <= kinds


def test_a_block_evicted_before_the_lookup_is_never_called_in_flight(misses):
    wrong = [(cause, truth) for cause, truth in misses if truth == "evicted" and cause == "in_flight"]
    assert not wrong, f"{len(wrong)} of {sum(t == 'evicted' for _, t in misses)} evicted blocks called in_flight"


def test_a_block_not_cached_yet_is_in_flight(misses):
    not_cached = [cause for cause, truth in misses if truth == "not_cached"]
    assert sum(c == "in_flight" for c in not_cached) >= 0.95 * len(not_cached), not_cached
