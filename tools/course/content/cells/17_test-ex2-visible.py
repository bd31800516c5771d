# 可见测试 | Visible test: TODO 2 compare_prefix_cache_to_baseline
with explain_failure("compare_prefix_cache_to_baseline"):
    baseline = {"name": "small_cache", "hit_rate": 0.25, "ttft_ms": 130.0, "overhead": 0.125}
    candidate = {"name": "prefix_cache", "hit_rate": 0.75, "ttft_ms": 100.0, "overhead": 0.375}
    before = copy.deepcopy((baseline, candidate))
    comparison = compare_prefix_cache_to_baseline(baseline, candidate)
    unchanged(before, (baseline, candidate), "baseline / candidate")
    assert comparison["hit_rate_gain"] == 0.5, \
        "hit_rate_gain = candidate − baseline（不是 candidate 的 hit_rate）| candidate − baseline, not candidate's hit_rate"
    assert comparison["ttft_delta_ms"] == -30.0, \
        "ttft_delta_ms = candidate − baseline（更快是负数）| candidate − baseline (faster is negative)"
    assert comparison["overhead_delta"] == 0.25, \
        "overhead_delta = candidate − baseline（开销增加是正数）| candidate − baseline (more overhead is positive)"
print(say("TODO 2 可见测试通过", "TODO 2: visible test passed"))
