# 可见测试 | Visible test: TODO 1 summarize_prefix_cache
with explain_failure("summarize_prefix_cache"):
    runs = [{"name": "small_cache", "hit_rate": 0.3, "ttft_ms": 110.0},
            {"name": "prefix_cache", "hit_rate": 0.6, "ttft_ms": 90.0},
            {"name": "cache_off", "hit_rate": 0.0, "ttft_ms": 130.0}]
    before = copy.deepcopy(runs)
    summary = summarize_prefix_cache(runs)
    unchanged(before, runs, "runs")
    assert summary["run_count"] == 3, "run_count 是 run 的个数 | run_count is the number of runs"
    assert abs(summary["avg_hit_rate"] - 0.3) < 1e-12 and summary["avg_ttft_ms"] == 110.0, \
        "avg_hit_rate / avg_ttft_ms 是算术平均 | avg_hit_rate / avg_ttft_ms are plain means"
    assert summary["best_hit_rate_run"] == "prefix_cache", \
        "best_hit_rate_run 是命中率最高的 run 的 name | best_hit_rate_run is the name of the run with the highest hit rate"
    empty = summarize_prefix_cache([])
    assert empty == {"run_count": 0, "avg_hit_rate": None, "avg_ttft_ms": None, "best_hit_rate_run": None}, \
        "空列表只返回空摘要：run_count 为 0，其余字段为 None | an empty list: run_count 0, every other field None"
print(say("TODO 1 可见测试通过", "TODO 1: visible test passed"))
