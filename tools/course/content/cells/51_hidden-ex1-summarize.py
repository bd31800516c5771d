# 隐藏测试 | Hidden tests (graded): TODO 1, missing metrics, ties, same workload and unit.
# 学生版里这里只有这段注释；评分时会在这里运行隐藏测试。
### BEGIN HIDDEN TESTS
def _raises_value_error(call):
    try:
        call()
    except ValueError:
        return True
    return False

_runs = [{"name": "a", "hit_rate": 0.2, "ttft_ms": 100.0},
         {"name": "b", "hit_rate": 0.6, "ttft_ms": 80.0},
         {"name": "c", "hit_rate": 0.6, "ttft_ms": 90.0}]
_s = summarize_prefix_cache(_runs)
assert [_run["name"] for _run in _runs] == ["a", "b", "c"] and len(_runs[0]) == 3, "summarize_prefix_cache 不能修改调用者的 runs（不要 runs.sort(...)，用 max 或 sorted）| summarize_prefix_cache must not modify the caller's runs (no runs.sort(...); use max or sorted)"
assert _s["run_count"] == 3 and abs(_s["avg_hit_rate"] - 1.4 / 3) < 1e-12 and _s["avg_ttft_ms"] == 90.0, "平均值算错了 | the means are wrong"
assert _s["best_hit_rate_run"] == "b", "命中率并列时取先出现的 run | on a hit-rate tie the first run wins"
assert _raises_value_error(lambda: summarize_prefix_cache([{"name": "a", "ttft_ms": 100.0}])), "缺失的 hit_rate 必须 raise ValueError，不能当成 0 | a missing hit_rate must raise ValueError, never read as 0"
assert _raises_value_error(lambda: summarize_prefix_cache([{"name": "a", "hit_rate": None, "ttft_ms": 100.0}])), "hit_rate 为 None 必须 raise ValueError，不能当成 0 | a None hit_rate must raise ValueError, never read as 0"
assert _raises_value_error(lambda: summarize_prefix_cache([{"name": "a", "hit_rate": 0.5}])), "缺失的 ttft_ms 必须 raise ValueError，不能当成 0 | a missing ttft_ms must raise ValueError, never read as 0"
assert _raises_value_error(lambda: summarize_prefix_cache([{"name": "a", "hit_rate": 0.5, "ttft_ms": None}])), "ttft_ms 为 None 必须 raise ValueError，不能当成 0 | a None ttft_ms must raise ValueError, never read as 0"
assert _raises_value_error(lambda: summarize_prefix_cache([{"name": "a", "hit_rate": 1.5, "ttft_ms": 10.0}])), "hit_rate 必须在 [0, 1] 内 | hit_rate must be in [0, 1]"
assert _raises_value_error(lambda: summarize_prefix_cache([{"name": "a", "hit_rate": 0.5, "ttft_ms": float("nan")}])), "NaN 的 ttft_ms 不满足 ttft_ms ≥ 0，要 raise ValueError | a NaN ttft_ms is not >= 0 and must raise ValueError"
assert _raises_value_error(lambda: summarize_prefix_cache([{"name": "a", "hit_rate": True, "ttft_ms": 10.0}])), "bool 不是数：hit_rate=True 要 raise ValueError | a bool is not a number: hit_rate=True must raise ValueError"
assert _raises_value_error(lambda: summarize_prefix_cache([
    {"name": "a", "hit_rate": 0.5, "ttft_ms": 10.0, "workload_id": "w1"},
    {"name": "b", "hit_rate": 0.5, "ttft_ms": 10.0, "workload_id": "w2"}])), "不同 workload_id 的运行不能一起汇总 | runs with different workload_id cannot be summarised together"
assert _raises_value_error(lambda: summarize_prefix_cache([
    {"name": "a", "hit_rate": 0.5, "ttft_ms": 10.0, "hit_rate_unit": "token"},
    {"name": "b", "hit_rate": 0.5, "ttft_ms": 10.0, "hit_rate_unit": "block"}])), "token 口径和 block 口径的命中率不能混在一起 | token-level and block-level hit rates cannot be mixed"
_same = summarize_prefix_cache([{"name": "a", "hit_rate": 0.25, "ttft_ms": 10.0, "workload_id": "w"},
                                {"name": "b", "hit_rate": 0.75, "ttft_ms": 30.0, "workload_id": "w"}])
assert _same["avg_hit_rate"] == 0.5 and _same["best_hit_rate_run"] == "b", "同一 workload 的运行应该正常汇总 | runs of the same workload must summarise normally"
### END HIDDEN TESTS
