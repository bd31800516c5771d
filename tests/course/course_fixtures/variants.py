"""Exercise implementations with the mistakes the hidden tests must catch, as solution-cell sources.

Each variant maps a solution cell's grade id to the code a student might hand in for it; cells not named keep
the reference solution. ``EXPECTED_FAILURES`` lists, per variant, the graded cells that must lose their points:
the tests check those exact cells (and no others) are the ones that fail.
"""

from __future__ import annotations

import re

from tools.course.content.lesson import source


def strip_markers(source: str) -> str:
    """The reference solution as a student would submit it: the nbgrader region markers removed."""
    return re.sub(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n", "", source, flags=re.M)


def _body_swap(source: str, old: str, new: str) -> str:
    if old not in source:
        raise AssertionError(f"variant anchor not found: {old!r}")
    return source.replace(old, new)


# The chapter's original reference code (seed), which has the two named mistakes (position+content keys,
# head-first O(capacity) eviction), reads rates of empty input as 0.0 and does not check for None.
SEED_SIMULATE = '''\
def simulate_prefix_cache(token_sequences: List[List[int]], block_size: int = 4, capacity_blocks: int = 8) -> Dict[str, object]:
    if block_size <= 0 or capacity_blocks <= 0:
        raise ValueError('block_size 和 capacity_blocks 必须为正数')
    cache = {}
    clock = 0
    reused_tokens = 0
    total_prompt_tokens = 0
    hit_requests = 0
    eviction_count = 0
    for tokens in token_sequences:
        if not tokens:
            continue
        total_prompt_tokens += len(tokens)
        blocks = [tuple(tokens[start:start + block_size]) for start in range(0, len(tokens) - block_size + 1, block_size)]
        hit_blocks = 0
        for block_index, block in enumerate(blocks):
            key = (block_index, block)
            if key not in cache:
                break
            hit_blocks += 1
            clock += 1
            cache[key] = clock
        if hit_blocks:
            hit_requests += 1
        reused_tokens += hit_blocks * block_size
        for block_index, block in enumerate(blocks):
            clock += 1
            cache[(block_index, block)] = clock
            while len(cache) > capacity_blocks:
                oldest = min(cache, key=cache.get)
                del cache[oldest]
                eviction_count += 1
    miss_tokens = total_prompt_tokens - reused_tokens
    request_count = len([tokens for tokens in token_sequences if tokens])
    return {
        'total_requests': request_count,
        'total_prompt_tokens': total_prompt_tokens,
        'reused_tokens': reused_tokens,
        'miss_tokens': miss_tokens,
        'cache_hit_rate': hit_requests / request_count if request_count else 0.0,
        'token_reuse_rate': reused_tokens / total_prompt_tokens if total_prompt_tokens else 0.0,
        'prefill_work_reduction': reused_tokens / total_prompt_tokens if total_prompt_tokens else 0.0,
        'eviction_count': eviction_count,
        'cache_size_blocks': len(cache),
    }
'''

SEED_SUMMARIZE = '''\
def summarize_prefix_cache(runs: List[Dict[str, float]]) -> Dict[str, object]:
    required = {'name', 'hit_rate', 'ttft_ms'}
    for index, item in enumerate(runs):
        if not isinstance(item, dict) or not required.issubset(item):
            raise ValueError(f'第 {index} 条 run 必须包含 {sorted(required)}')
    best = None
    run_count = len(runs)
    avg_hit_rate = sum(item.get('hit_rate', 0.0) for item in runs) / run_count if run_count else 0.0
    avg_ttft_ms = sum(item.get('ttft_ms', 0.0) for item in runs) / run_count if run_count else 0.0
    for item in runs:
        if best is None or item.get('hit_rate', 0.0) > best.get('hit_rate', 0.0):
            best = item
    return {
        'run_count': run_count,
        'avg_hit_rate': avg_hit_rate,
        'best_hit_rate_run': best.get('name', 'run') if best else None,
        'avg_ttft_ms': avg_ttft_ms,
    }
'''

SEED_COMPARE = '''\
def compare_prefix_cache_to_baseline(baseline: Dict[str, float], candidate: Dict[str, float]) -> Dict[str, float]:
    required = {'hit_rate', 'ttft_ms', 'overhead'}
    for name, item in (('baseline', baseline), ('candidate', candidate)):
        if not isinstance(item, dict) or not required.issubset(item):
            raise ValueError(f'{name} 必须包含 {sorted(required)}')
    return {
        'hit_rate_gain': candidate.get('hit_rate', 0.0) - baseline.get('hit_rate', 0.0),
        'ttft_delta_ms': candidate.get('ttft_ms', 0.0) - baseline.get('ttft_ms', 0.0),
        'overhead_delta': candidate.get('overhead', 0.0) - baseline.get('overhead', 0.0),
    }
'''

SEED_RECOMMEND = '''\
def recommend_prefix_cache_run(baseline: Dict[str, float], candidate: Dict[str, float], min_hit_rate: float, max_overhead: float) -> Dict[str, object]:
    if not 0 <= min_hit_rate <= 1:
        raise ValueError('min_hit_rate 必须位于 [0, 1]')
    if max_overhead < 0:
        raise ValueError('max_overhead 不能为负数')
    comparison = compare_prefix_cache_to_baseline(baseline, candidate)
    if comparison['hit_rate_gain'] >= min_hit_rate and comparison['ttft_delta_ms'] < 0 and comparison['overhead_delta'] <= max_overhead:
        return {'decision': 'accept', 'reason': '命中率、延迟收益和维护开销都达标', 'next_action': 'promote_to_serving_eval'}
    if comparison['hit_rate_gain'] >= min_hit_rate and comparison['ttft_delta_ms'] < 0:
        return {'decision': 'tune', 'reason': '命中率和延迟收益可用，但维护开销仍偏高', 'next_action': 'refine_chunk_or_eviction_policy'}
    return {'decision': 'reject', 'reason': '命中率不足或延迟收益不明显', 'next_action': 'fallback_to_no_cache'}
'''

REFERENCE = {
    "ex0-simulate": strip_markers(source("ex0-simulate")),
    "ex1-summarize": strip_markers(source("ex1-summarize")),
    "ex2-compare": strip_markers(source("ex2-compare")),
    "ex3-recommend": strip_markers(source("ex3-recommend")),
}

# A partial trailing block is cut, looked up and cached like a full one.
PARTIAL_BLOCK = _body_swap(
    REFERENCE["ex0-simulate"],
    "for start in range(0, len(tokens) - block_size + 1, block_size):  # full blocks only",
    "for start in range(0, len(tokens), block_size):",
)
PARTIAL_BLOCK = _body_swap(PARTIAL_BLOCK, "reused_tokens += hits * block_size",
                           "reused_tokens += min(len(tokens), hits * block_size)")

# Plain LRU that touches a request's blocks head to tail and never pins them: the head becomes the oldest.
HEAD_FIRST = _body_swap(
    REFERENCE["ex0-simulate"],
    '''        held = []
        for key in keys:
            if key in cached:
                evictable.pop(key, None)  # pinned while this request runs
            else:
                if len(cached) >= capacity_blocks:
                    if not evictable:
                        break  # every cached block is pinned by this request: the rest is computed, not kept
                    victim, _ = evictable.popitem(last=False)
                    cached.remove(victim)
                    eviction_count += 1
                cached.add(key)
            held.append(key)
        for key in reversed(held):  # release tail first: the deepest block becomes the next victim
            evictable[key] = None
''',
    '''        for key in keys:
            if key in cached:
                evictable.move_to_end(key)
            else:
                cached.add(key)
                evictable[key] = None
                if len(cached) > capacity_blocks:
                    victim, _ = evictable.popitem(last=False)
                    cached.remove(victim)
                    eviction_count += 1
''',
)

# Right answers, but every eviction scans the whole cache for the oldest timestamp: O(capacity).
SLOW_EVICTION = _body_swap(
    REFERENCE["ex0-simulate"],
    '''        held = []
        for key in keys:
            if key in cached:
                evictable.pop(key, None)  # pinned while this request runs
            else:
                if len(cached) >= capacity_blocks:
                    if not evictable:
                        break  # every cached block is pinned by this request: the rest is computed, not kept
                    victim, _ = evictable.popitem(last=False)
                    cached.remove(victim)
                    eviction_count += 1
                cached.add(key)
            held.append(key)
        for key in reversed(held):  # release tail first: the deepest block becomes the next victim
            evictable[key] = None
''',
    '''        held = []
        for key in keys:
            if key in cached:
                evictable.pop(key, None)
            else:
                if len(cached) >= capacity_blocks:
                    if not evictable:
                        break
                    victim = min(evictable, key=evictable.get)
                    del evictable[victim]
                    cached.remove(victim)
                    eviction_count += 1
                cached.add(key)
            held.append(key)
        for key in reversed(held):
            stamp[0] += 1
            evictable[key] = stamp[0]
''',
)
SLOW_EVICTION = _body_swap(SLOW_EVICTION, "evictable = OrderedDict()  # cached blocks no running request uses, next victim first",
                           "evictable = {}\n    stamp = [0]")

# Missing or None metrics are read as 0 instead of refused.
MISSING_AS_ZERO_SUMMARIZE = '''\
def summarize_prefix_cache(runs: List[Dict[str, float]]) -> Dict[str, object]:
    if not runs:
        return {"run_count": 0, "avg_hit_rate": None, "avg_ttft_ms": None, "best_hit_rate_run": None}
    for key in ("workload_id", "hit_rate_unit"):
        if len({repr(run.get(key)) for run in runs}) > 1:
            raise ValueError(f"{key} 不一致")
    hit = [run.get("hit_rate") or 0.0 for run in runs]
    ttft = [run.get("ttft_ms") or 0.0 for run in runs]
    best = max(range(len(runs)), key=lambda i: hit[i])
    return {"run_count": len(runs), "avg_hit_rate": sum(hit) / len(runs), "avg_ttft_ms": sum(ttft) / len(runs),
            "best_hit_rate_run": runs[best].get("name")}
'''
MISSING_AS_ZERO_COMPARE = '''\
def compare_prefix_cache_to_baseline(baseline: Dict[str, float], candidate: Dict[str, float]) -> Dict[str, float]:
    if repr(baseline.get("workload_id")) != repr(candidate.get("workload_id")):
        raise ValueError("workload_id 不一致")
    return {
        "hit_rate_gain": (candidate.get("hit_rate") or 0.0) - (baseline.get("hit_rate") or 0.0),
        "ttft_delta_ms": (candidate.get("ttft_ms") or 0.0) - (baseline.get("ttft_ms") or 0.0),
        "overhead_delta": (candidate.get("overhead") or 0.0) - (baseline.get("overhead") or 0.0),
    }
'''

# Accepts whenever TTFT improves, and uses the thresholds without checking them.
TTFT_ONLY_RECOMMEND = '''\
def recommend_prefix_cache_run(baseline: Dict[str, float], candidate: Dict[str, float], min_hit_rate: float, max_overhead: float) -> Dict[str, object]:
    comparison = compare_prefix_cache_to_baseline(baseline, candidate)
    if comparison["ttft_delta_ms"] < 0 and comparison["overhead_delta"] <= max_overhead:
        return {"decision": "accept", "reason": "TTFT improved", "next_action": "promote_to_serving_eval"}
    if comparison["ttft_delta_ms"] < 0:
        return {"decision": "tune", "reason": "overhead", "next_action": "refine_chunk_or_eviction_policy"}
    return {"decision": "reject", "reason": "slower", "next_action": "fallback_to_no_cache"}
'''

# Issue 23's three mistakes of a new student, none of which the notebook used to name.
CAPACITY_OFF_BY_ONE = _body_swap(REFERENCE["ex0-simulate"], "if len(cached) >= capacity_blocks:",
                                 "if len(cached) > capacity_blocks:")
SORTS_IN_PLACE = _body_swap(
    REFERENCE["ex1-summarize"],
    "    best = max(runs, key=lambda run: run[\"hit_rate\"])  # max keeps the first of equals\n",
    "    runs.sort(key=lambda run: run[\"hit_rate\"], reverse=True)  # stable: the first of equals stays first\n"
    "    best = runs[0]\n")
TUNE_WITHOUT_TTFT = _body_swap(REFERENCE["ex3-recommend"], "elif hit_rate_ok and ttft_improved:", "elif hit_rate_ok:")

VARIANTS: dict[str, dict[str, str]] = {
    "reference": {},
    "seed_reference": {"ex0-simulate": SEED_SIMULATE, "ex1-summarize": SEED_SUMMARIZE,
                       "ex2-compare": SEED_COMPARE, "ex3-recommend": SEED_RECOMMEND},
    "partial_block": {"ex0-simulate": PARTIAL_BLOCK},
    "head_first": {"ex0-simulate": HEAD_FIRST},
    "slow_eviction": {"ex0-simulate": SLOW_EVICTION},
    "missing_as_zero": {"ex1-summarize": MISSING_AS_ZERO_SUMMARIZE, "ex2-compare": MISSING_AS_ZERO_COMPARE},
    "ttft_only": {"ex3-recommend": TTFT_ONLY_RECOMMEND},
    "capacity_off_by_one": {"ex0-simulate": CAPACITY_OFF_BY_ONE},
    "sorts_in_place": {"ex1-summarize": SORTS_IN_PLACE},
    "tune_without_ttft": {"ex3-recommend": TUNE_WITHOUT_TTFT},
}

EXPECTED_FAILURES: dict[str, set[str]] = {
    "reference": set(),
    "seed_reference": {"hidden-ex0-blocks", "hidden-ex0-keys", "hidden-ex0-eviction", "hidden-ex0-oracle",
                       "hidden-ex0-speed", "hidden-ex1-summarize", "hidden-ex2-compare", "hidden-ex3-thresholds",
                       "test-ex0-visible", "test-ex1-visible"},
    "partial_block": {"test-ex0-visible", "hidden-ex0-blocks", "hidden-ex0-oracle"},
    "head_first": {"hidden-ex0-eviction", "hidden-ex0-oracle"},
    "slow_eviction": {"hidden-ex0-speed"},
    "missing_as_zero": {"hidden-ex1-summarize", "hidden-ex2-compare", "hidden-ex3-thresholds"},
    "ttft_only": {"test-ex3-visible", "hidden-ex3-decision", "hidden-ex3-thresholds"},
    "capacity_off_by_one": {"test-ex0-visible", "hidden-ex0-eviction", "hidden-ex0-oracle", "hidden-ex0-speed"},
    "sorts_in_place": {"test-ex1-visible", "hidden-ex1-summarize"},
    "tune_without_ttft": {"test-ex3-visible", "hidden-ex3-decision"},
}

# Never returns, whatever it is given: a loop left in while debugging. Not part of VARIANTS (the class round trip):
# tests/course/grading/test_grading_faults.py grades it under the time rule for hanging cells.
HANGING_SIMULATE = _body_swap(REFERENCE["ex0-simulate"], '    """\n', '    """\n    while True:\n        pass\n')
