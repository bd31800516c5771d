"""What a server's prefix-cache counters should show, and the one rule that says when that is exact.

``predict_pool`` (``predict_hits``: its JSON) runs the library simulator the way vLLM v1 counts: the server's
block size and capacity, the last prompt token always recomputed, the exact token ids in the order the server
received them. Earlier traffic still in the cache (warm-up prompts that could not be reset away, the hit-rate
mode's prefill) is simulated first and left out of the counts, exactly as a counter snapshot taken after it
leaves it out.

Under eviction the teaching policy ``lru`` only approximates the engine's order. When the server's pool size is
known and every request's generated token ids were recorded, ``predict_hits`` replays them on
``cache.engine_pool.VllmBlockPool`` instead (policy ``vllm_block_pool``), which follows vLLM's own block-pool
rules: exact when blocks are evicted and the requests ran one at a time; an estimate (one at a time, in the order
sent) when they overlapped.

``judged`` attaches the exactness verdict. Both the G0/G1 experiment and the hit-rate mode use it, so a caveat
means the same thing wherever it is printed. A prediction is exact only when nothing in ``RunConditions``
makes the server's count depend on something the simulator does not model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from ..cache.blocks import BlockKeys, max_hit_blocks
from ..cache.engine_pool import VLLM_VERSION_MODELLED, PoolExhausted
from ..cache.prefix_cache import PrefixCache
from ..core.live_records import EngineModel, Prediction
from .block_events import EngineReplay, engine_replay
from .sequences import simulate_prefix_cache

MODELLED_POLICY = "lru"
ENGINE_POLICY = "vllm_block_pool"


def predict_hits(prompts: Sequence[Sequence[int]], block_size: int, capacity_blocks: int | None,
                 warmup_prompts: Sequence[Sequence[int]] = (), *,
                 outputs: Sequence[Sequence[int] | None] | None = None,
                 warmup_outputs: Sequence[Sequence[int] | None] | None = None, sequential: bool = False) -> dict:
    """Predicted hit and query tokens for ``prompts`` (in server order), per request and in total.

    ``outputs`` (each request's generated token ids, ``None`` where unknown) and ``sequential`` (one request at a
    time) let the engine model run when ``capacity_blocks`` is the server's pool size; otherwise ``lru`` runs and
    ``engine_model.reason`` says why.
    """
    return predict_with_replay(prompts, block_size, capacity_blocks, warmup_prompts, outputs=outputs,
                               warmup_outputs=warmup_outputs, sequential=sequential)[0]


def predict_with_replay(prompts: Sequence[Sequence[int]], block_size: int, capacity_blocks: int | None,
                        warmup_prompts: Sequence[Sequence[int]] = (), *,
                        outputs: Sequence[Sequence[int] | None] | None = None,
                        warmup_outputs: Sequence[Sequence[int] | None] | None = None, sequential: bool = False,
                        record_events: bool = False, report_hits: bool = False) -> tuple[dict, EngineReplay | None]:
    """``predict_pool`` as JSON, the per-request hit tokens included (for callers that still read dicts)."""
    prediction, engine = predict_pool(prompts, block_size, capacity_blocks, warmup_prompts, outputs=outputs,
                                      warmup_outputs=warmup_outputs, sequential=sequential,
                                      record_events=record_events, report_hits=report_hits)
    return prediction.to_json(), engine


def predict_pool(prompts: Sequence[Sequence[int]], block_size: int, capacity_blocks: int | None,
                 warmup_prompts: Sequence[Sequence[int]] = (), *,
                 outputs: Sequence[Sequence[int] | None] | None = None,
                 warmup_outputs: Sequence[Sequence[int] | None] | None = None, sequential: bool = False,
                 record_events: bool = False, report_hits: bool = False) -> tuple[Prediction, EngineReplay | None]:
    """``predict_hits`` as a record, and the engine model's replay (its KV events with ``record_events``) when it
    ran."""
    warm = [list(p) for p in warmup_prompts]
    engine, reason = None, _engine_blocker(capacity_blocks, outputs, len(prompts), warmup_outputs, len(warm))
    if reason is None:
        assert capacity_blocks is not None and outputs is not None  # what _engine_blocker checked
        recorded = [o for o in [*(warmup_outputs or []), *outputs] if o is not None]  # all of them (checked too)
        try:
            engine = engine_replay([*warm, *prompts], recorded, block_size, capacity_blocks,
                                   record_events=record_events, report_hits=report_hits)
        except PoolExhausted as exc:
            reason = f"the engine model ran out of blocks ({exc}): the server preempted or queued a request"
    if engine is not None:
        per_request, evictions, policy = engine.hits[len(warm):], engine.evictions, ENGINE_POLICY
    else:
        result = simulate_prefix_cache(warm + [list(p) for p in prompts], block_size, capacity_blocks,
                                       policy=MODELLED_POLICY, last_token_rule=True, per_request=True)
        hit_tokens, evicted = result["per_request_hit_tokens"], result["eviction_count"]
        assert isinstance(hit_tokens, list) and isinstance(evicted, int)  # (per_request=True)
        per_request, evictions, policy = hit_tokens[len(warm):], evicted, MODELLED_POLICY
    if engine is not None and not sequential:
        reason = ("requests overlapped in time: the engine model replayed them one at a time in the order sent, "
                  "so this is an estimate (per-request differences are attributed in the result)")
    queries, hits = sum(len(p) for p in prompts), sum(per_request)
    prediction = Prediction(
        predicted_hit_tokens=hits, predicted_query_tokens=queries,
        predicted_hit_rate=hits / queries if queries else None, per_request_hit_tokens=list(per_request),
        block_size=block_size, capacity_blocks=capacity_blocks, policy=policy, simulated_warmup_prompts=len(warm),
        predicted_evictions=evictions, in_phase_reuse_tokens=in_phase_reuse(prompts, warm, block_size, per_request),
        engine_model=EngineModel(engine is not None, VLLM_VERSION_MODELLED, bool(sequential), reason))
    return prediction, engine


def _engine_blocker(capacity_blocks: int | None, outputs: Sequence[Sequence[int] | None] | None, count: int,
                    warmup_outputs: Sequence[Sequence[int] | None] | None, warm_count: int) -> str | None:
    """Why the engine model cannot replay these requests, or ``None`` when it can."""
    if capacity_blocks is None:
        return "the server's pool size (num_gpu_blocks) is unknown"
    if outputs is None or len(outputs) != count or any(o is None for o in outputs):
        return "the generated token ids of some requests were not recorded"
    if warm_count and (warmup_outputs is None or len(warmup_outputs) != warm_count
                       or any(o is None for o in warmup_outputs)):
        return "the generated token ids of the earlier (warm-up / prefill) requests were not recorded"
    return None


def in_phase_reuse(sent: Sequence[Sequence[int]], earlier: Sequence[Sequence[int]], block_size: int,
                   predicted_per_request: Sequence[int]) -> int:
    """Predicted hit tokens that come from blocks the measured phase itself cached (not earlier traffic).

    Only these depend on timing: a request can reach a block that another in-flight request is still
    computing. When it is 0, concurrency cannot change the count.
    """
    if not earlier:
        return sum(predicted_per_request)  # nothing was cached before the phase
    cache, keys = PrefixCache(None), BlockKeys()
    for prompt in earlier:
        cache.process(keys.of(prompt, block_size))
    from_earlier = sum(cache.match(keys.of(p, block_size), max_hit_blocks(len(p), block_size, True)) * block_size
                       for p in sent)
    return sum(predicted_per_request) - from_earlier


@dataclass(frozen=True)
class RunConditions:
    """What happened around a measured phase that the simulator does not model."""

    overlapping: bool
    """Requests were in flight together (concurrency > 1 or an arrival rate)."""
    failed_requests: int = 0
    unknown_earlier_traffic: bool = False
    """The cache could not be emptied and held traffic the simulator never saw."""
    caching_enabled: bool | None = None
    engines: int = 1
    preemptions: int | float | None = None
    backend: str | None = None
    interrupted: bool = False


def caveats(prediction: Mapping | Prediction, conditions: RunConditions) -> list[str]:
    """Every reason the server's count may differ from ``prediction``; empty means it must match exactly."""
    p = prediction if isinstance(prediction, Prediction) else Prediction.from_json(prediction)
    found = []
    reuse = p.in_phase_reuse_tokens
    if conditions.overlapping and reuse:
        found.append(f"concurrent requests overlap in time and {reuse} predicted hit tokens come from blocks the "
                     "measured phase caches itself: a request can miss a block another one is still computing")
    if conditions.failed_requests:
        found.append("some requests failed; what they left in the cache is unknown")
    engine = p.engine_model
    if p.predicted_evictions and (p.policy != ENGINE_POLICY or conditions.overlapping):
        why = engine.reason if engine is not None else None
        found.append("the simulated cache evicted blocks; the engine's eviction order is only approximated"
                     + (f" (the engine model was not used: {why})" if why else ""))
    if conditions.unknown_earlier_traffic:
        found.append("the cache was not reset: blocks of earlier traffic may still hit")
    if conditions.caching_enabled is False:
        found.append("prefix caching is off on the server: the prediction is what caching would reuse")
    if conditions.engines > 1:
        found.append("several engines: routing decides which cache a request meets; the prediction assumes one")
    if conditions.preemptions:
        found.append(f"{conditions.preemptions} preemptions: a preempted request queries the cache again")
    if conditions.backend == "sglang":
        found.append("SGLang: page-granular radix cache; exact only with --block-size equal to its page size")
    if conditions.interrupted:
        found.append("interrupted run")
    if engine is not None and engine.used and engine.server_version and engine.note:
        found.append(engine.note)
    return found


def judged(prediction: Prediction, conditions: RunConditions, measured_hit_tokens: float | None,
           measured_query_tokens: float | None = None) -> Prediction:
    """``prediction`` with ``exact_expected``, its caveats and the difference to what the server measured."""
    return prediction.judge(caveats(prediction, conditions), measured_hit_tokens, measured_query_tokens)
