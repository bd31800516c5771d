# 可见测试 | Visible test: TODO 3 recommend_prefix_cache_run
with explain_failure("recommend_prefix_cache_run"):
    baseline = {"name": "small_cache", "hit_rate": 0.25, "ttft_ms": 130.0, "overhead": 0.0}
    good = {"name": "prefix_cache", "hit_rate": 0.875, "ttft_ms": 90.0, "overhead": 0.05}
    before = copy.deepcopy((baseline, good))
    decision = recommend_prefix_cache_run(baseline, good, min_hit_rate=0.5, max_overhead=0.1)
    unchanged(before, (baseline, good), "baseline / candidate")
    assert decision["decision"] == "accept" and decision["next_action"] == "promote_to_serving_eval", \
        "增益 0.625 ≥ 0.5、TTFT 变快、开销达标：accept | gain 0.625 >= 0.5, faster, overhead within limit: accept"
    assert isinstance(decision["reason"], str) and decision["reason"], "reason 不能为空 | reason must not be empty"
    costly = dict(good, overhead=0.5)
    decision = recommend_prefix_cache_run(baseline, costly, min_hit_rate=0.5, max_overhead=0.1)
    assert decision["decision"] == "tune" and decision["next_action"] == "refine_chunk_or_eviction_policy", \
        "命中率和 TTFT 达标、开销超限：tune | hit rate and TTFT pass, overhead over the limit: tune"
    modest = dict(good, hit_rate=0.625)  # candidate 的 hit_rate ≥ 0.5，但增益只有 0.375 | its gain is only 0.375
    decision = recommend_prefix_cache_run(baseline, modest, min_hit_rate=0.5, max_overhead=0.1)
    assert decision["decision"] == "reject" and decision["next_action"] == "fallback_to_no_cache", (
        "门槛比较的是增益 hit_rate_gain（0.375 < 0.5），不是 candidate 的 hit_rate：reject | "
        "the threshold applies to the gain (0.375 < 0.5), not to candidate's hit_rate: reject")
    slower = dict(good, ttft_ms=150.0)  # 命中率达标、开销达标，但 TTFT 变慢 | hit rate and overhead pass, TTFT is slower
    decision = recommend_prefix_cache_run(baseline, slower, min_hit_rate=0.5, max_overhead=0.1)
    assert decision["decision"] == "reject" and decision["next_action"] == "fallback_to_no_cache", (
        "TTFT 没有变快（ttft_delta_ms >= 0）时 reject；tune 只用于命中率和 TTFT 都达标、只有开销超限 | "
        "no faster TTFT (ttft_delta_ms >= 0) is reject; tune is only for hit rate and TTFT passing with the overhead over")
    near = {"name": "near", "hit_rate": 0.7, "ttft_ms": 90.0, "overhead": 0.0}  # 0.7 − 0.2 = 0.49999999999999994
    decision = recommend_prefix_cache_run(dict(baseline, hit_rate=0.2), near, min_hit_rate=0.5, max_overhead=0.1)
    assert decision["decision"] == "reject", (
        "门槛比较不加容差：0.7 − 0.2 = 0.49999999999999994 < 0.5，不达标：reject | "
        "thresholds are compared without tolerance: 0.7 − 0.2 = 0.49999999999999994 < 0.5 misses: reject")
print(say("TODO 3 可见测试通过", "TODO 3: visible test passed"))
