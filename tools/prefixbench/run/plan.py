"""``plan``: how much KV memory does this traffic need for a target hit rate, and what does a given memory buy?

Data flow: a workload file (token ids) or a Mooncake trace -> engine requests (``simulate.plan``) -> the hit
rate at every pool size of a curve -> the smallest pool reaching the target (searched exactly between the curve's
points) -> blocks and GiB for the model (``serve.kv_memory``). Schema ``prefixbench.plan/1``.
"""

from __future__ import annotations

import time
from typing import Mapping, Sequence

from ..cache.engine_pool import VLLM_VERSION_MODELLED
from ..core.errors import InputError
from ..core.sections import section
from ..core.provenance import now
from ..core.records import SCHEMA_PLAN
from ..serve.kv_memory import blocks_for_gib, pool_gib
from ..simulate import plan
from ..simulate.placement import YARDSTICKS, check_yardstick, yardstick



def check_reverse(memory_gib: float | None, kv: object) -> None:
    """The reverse question (what ``memory_gib`` buys) turns GiB into blocks with the model's KV bytes per token,
    so it needs ``kv`` (or, before it is read, the ``--model`` that gives it). Raised by ``run_plan`` before any
    replay and by the CLI before the trace loads: one message for both."""
    if memory_gib is not None and not kv:
        raise InputError("--memory-gib", "needs --model (the KV bytes per token come from its config)")


def run_plan(requests: Sequence[plan.EngineRequest], *, block_size: int, source: Mapping, target: float | None,
             memory_gib: float | None, kv: Mapping | None, points: int = 20, workers: int | None = None) -> dict:
    """The plan as a result dict (strict-JSON-ready); ``kv`` is ``serve.kv_memory.kv_bytes_per_token``'s answer
    or ``None`` (then every GiB is null, with the reason)."""
    check_reverse(memory_gib, kv)
    started = time.perf_counter()
    low, high = plan.min_blocks(requests, block_size), plan.no_eviction_blocks(requests, block_size)
    workers = plan.workers_of(workers, sum(len(r.keys) for r in requests))
    with plan.evaluator(requests, block_size, workers) as evaluate:
        curve = plan.curve(requests, block_size, points, low, high, evaluate)
        found = (plan.smallest_pool_for(requests, block_size, target, curve, evaluate, width=workers)
                 if target is not None else None)
    best = curve[-1]
    result = {
        "schema": SCHEMA_PLAN, "created_at": now(), "source": dict(source), "block_size": block_size,
        "requests": len(requests), "prompt_tokens": sum(r.prompt_tokens for r in requests),
        "engine_model": {"vllm_version": VLLM_VERSION_MODELLED, "policy": "vllm_block_pool",
                         "order": "one request at a time, in the given order"},
        "min_blocks": low, "no_eviction_blocks": high, "max_hit_rate": best["hit_rate"],
        "kv_memory": dict(kv) if kv else None,
        "kv_memory_reason": None if kv else "no --model given: sizes are in blocks only",
        "target_hit_rate": target, "plan": None, "plan_reason": None, "memory_gib": memory_gib, "reverse": None,
        "curve": [_with_gib(p, block_size, kv) for p in curve], "cliff": plan.cliff(curve),
    }
    if target is not None:
        _plan_target(result, found, target, curve, block_size, kv)
    if memory_gib is not None:
        assert kv, "check_reverse refused a memory_gib without kv"
        result["reverse"] = _reverse(requests, block_size, memory_gib, kv, low)
    result["timing_s"] = time.perf_counter() - started
    return result


def check_routings(routing: str | None) -> list[str]:
    """``--routing a,b``: placements of ``simulate.placement`` (default: all of them)."""
    if routing is None:
        return list(YARDSTICKS)
    names = [check_yardstick(name.strip()) for name in routing.split(",") if name.strip()]
    if not names or len(set(names)) != len(names):
        raise InputError("--routing", f"lists no policy or one twice: {routing!r}")
    return names


def replica_plan(requests: Sequence[plan.EngineRequest], *, block_size: int, replicas: int,
                 routings: Sequence[str], pool_blocks: int | None, result: Mapping) -> dict:
    """``--replicas N``: each placement on N pools of ``pool_blocks`` (default: the planned pool, else one that
    never evicts), the best one, and what each loses against it (``simulate.placement.yardstick``)."""
    planned = section(section(result, "plan"), "planned").get("num_blocks")
    blocks = pool_blocks if pool_blocks is not None else planned
    if blocks is not None and blocks < result["min_blocks"]:
        raise InputError("--pool-blocks", f"{blocks} blocks cannot serve the largest request alone (it needs "
                                          f"{result['min_blocks']})")
    found = yardstick(requests, replicas, block_size, blocks)
    chosen = {name: found["policies"][name] for name in routings}
    balanced = [n for n in chosen if (chosen[n]["load_imbalance"] or 1.0) <= found["load_bound"]] or list(chosen)
    best = max(balanced, key=lambda name: (chosen[name]["hit_rate"] or 0.0, name == found["best"]))
    rows = {name: {k: row[k] for k in ("hit_rate", "hit_tokens", "query_tokens", "load_imbalance",
                                       "points_lost_to_best", "evictions")} for name, row in chosen.items()}
    return {"replicas": replicas, "pool_blocks_per_replica": found["num_blocks_per_replica"],
            "pool_basis": "--pool-blocks" if pool_blocks is not None else
            ("the planned pool" if planned is not None else "a pool that never evicts"),
            "policies": rows, "recommended": best, "recommended_hit_rate": chosen[best]["hit_rate"],
            "recommended_rule": f"the highest hit rate among the placements whose load imbalance is at most "
                                f"{found['load_bound']} (all of them when none is)",
            "best_of_all": found["best"], "best_hit_rate": found["best_hit_rate"],
            "single_pool_hit_rate": found["single_pool_hit_rate"], "load_bound": found["load_bound"],
            "definition": found["definition"]}


def _plan_target(result: dict, found: dict | None, target: float, curve: Sequence[Mapping], block_size: int,
                 kv: Mapping | None) -> None:
    if found is None:
        result["plan_reason"] = (f"no pool reaches {target:.2%}: this workload's hit rate with a pool that never "
                                 f"evicts ({curve[-1]['num_blocks']} blocks) is {curve[-1]['hit_rate']:.2%}")
        return
    result["plan"] = {
        "planned": _with_gib(found["planned"], block_size, kv),
        "one_block_less": _with_gib(found["one_block_less"], block_size, kv) if found["one_block_less"] else None,
        "monotone_where_evaluated": found["monotone_where_evaluated"], "evaluated_sizes": found["evaluated"],
    }


def _reverse(requests: Sequence[plan.EngineRequest], block_size: int, memory_gib: float, kv: Mapping,
             low: int) -> dict:
    blocks = blocks_for_gib(memory_gib, block_size, kv["bytes_per_token"])
    if blocks < low:
        return {"memory_gib": memory_gib, "num_blocks": blocks, "hit_rate": None,
                "reason": f"{blocks} blocks cannot serve the largest request alone (it needs {low})"}
    return {**_with_gib(plan.hit_rate_at(requests, block_size, blocks), block_size, kv), "memory_gib": memory_gib,
            "reason": None}


def _with_gib(point: Mapping, block_size: int, kv: Mapping | None) -> dict:
    return {**point, "gib": pool_gib(point["num_blocks"], block_size, kv["bytes_per_token"]) if kv else None}
