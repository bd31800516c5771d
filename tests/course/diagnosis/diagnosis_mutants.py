"""A correct solution of the four chapter-69 exercises and deliberately wrong versions, one per named mistake.

Written here on purpose (not imported from the notebook or tools/course) so the diagnosis tests check the
probes against an independent reading of the spec. Each mutant changes as little as possible: the lines that
differ from the reference carry a ``# MISTAKE`` comment.
"""

from __future__ import annotations

import math
import sys
from collections import OrderedDict

RESULT_KEYS = ("total_requests", "total_prompt_tokens", "reused_tokens", "miss_tokens", "cache_hit_rate",
               "token_reuse_rate", "prefill_work_reduction", "eviction_count", "cache_size_blocks")
NEXT_ACTION = {"accept": "promote_to_serving_eval", "tune": "refine_chunk_or_eviction_policy",
               "reject": "fallback_to_no_cache"}


# ------------------------------------------------------------------------------------------ shared pieces

def _check_sizes(block_size, capacity_blocks):
    for name, value in (("block_size", block_size), ("capacity_blocks", capacity_blocks)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _chained_keys(tokens, block_size, ids):
    """Full blocks only; block i's key names its whole prefix (parent key + own tokens), interned in ``ids``."""
    keys, parent = [], -1
    for start in range(0, len(tokens) - block_size + 1, block_size):
        parent = ids.setdefault((parent, tuple(tokens[start:start + block_size])), len(ids))
        keys.append(parent)
    return keys


def _report(requests, prompt_tokens, reused, hit_requests, evictions, size):
    reuse = reused / prompt_tokens if prompt_tokens else None
    return {
        "total_requests": requests,
        "total_prompt_tokens": prompt_tokens,
        "reused_tokens": reused,
        "miss_tokens": prompt_tokens - reused,
        "cache_hit_rate": hit_requests / requests if requests else None,
        "token_reuse_rate": reuse,
        "prefill_work_reduction": reuse,
        "eviction_count": evictions,
        "cache_size_blocks": size,
    }


def _admit_pinned_lru(keys, cached, evictable, capacity_blocks, *, release_tail_first=True):
    """Pin the request's blocks, insert the missing ones (evicting the LRU unpinned block), then release them.

    Returns the number of evictions."""
    evictions = 0
    held = []
    for key in keys:
        if key in cached:
            evictable.pop(key, None)
        else:
            if len(cached) >= capacity_blocks:
                if not evictable:
                    break
                victim, _ = evictable.popitem(last=False)
                cached.remove(victim)
                evictions += 1
            cached.add(key)
        held.append(key)
    for key in (reversed(held) if release_tail_first else held):
        evictable[key] = None
    return evictions


def _walk(keys, cached):
    hits = 0
    while hits < len(keys) and keys[hits] in cached:
        hits += 1
    return hits


# ------------------------------------------------------------------------------------------ reference

def simulate_prefix_cache(token_sequences, block_size=4, capacity_blocks=8):
    """Reference: chained keys, stop at the first miss, pinned LRU released tail first, O(1) per block."""
    _check_sizes(block_size, capacity_blocks)
    ids, cached, evictable = {}, set(), OrderedDict()
    requests = prompt_tokens = reused = hit_requests = evictions = 0
    for tokens in token_sequences:
        if not tokens:
            continue
        requests += 1
        prompt_tokens += len(tokens)
        keys = _chained_keys(tokens, block_size, ids)
        hits = _walk(keys, cached)
        reused += hits * block_size
        hit_requests += hits > 0
        evictions += _admit_pinned_lru(keys, cached, evictable, capacity_blocks)
    return _report(requests, prompt_tokens, reused, hit_requests, evictions, len(cached))


def _require_metric(run, key, label):
    value = run.get(key) if isinstance(run, dict) else None
    if value is None:
        raise ValueError(f"{label}.{key} is missing; an unmeasured metric is not 0")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ValueError(f"{label}.{key} must be a number, got {value!r}")
    return value


def _require_rate(run, label):
    value = _require_metric(run, "hit_rate", label)
    if not 0 <= value <= 1:
        raise ValueError(f"{label}.hit_rate must lie in [0, 1], got {value!r}")
    return value


def _require_one_workload(runs):
    for key in ("workload_id", "hit_rate_unit"):
        if len({repr(run.get(key)) for run in runs}) > 1:
            raise ValueError(f"the runs differ in {key}")


def summarize_prefix_cache(runs):
    if not runs:
        return {"run_count": 0, "avg_hit_rate": None, "avg_ttft_ms": None, "best_hit_rate_run": None}
    rows = []
    for i, run in enumerate(runs):
        if not isinstance(run, dict) or run.get("name") is None:
            raise ValueError(f"runs[{i}].name is missing")
        ttft = _require_metric(run, "ttft_ms", f"runs[{i}]")
        if ttft < 0:
            raise ValueError(f"runs[{i}].ttft_ms must not be negative, got {ttft!r}")
        rows.append((run["name"], _require_rate(run, f"runs[{i}]"), ttft))
    _require_one_workload(runs)
    best = max(rows, key=lambda row: row[1])  # the first of equals wins
    return {
        "run_count": len(rows),
        "avg_hit_rate": sum(row[1] for row in rows) / len(rows),
        "avg_ttft_ms": sum(row[2] for row in rows) / len(rows),
        "best_hit_rate_run": best[0],
    }


def compare_prefix_cache_to_baseline(baseline, candidate):
    base = {key: _require_metric(baseline, key, "baseline") for key in ("hit_rate", "ttft_ms", "overhead")}
    cand = {key: _require_metric(candidate, key, "candidate") for key in ("hit_rate", "ttft_ms", "overhead")}
    _require_rate(baseline, "baseline")
    _require_rate(candidate, "candidate")
    _require_one_workload([baseline, candidate])
    return {
        "hit_rate_gain": cand["hit_rate"] - base["hit_rate"],
        "ttft_delta_ms": cand["ttft_ms"] - base["ttft_ms"],
        "overhead_delta": cand["overhead"] - base["overhead"],
    }


def _check_thresholds(min_hit_rate, max_overhead):
    for name, value, low, high in (("min_hit_rate", min_hit_rate, 0.0, 1.0),
                                   ("max_overhead", max_overhead, 0.0, math.inf)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise ValueError(f"{name} must be a number in [{low}, {high}], got {value!r}")


def _decide(comparison, min_hit_rate, max_overhead, compare_name="compare"):
    hit_rate_ok = comparison["hit_rate_gain"] >= min_hit_rate
    ttft_improved = comparison["ttft_delta_ms"] < 0
    overhead_ok = comparison["overhead_delta"] <= max_overhead
    if hit_rate_ok and ttft_improved and overhead_ok:
        decision = "accept"
    elif hit_rate_ok and ttft_improved:
        decision = "tune"
    else:
        decision = "reject"
    return {"decision": decision, "reason": f"decided by {compare_name}", "next_action": NEXT_ACTION[decision]}


def recommend_prefix_cache_run(baseline, candidate, min_hit_rate, max_overhead):
    _check_thresholds(min_hit_rate, max_overhead)
    return _decide(compare_prefix_cache_to_baseline(baseline, candidate), min_hit_rate, max_overhead)


REFERENCE = {
    "simulate_prefix_cache": simulate_prefix_cache,
    "summarize_prefix_cache": summarize_prefix_cache,
    "compare_prefix_cache_to_baseline": compare_prefix_cache_to_baseline,
    "recommend_prefix_cache_run": recommend_prefix_cache_run,
}


def with_reference(**replacements):
    """The reference functions with some of them replaced, as a notebook namespace would hold them."""
    functions = dict(REFERENCE)
    for name, fn in replacements.items():
        if name not in functions:
            raise KeyError(name)
        functions[name] = fn
    return functions


# ------------------------------------------------------------------------------------------ simulate mutants

def simulate_partial_block_counted(token_sequences, block_size=4, capacity_blocks=8):
    _check_sizes(block_size, capacity_blocks)
    ids, cached, evictable = {}, set(), OrderedDict()
    requests = prompt_tokens = reused = hit_requests = evictions = 0
    for tokens in token_sequences:
        if not tokens:
            continue
        requests += 1
        prompt_tokens += len(tokens)
        keys, sizes, parent = [], [], -1
        for start in range(0, len(tokens), block_size):  # MISTAKE: the partial tail becomes a block
            block = tuple(tokens[start:start + block_size])
            parent = ids.setdefault((parent, block), len(ids))
            keys.append(parent)
            sizes.append(len(block))
        hits = _walk(keys, cached)
        reused += sum(sizes[:hits])
        hit_requests += hits > 0
        evictions += _admit_pinned_lru(keys, cached, evictable, capacity_blocks)
    return _report(requests, prompt_tokens, reused, hit_requests, evictions, len(cached))


def _position_keys(tokens, block_size):
    return [(start // block_size, tuple(tokens[start:start + block_size]))  # MISTAKE: (position, content)
            for start in range(0, len(tokens) - block_size + 1, block_size)]


def simulate_position_keys(token_sequences, block_size=4, capacity_blocks=8):
    _check_sizes(block_size, capacity_blocks)
    cached, evictable = set(), OrderedDict()
    requests = prompt_tokens = reused = hit_requests = evictions = 0
    for tokens in token_sequences:
        if not tokens:
            continue
        requests += 1
        prompt_tokens += len(tokens)
        keys = _position_keys(tokens, block_size)
        hits = _walk(keys, cached)
        reused += hits * block_size
        hit_requests += hits > 0
        evictions += _admit_pinned_lru(keys, cached, evictable, capacity_blocks)
    return _report(requests, prompt_tokens, reused, hit_requests, evictions, len(cached))


def simulate_no_stop_at_first_miss(token_sequences, block_size=4, capacity_blocks=8):
    """Counts every cached block, not just the leading run. With whole-prefix keys and an LRU that never
    orphans a block this changes nothing (a block after a miss is never cached), so the mistake only shows
    together with keys that do not name the prefix: this mutant uses (position, content) keys, as the
    chapter's seed hint suggests, and so carries two mistakes."""
    _check_sizes(block_size, capacity_blocks)
    cached, evictable = set(), OrderedDict()
    requests = prompt_tokens = reused = hit_requests = evictions = 0
    for tokens in token_sequences:
        if not tokens:
            continue
        requests += 1
        prompt_tokens += len(tokens)
        keys = _position_keys(tokens, block_size)
        hits = sum(1 for key in keys if key in cached)  # MISTAKE: no break at the first miss
        reused += hits * block_size
        hit_requests += hits > 0
        evictions += _admit_pinned_lru(keys, cached, evictable, capacity_blocks)
    return _report(requests, prompt_tokens, reused, hit_requests, evictions, len(cached))


def simulate_no_stop_with_prefix_keys(token_sequences, block_size=4, capacity_blocks=8):
    """No stop at the first miss, but with whole-prefix keys: provably the same results as the reference."""
    _check_sizes(block_size, capacity_blocks)
    ids, cached, evictable = {}, set(), OrderedDict()
    requests = prompt_tokens = reused = hit_requests = evictions = 0
    for tokens in token_sequences:
        if not tokens:
            continue
        requests += 1
        prompt_tokens += len(tokens)
        keys = _chained_keys(tokens, block_size, ids)
        hits = sum(1 for key in keys if key in cached)  # no break, harmless here
        reused += hits * block_size
        hit_requests += hits > 0
        evictions += _admit_pinned_lru(keys, cached, evictable, capacity_blocks)
    return _report(requests, prompt_tokens, reused, hit_requests, evictions, len(cached))


def simulate_head_first_eviction(token_sequences, block_size=4, capacity_blocks=8):
    """Plain LRU touching blocks in prefix order (no pinning): the head of a request is its oldest block."""
    _check_sizes(block_size, capacity_blocks)
    ids, order = {}, OrderedDict()
    requests = prompt_tokens = reused = hit_requests = evictions = 0
    for tokens in token_sequences:
        if not tokens:
            continue
        requests += 1
        prompt_tokens += len(tokens)
        keys = _chained_keys(tokens, block_size, ids)
        hits = _walk(keys, order)
        reused += hits * block_size
        hit_requests += hits > 0
        for key in keys:  # MISTAKE: head first, so the head becomes the next victim
            order[key] = None
            order.move_to_end(key)
            if len(order) > capacity_blocks:
                order.popitem(last=False)
                evictions += 1
    return _report(requests, prompt_tokens, reused, hit_requests, evictions, len(order))


def simulate_head_first_release(token_sequences, block_size=4, capacity_blocks=8):
    """Pins blocks correctly but releases them head first."""
    _check_sizes(block_size, capacity_blocks)
    ids, cached, evictable = {}, set(), OrderedDict()
    requests = prompt_tokens = reused = hit_requests = evictions = 0
    for tokens in token_sequences:
        if not tokens:
            continue
        requests += 1
        prompt_tokens += len(tokens)
        keys = _chained_keys(tokens, block_size, ids)
        hits = _walk(keys, cached)
        reused += hits * block_size
        hit_requests += hits > 0
        evictions += _admit_pinned_lru(keys, cached, evictable, capacity_blocks,
                                       release_tail_first=False)  # MISTAKE
    return _report(requests, prompt_tokens, reused, hit_requests, evictions, len(cached))


def simulate_o_capacity_eviction(token_sequences, block_size=4, capacity_blocks=8):
    """Right answers, but every eviction scans the whole cache for the oldest timestamp."""
    _check_sizes(block_size, capacity_blocks)
    ids, cached, last_used = {}, set(), {}
    clock = 0
    requests = prompt_tokens = reused = hit_requests = evictions = 0
    for tokens in token_sequences:
        if not tokens:
            continue
        requests += 1
        prompt_tokens += len(tokens)
        keys = _chained_keys(tokens, block_size, ids)
        hits = _walk(keys, cached)
        reused += hits * block_size
        hit_requests += hits > 0
        held = []
        for key in keys:
            if key in cached:
                last_used.pop(key, None)
            else:
                if len(cached) >= capacity_blocks:
                    if not last_used:
                        break
                    victim = min(last_used, key=last_used.get)  # MISTAKE: O(capacity) scan per eviction
                    del last_used[victim]
                    cached.remove(victim)
                    evictions += 1
                cached.add(key)
            held.append(key)
        for key in reversed(held):
            clock += 1
            last_used[key] = clock
    return _report(requests, prompt_tokens, reused, hit_requests, evictions, len(cached))


# The chapter seed's reference code, verbatim in logic: (position, content) keys, head-first plain LRU by
# timestamp, and a ``min`` scan per eviction. One copy serves the benchmark and these tests (test_diagnosis reads it
# from here: hence F401).
from benchmarks.bench_simulator import seed_reference_simulate as simulate_seed_reference  # noqa: E402, F401


def simulate_no_hit_refresh(token_sequences, block_size=4, capacity_blocks=8):
    """A mistake outside the catalogue: a hit block is neither pinned nor moved, it keeps its old LRU place."""
    _check_sizes(block_size, capacity_blocks)
    ids, cached, evictable = {}, set(), OrderedDict()
    requests = prompt_tokens = reused = hit_requests = evictions = 0
    for tokens in token_sequences:
        if not tokens:
            continue
        requests += 1
        prompt_tokens += len(tokens)
        keys = _chained_keys(tokens, block_size, ids)
        hits = _walk(keys, cached)
        reused += hits * block_size
        hit_requests += hits > 0
        added = []
        for key in keys:
            if key in cached:
                continue  # MISTAKE: hits are not refreshed
            if len(cached) >= capacity_blocks:
                if not evictable:
                    break
                victim, _ = evictable.popitem(last=False)
                cached.remove(victim)
                evictions += 1
            cached.add(key)
            added.append(key)
        for key in reversed(added):
            evictable[key] = None
    return _report(requests, prompt_tokens, reused, hit_requests, evictions, len(cached))


# ------------------------------------------------------------------------------------------ decision mutants

def summarize_missing_metric_as_zero(runs):
    if not runs:
        return {"run_count": 0, "avg_hit_rate": None, "avg_ttft_ms": None, "best_hit_rate_run": None}
    hit = [run.get("hit_rate") or 0.0 for run in runs]  # MISTAKE: missing / None read as 0
    ttft = [run.get("ttft_ms") or 0.0 for run in runs]  # MISTAKE
    best = max(range(len(runs)), key=lambda i: hit[i])
    return {"run_count": len(runs), "avg_hit_rate": sum(hit) / len(runs), "avg_ttft_ms": sum(ttft) / len(runs),
            "best_hit_rate_run": runs[best].get("name")}


def summarize_empty_as_zero(runs):
    """Validates every run, but an empty list gives 0.0 averages instead of None."""
    if not runs:
        return {"run_count": 0, "avg_hit_rate": 0.0, "avg_ttft_ms": 0.0,  # MISTAKE: no runs is not 0
                "best_hit_rate_run": None}
    return summarize_prefix_cache(runs)


def summarize_seed_reference(runs):
    """The chapter seed's reference summarize."""
    if not isinstance(runs, list):
        raise TypeError('runs 必须是 list[dict]')
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


def summarize_last_of_ties(runs):
    """A mistake only the hidden probes see: ties go to the last run, not the first."""
    result = summarize_prefix_cache(runs)
    if runs:
        top = max(run["hit_rate"] for run in runs)
        result["best_hit_rate_run"] = [run["name"] for run in runs if run["hit_rate"] == top][-1]  # MISTAKE
    return result


def summarize_no_range_check(runs):
    """Checks that each metric is a number, but not that hit_rate is a fraction."""
    if not runs:
        return {"run_count": 0, "avg_hit_rate": None, "avg_ttft_ms": None, "best_hit_rate_run": None}
    hit = [_require_metric(run, "hit_rate", f"runs[{i}]") for i, run in enumerate(runs)]  # MISTAKE: 1.25 passes
    ttft = [_require_metric(run, "ttft_ms", f"runs[{i}]") for i, run in enumerate(runs)]
    _require_one_workload(runs)
    best = max(range(len(runs)), key=lambda i: hit[i])
    return {"run_count": len(runs), "avg_hit_rate": sum(hit) / len(runs), "avg_ttft_ms": sum(ttft) / len(runs),
            "best_hit_rate_run": runs[best]["name"]}


def summarize_mixed_workloads(runs):
    """Every value checked, but runs of different workloads averaged together."""
    return summarize_prefix_cache([{k: v for k, v in run.items() if k != "workload_id"}  # MISTAKE
                                   if isinstance(run, dict) else run for run in runs])


def compare_nan_accepted(baseline, candidate):
    """Refuses a missing metric but lets NaN through (``value < 0`` is False for NaN)."""
    for label, run in (("baseline", baseline), ("candidate", candidate)):
        for key in ("hit_rate", "ttft_ms", "overhead"):
            value = run.get(key)
            if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{label}.{key} must be a number")
            if value < 0 or (key == "hit_rate" and value > 1):  # MISTAKE: NaN passes both
                raise ValueError(f"{label}.{key} out of range")
    _require_one_workload([baseline, candidate])
    return {key: candidate[name] - baseline[name] for key, name in
            (("hit_rate_gain", "hit_rate"), ("ttft_delta_ms", "ttft_ms"), ("overhead_delta", "overhead"))}


def compare_mixed_workloads(baseline, candidate):
    """Every value checked, but a baseline of another workload compared anyway."""
    return compare_prefix_cache_to_baseline(dict(baseline, workload_id=None),  # MISTAKE: never compared
                                            dict(candidate, workload_id=None))


def compare_missing_metric_as_zero(baseline, candidate):
    return {  # MISTAKE: .get(key, 0.0) turns a missing metric into a measured 0
        "hit_rate_gain": candidate.get("hit_rate", 0.0) - baseline.get("hit_rate", 0.0),
        "ttft_delta_ms": candidate.get("ttft_ms", 0.0) - baseline.get("ttft_ms", 0.0),
        "overhead_delta": candidate.get("overhead", 0.0) - baseline.get("overhead", 0.0),
    }


def compare_wrong_delta_sign(baseline, candidate):
    result = compare_prefix_cache_to_baseline(baseline, candidate)
    result["ttft_delta_ms"] = -result["ttft_delta_ms"]  # MISTAKE: baseline - candidate ("saved ms")
    return result


def recommend_with_wrong_sign_compare(baseline, candidate, min_hit_rate, max_overhead):
    """A correct recommend that builds on a wrong-sign compare, as it would in a notebook namespace."""
    _check_thresholds(min_hit_rate, max_overhead)
    return _decide(compare_wrong_delta_sign(baseline, candidate), min_hit_rate, max_overhead)


def recommend_ttft_only_accept(baseline, candidate, min_hit_rate, max_overhead):
    _check_thresholds(min_hit_rate, max_overhead)
    comparison = compare_prefix_cache_to_baseline(baseline, candidate)
    if comparison["ttft_delta_ms"] < 0 and comparison["overhead_delta"] <= max_overhead:  # MISTAKE: no hit gate
        decision = "accept"
    elif comparison["ttft_delta_ms"] < 0:
        decision = "tune"
    else:
        decision = "reject"
    return {"decision": decision, "reason": "ttft", "next_action": NEXT_ACTION[decision]}


def recommend_unchecked_thresholds(baseline, candidate, min_hit_rate, max_overhead):
    # MISTAKE: thresholds are used as given, never validated
    return _decide(compare_prefix_cache_to_baseline(baseline, candidate), min_hit_rate, max_overhead)


# ------------------------------------------------------------------------------------------ misbehaving code

def not_implemented(*args, **kwargs):
    raise NotImplementedError("请先完成 TODO 代码！")


def loops_forever(*args, **kwargs):
    while True:
        pass


def loops_forever_swallowing(*args, **kwargs):
    """Catches every Exception and keeps looping (the timeout is a BaseException, so it still gets out)."""
    while True:
        try:
            while True:
                pass
        except Exception:  # a broad handler a student might write
            continue


def calls_sys_exit(*args, **kwargs):
    sys.exit(1)


def prints_and_returns_list(*args, **kwargs):
    print("debug output the diagnosis should not show")
    return [1, 2, 3]


def make_loop_until(stop):
    """An endless loop the test can end afterwards (``stop`` is a threading.Event), so an abandoned worker
    thread does not burn CPU for the rest of the test session."""

    def loops_until_released(*args, **kwargs):
        while not stop.is_set():
            pass

    return loops_until_released


def simulate_then_clears_inputs(token_sequences, block_size=4, capacity_blocks=8):
    """Right answers, but it empties the caller's lists afterwards."""
    result = simulate_prefix_cache(token_sequences, block_size, capacity_blocks)
    for tokens in token_sequences:
        tokens.clear()
    token_sequences.clear()
    return result


# ------------------------------------------------------------------------------------------ issue 23's three

def simulate_capacity_off_by_one(token_sequences, block_size=4, capacity_blocks=8):
    """Evicts one block late: the cache holds capacity_blocks + 1 blocks."""
    _check_sizes(block_size, capacity_blocks)
    ids, cached, evictable = {}, set(), OrderedDict()
    requests = prompt_tokens = reused = hit_requests = evictions = 0
    for tokens in token_sequences:
        if not tokens:
            continue
        requests += 1
        prompt_tokens += len(tokens)
        keys = _chained_keys(tokens, block_size, ids)
        hits = _walk(keys, cached)
        reused += hits * block_size
        hit_requests += hits > 0
        held = []
        for key in keys:
            if key in cached:
                evictable.pop(key, None)
            else:
                if len(cached) > capacity_blocks:  # MISTAKE: > instead of >=
                    if not evictable:
                        break
                    victim, _ = evictable.popitem(last=False)
                    cached.remove(victim)
                    evictions += 1
                cached.add(key)
            held.append(key)
        for key in reversed(held):
            evictable[key] = None
    return _report(requests, prompt_tokens, reused, hit_requests, evictions, len(cached))


def summarize_sorts_in_place(runs):
    """Right answers, but it sorts the caller's list."""
    if not runs:
        return {"run_count": 0, "avg_hit_rate": None, "avg_ttft_ms": None, "best_hit_rate_run": None}
    result = summarize_prefix_cache(runs)
    runs.sort(key=lambda run: run["hit_rate"], reverse=True)  # MISTAKE: the caller's list is reordered
    result["best_hit_rate_run"] = runs[0]["name"]
    return result


def compare_writes_into_candidate(baseline, candidate):
    result = compare_prefix_cache_to_baseline(baseline, candidate)
    candidate.update(result)  # MISTAKE: the caller's dict gets the deltas
    return result


def recommend_tune_without_ttft_gain(baseline, candidate, min_hit_rate, max_overhead):
    _check_thresholds(min_hit_rate, max_overhead)
    comparison = compare_prefix_cache_to_baseline(baseline, candidate)
    hit_rate_ok = comparison["hit_rate_gain"] >= min_hit_rate
    if hit_rate_ok and comparison["ttft_delta_ms"] < 0 and comparison["overhead_delta"] <= max_overhead:
        decision = "accept"
    elif hit_rate_ok:  # MISTAKE: tune even when TTFT is not faster
        decision = "tune"
    else:
        decision = "reject"
    return {"decision": decision, "reason": "r", "next_action": NEXT_ACTION[decision]}
