"""What a server's prefix-cache counters should show, and the one rule that says when that is exact.

``predict_hits`` runs the library simulator the way vLLM v1 counts: the server's block size and capacity, the
last prompt token always recomputed, the exact token ids in the order the server received them. Earlier
traffic still in the cache (warm-up prompts that could not be reset away, the hit-rate mode's prefill) is
simulated first and left out of the counts, exactly as a counter snapshot taken after it leaves it out.

``judge`` attaches the exactness verdict. Both the G0/G1 experiment and the hit-rate mode use it, so a caveat
means the same thing wherever it is printed. A prediction is exact only when nothing in ``RunConditions``
makes the server's count depend on something the simulator does not model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..cache.blocks import BlockKeys, max_hit_blocks
from ..cache.prefix_cache import PrefixCache
from .sequences import simulate_prefix_cache

MODELLED_POLICY = "lru"


def predict_hits(prompts: Sequence[Sequence[int]], block_size: int, capacity_blocks: int | None,
                 warmup_prompts: Sequence[Sequence[int]] = ()) -> dict:
    """Predicted hit and query tokens for ``prompts`` (in server order), per request and in total."""
    warm = [list(p) for p in warmup_prompts]
    result = simulate_prefix_cache(warm + [list(p) for p in prompts], block_size, capacity_blocks,
                                   policy=MODELLED_POLICY, last_token_rule=True, per_request=True)
    per_request = result["per_request_hit_tokens"][len(warm):]
    queries = sum(len(p) for p in prompts)
    hits = sum(per_request)
    return {
        "predicted_hit_tokens": hits,
        "predicted_query_tokens": queries,
        "predicted_hit_rate": hits / queries if queries else None,
        "per_request_hit_tokens": per_request,
        "block_size": block_size,
        "capacity_blocks": capacity_blocks,
        "policy": MODELLED_POLICY,
        "last_token_rule": True,
        "simulated_warmup_prompts": len(warm),
        "predicted_evictions": result["eviction_count"],
        "in_phase_reuse_tokens": in_phase_reuse(prompts, warm, block_size, per_request),
    }


def in_phase_reuse(sent: Sequence[Sequence[int]], earlier: Sequence[Sequence[int]], block_size: int,
                   predicted_per_request: Sequence[int]) -> int:
    """Predicted hit tokens that come from blocks the measured phase itself cached (not earlier traffic).

    Only these depend on timing: a request can reach a block that another in-flight request is still
    computing. When it is 0, concurrency cannot change the count.
    """
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


def caveats(prediction: dict, conditions: RunConditions) -> list[str]:
    """Every reason the server's count may differ from ``prediction``; empty means it must match exactly."""
    found = []
    reuse = prediction.get("in_phase_reuse_tokens")
    if conditions.overlapping and reuse:
        found.append(f"concurrent requests overlap in time and {reuse} predicted hit tokens come from blocks the "
                     "measured phase caches itself: a request can miss a block another one is still computing")
    if conditions.failed_requests:
        found.append("some requests failed; what they left in the cache is unknown")
    if prediction.get("predicted_evictions"):
        found.append("the simulated cache evicted blocks; the engine's eviction order is only approximated")
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
    return found


def judge(prediction: dict, conditions: RunConditions, measured_hit_tokens: int | None,
          measured_query_tokens: int | None = None) -> dict:
    """``prediction`` with ``exact_expected``, its caveats and the difference to what the server measured."""
    found = caveats(prediction, conditions)
    predicted = prediction["predicted_hit_tokens"]
    judged = dict(prediction)
    judged.update(exact_expected=not found, caveats=found, measured_hit_tokens=measured_hit_tokens,
                  difference_tokens=None if measured_hit_tokens is None else measured_hit_tokens - predicted,
                  matches_measured=None if measured_hit_tokens is None else measured_hit_tokens == predicted)
    if measured_query_tokens is not None and measured_query_tokens != prediction["predicted_query_tokens"]:
        judged["query_tokens_note"] = (f"the server counted {measured_query_tokens} queried tokens, the prediction "
                                       f"{prediction['predicted_query_tokens']}: other traffic or retried requests "
                                       "reached the server")
    return judged


def unpredicted(reason: str) -> dict:
    """The prediction section when there is none (the block size is unknown): null with the reason."""
    return {"predicted_hit_rate": None, "predicted_hit_tokens": None, "exact_expected": False, "reason": reason}
