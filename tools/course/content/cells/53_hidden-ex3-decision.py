# 隐藏测试 | Hidden tests (graded): TODO 3, accept / tune / reject; a TTFT gain alone never accepts.
# 学生版里这里只有这段注释；评分时会在这里运行隐藏测试。
### BEGIN HIDDEN TESTS
_NEXT = {"accept": "promote_to_serving_eval", "tune": "refine_chunk_or_eviction_policy", "reject": "fallback_to_no_cache"}
_base = {"name": "off", "hit_rate": 0.25, "ttft_ms": 120.0, "overhead": 0.0}

def _decide(candidate, min_hit_rate=0.5, max_overhead=0.125):
    _given = dict(candidate)
    result = recommend_prefix_cache_run(_base, candidate, min_hit_rate=min_hit_rate, max_overhead=max_overhead)
    assert _base == {"name": "off", "hit_rate": 0.25, "ttft_ms": 120.0, "overhead": 0.0} and candidate == _given, "recommend_prefix_cache_run 不能修改 baseline / candidate | recommend_prefix_cache_run must not modify baseline / candidate"
    assert result["next_action"] == _NEXT.get(result["decision"]), "next_action 必须与 decision 对应 | next_action must match decision"
    assert isinstance(result["reason"], str) and result["reason"], "reason 不能为空 | reason must not be empty"
    return result["decision"]

assert _decide({"hit_rate": 0.75, "ttft_ms": 80.0, "overhead": 0.125}) == "accept", "增益恰好等于门槛、开销恰好等于上限时应 accept | a gain exactly at the threshold and an overhead exactly at the limit is accept"
assert _decide({"hit_rate": 0.75, "ttft_ms": 80.0, "overhead": 0.5}) == "tune", "命中率和 TTFT 达标但开销超限应 tune | hit rate and TTFT pass but the overhead is over its limit: tune"
assert _decide({"hit_rate": 0.5, "ttft_ms": 40.0, "overhead": 0.0}) == "reject", "命中率增益未达门槛时，TTFT 改善再多也不能 accept | a hit-rate gain below the threshold is never accept, however much faster TTFT is"
assert _decide({"hit_rate": 0.5, "ttft_ms": 40.0, "overhead": 0.5}) == "reject", "命中率增益未达门槛时应 reject，而不是 tune | a hit-rate gain below the threshold is reject, not tune"
assert _decide({"hit_rate": 0.9, "ttft_ms": 120.0, "overhead": 0.0}) == "reject", "TTFT 没有变快（差值不小于 0）时应 reject | no faster TTFT (delta not below 0) is reject"
assert _decide({"hit_rate": 0.9, "ttft_ms": 150.0, "overhead": 0.0}) == "reject", "TTFT 变慢时应 reject | a slower TTFT is reject"
assert _decide({"hit_rate": 0.9, "ttft_ms": 150.0, "overhead": 0.5}) == "reject", "TTFT 变慢时应 reject 而不是 tune：tune 要求命中率和 TTFT 都达标 | a slower TTFT is reject, not tune: tune needs both hit rate and TTFT to pass"
assert recommend_prefix_cache_run({"hit_rate": 0.2, "ttft_ms": 120.0, "overhead": 0.0}, {"hit_rate": 0.7, "ttft_ms": 80.0, "overhead": 0.0}, 0.5, 0.1)["decision"] == "reject", "比较不加容差：0.7 − 0.2 = 0.49999999999999994 < 0.5，不达标 | no tolerance: 0.7 − 0.2 = 0.49999999999999994 < 0.5 misses the threshold"
assert _decide({"hit_rate": 0.3, "ttft_ms": 100.0, "overhead": 0.0}, min_hit_rate=0.0) == "accept", "门槛为 0 时，有 TTFT 收益即可 accept | with a zero threshold a TTFT gain is enough to accept"
### END HIDDEN TESTS
