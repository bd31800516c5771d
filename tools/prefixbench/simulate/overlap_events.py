"""The server's KV events against the timeline replay of overlapping requests: per block, and per differing request.

The timeline (``simulate.overlap``) predicts from the client's view; the KV events are the engine's own record of
every block it cached, reported as a hit, or evicted. Two uses:

- **per block**: the timeline's events, replayed at the arrivals it inferred, walked beside the published ones
  (``block_events.compare_block_events``) up to the first that differs;
- **per differing request**: the first block where the prediction and the server's answer part, and what the
  server's events say happened to it. A block the server gave less of was evicted by the server (it published
  the removal; the timeline had not evicted it before the lookup) or was never evicted and so not yet cached
  (``in_flight``). A block the server gave more of was still cached there: the timeline evicted it too early
  (``eviction_order``) or cached it too late (``admission_order``). Each cause names the event that shows it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping, Sequence

from ..cache.engine_pool import REMOVED, STORED
from ..core.kv_event_records import EventCause, TimelineEvents
from .block_events import EngineReplay, compare_block_events, published_block_events
from .timeline import TimelineResult


@dataclass(frozen=True)
class Compared:
    """Per request, in queue order: its name, its prompt's full-block keys, the timeline's hit and the server's."""

    names: Sequence[str]
    prompt_keys: Sequence[Sequence[int]]
    predicted: Sequence[int | None]
    measured: Sequence[int | None]


def confirm(timeline: TimelineResult, batches: Sequence[Mapping], compared: Compared,
            block_size: int) -> TimelineEvents:
    """Per-block agreement and, for each request whose prediction differs, its cause from the events.

    ``timeline`` is the replay (``record_events``, ``report_hits``) in queue order, as ``compared`` is."""
    assert timeline.pool is not None and timeline.events is not None, "replayed with record_events"
    replay = EngineReplay([h or 0 for h in timeline.hits], timeline.evictions, timeline.pool)
    walked = compare_block_events(batches, replay, compared.names)
    seen, _ = published_block_events(batches, timeline.pool.keys, block_size)
    causes: dict[str, EventCause] = {}
    for k, (name, want, got) in enumerate(zip(compared.names, compared.predicted, compared.measured, strict=True)):
        if want is None or got is None or want == got:
            continue
        causes[name] = _cause(k, compared.prompt_keys[k], (want, got), block_size, timeline, seen)
    # the section writes neither of these: the record holds what it writes, so it reads back equal
    return TimelineEvents(replace(walked, hits_published=None, batches=None), causes)


def _cause(k: int, keys: Sequence[int], hits: tuple[int, int], block_size: int, timeline: TimelineResult,
           seen: Sequence[tuple]) -> EventCause:
    """Request ``k``'s first differing block and what the events say of it; ``hits`` is (predicted, measured)."""
    predicted, measured = hits
    block = min(predicted, measured) // block_size
    if block >= len(keys):
        return EventCause(None, block, False, "the differing block is past the prompt's full blocks")
    key = keys[block]
    removed = [i for i, (kind, got) in enumerate(seen) if got == key and kind == REMOVED]
    stored = [i for i, (kind, got) in enumerate(seen) if got == key and kind == STORED]
    lookup = timeline.admitted_events[k] if k < len(timeline.admitted_events) else None
    model = timeline.events[:lookup] if lookup is not None and timeline.events is not None else []
    model_removed = sum(1 for e in model if e.key == key and e.kind == REMOVED)
    if measured < predicted:
        if len(removed) > model_removed:
            return EventCause("eviction", block, True,
                              f"the server evicted block {block} (published removal, event {removed[0]}); the "
                              f"timeline had not evicted it before the lookup")
        if not removed:
            return EventCause("in_flight", block, bool(stored),
                              f"the server never evicted block {block}, so it was not cached yet at the lookup "
                              f"(first stored at event {stored[0] if stored else None})")
        return EventCause("eviction", block, False,
                          f"the server evicted block {block} {len(removed)} times, the timeline as often")
    if model_removed:
        return EventCause("eviction_order", block, True,
                          f"the timeline evicted block {block} before the lookup; the server still had it "
                          f"(its removals: {len(removed)})")
    return EventCause("admission_order", block, bool(stored),
                      f"the timeline cached block {block} after the lookup; the server had it by then "
                      f"(stored at event {stored[0] if stored else None})")
