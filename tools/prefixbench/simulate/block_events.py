"""Per-block evidence: the engine model's KV events replayed against the ones a vLLM server published.

The counters say how many tokens hit; per-request ``cached_tokens`` say which request hit how much; the KV events
say which block was cached and which was evicted, in order. ``engine_replay`` runs the requests on
``cache.engine_pool.VllmBlockPool`` with its event log on; ``compare_block_events`` maps each published block
(parent hash + token ids) onto the model's block keys and walks both lists to the first event that differs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping, Sequence

from ..cache.blocks import BlockKeys
from ..cache.engine_pool import REMOVED, REUSED, STORED, BlockEvent, VllmBlockPool
from ..core.kv_event_records import Divergence, EventSide, KvEventCheck

STORED_EVENT, REMOVED_EVENT, CLEARED_EVENT = "BlockStored", "BlockRemoved", "AllBlocksCleared"


@dataclass
class EngineReplay:
    """What the engine model did with a run's requests: hits per request, evictions, and its pool (events)."""

    hits: list[int]
    evictions: int
    pool: VllmBlockPool


def engine_replay(prompts: Sequence[Sequence[int]], outputs: Sequence[Sequence[int]], block_size: int,
                  num_blocks: int, *, record_events: bool = False, report_hits: bool = False) -> EngineReplay:
    """Serve each request alone, in order (raises ``PoolExhausted`` when one does not fit)."""
    pool = VllmBlockPool(num_blocks, block_size, record_events=record_events, report_hits=report_hits)
    hits = [pool.serve(p, list(o)) for p, o in zip(prompts, outputs, strict=True)]
    return EngineReplay(hits, pool.evictions, pool)


def server_block_events(batches: Sequence[Mapping], replay: EngineReplay) -> tuple[list[tuple], dict]:
    """The published events from the last ``AllBlocksCleared`` on, one ``(kind, key)`` per block, keyed like the
    model's blocks; a removed hash never stored since gets key ``None``."""
    return published_block_events(batches, replay.pool.keys, replay.pool.block_size)


def published_block_events(batches: Sequence[Mapping], keys: BlockKeys, size: int) -> tuple[list[tuple], dict]:
    """``server_block_events`` keyed with ``keys`` (a replay's block keys) for blocks of ``size`` tokens."""
    flat = [event for batch in batches for event in batch["events"]]
    cleared = [i for i, event in enumerate(flat) if event.get("type") == CLEARED_EVENT]
    info = {"batches": len(batches), "cleared_seen": bool(cleared), "foreign_block_size": None}
    key_of: dict = {}
    seen: list[tuple] = []
    for event in flat[cleared[-1] + 1 if cleared else 0:]:
        kind = event.get("type")
        if kind == STORED_EVENT:
            if event.get("block_size") != size:
                info["foreign_block_size"] = event.get("block_size")
            parent = event.get("parent_block_hash")
            key = None if parent is None else key_of.get(parent, -1)
            tokens = event.get("token_ids") or []
            for i, block_hash in enumerate(event.get("block_hashes") or []):
                key = -1 if key == -1 else keys.child(key, tokens[i * size:(i + 1) * size])
                key_of[block_hash] = key
                seen.append((STORED, None if key == -1 else key))
        elif kind == REMOVED_EVENT:
            for block_hash in event.get("block_hashes") or []:
                key = key_of.get(block_hash)
                seen.append((REMOVED, None if key == -1 else key))
    return seen, info


def compare_block_events(batches: Sequence[Mapping], replay: EngineReplay, request_names: Sequence[str], *,
                         gaps: Sequence[int] = (), reset: bool = True) -> KvEventCheck:
    """Walk the model's events and the server's side by side; ``status`` agree / diverged / incomplete /
    not_comparable, with the first divergence named by request and block."""
    expected = replay.pool.events or []
    walk = KvEventCheck(None, None, events_expected=len(expected), hits_published=replay.pool.report_hits,
                        batches=len(batches))
    if not reset:
        return replace(walk, status="not_comparable",
                       reason="the cache was not reset: the events cannot be aligned with the model's start")
    seen, info = server_block_events(batches, replay)
    walk = replace(walk, events_seen=len(seen))
    problem = _incomplete(info, gaps, len(batches))
    if problem:
        return replace(walk, status="incomplete", reason=problem)
    names = _block_names(expected, request_names)
    for index, (want, got) in enumerate(zip(expected, seen, strict=False)):  # a length difference: below
        if (published_kind(want.kind), want.key) != got:
            return replace(walk, status="diverged",
                           first_divergence=_divergence(index, want, got, names, request_names))
    if len(expected) != len(seen):
        index = min(len(expected), len(seen))
        unseen = expected[index] if index < len(expected) else None
        unexpected = seen[index] if index < len(seen) else None
        return replace(walk, status="diverged",
                       first_divergence=_divergence(index, unseen, unexpected, names, request_names))
    return replace(walk, status="agree")


def _incomplete(info: Mapping, gaps: Sequence[int], batches: int) -> str | None:
    if gaps:
        return f"{len(gaps)} event batches were lost (sequence numbers {list(gaps)[:5]}...)"
    if not batches:
        return "no KV event arrived: was the server started with --kv-events-config pointing at this recorder?"
    if not info["cleared_seen"]:
        return "the reset's AllBlocksCleared never arrived: the subscription started after it"
    if info["foreign_block_size"] is not None:
        return f"the server published blocks of {info['foreign_block_size']} tokens, not the model's block size"
    return None


def published_kind(kind: str) -> str:
    """The kind vLLM publishes for a model event: a reported hit goes out as ``BlockStored``."""
    return STORED if kind in (STORED, REUSED) else kind


def _block_names(expected: Sequence[BlockEvent], request_names: Sequence[str]) -> dict:
    """Each key the model cached -> "request R block i", where it first appeared."""
    names: dict = {}
    for event in expected:
        if event.kind in (STORED, REUSED) and event.key not in names:
            names[event.key] = f"{_name(request_names, event.request)} block {event.block}"
    return names


def _divergence(index: int, want: BlockEvent | None, got: tuple | None, names: Mapping,
                request_names: Sequence[str]) -> Divergence:
    return Divergence(
        event=index,
        request=_name(request_names, want.request) if want else None,
        block=want.block if want else None,
        expected=EventSide(want.kind, names.get(want.key)) if want else None,
        seen=EventSide(got[0], names.get(got[1], "a block the model never cached" if got[1] is None
                                         else "a block the model did not cache")) if got else None,
    )


def _name(request_names: Sequence[str], index: int) -> str:
    return request_names[index] if 0 <= index < len(request_names) else f"request {index}"
