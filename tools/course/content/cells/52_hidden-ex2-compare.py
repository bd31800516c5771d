# 隐藏测试 | Hidden tests (graded): TODO 2, direction of every delta, missing metrics, same workload.
# 学生版里这里只有这段注释；评分时会在这里运行隐藏测试。
### BEGIN HIDDEN TESTS
def _raises_value_error(call):
    try:
        call()
    except ValueError:
        return True
    return False

_base = {"name": "off", "hit_rate": 0.125, "ttft_ms": 120.0, "overhead": 0.25}
_cand = {"name": "on", "hit_rate": 0.625, "ttft_ms": 95.0, "overhead": 0.375}
_c = compare_prefix_cache_to_baseline(_base, _cand)
assert _base == {"name": "off", "hit_rate": 0.125, "ttft_ms": 120.0, "overhead": 0.25} and _cand == {"name": "on", "hit_rate": 0.625, "ttft_ms": 95.0, "overhead": 0.375}, "compare_prefix_cache_to_baseline 不能修改 baseline / candidate | compare_prefix_cache_to_baseline must not modify baseline / candidate"
assert _c["hit_rate_gain"] == 0.5, "hit_rate_gain = candidate - baseline"
assert _c["ttft_delta_ms"] == -25.0, "ttft_delta_ms = candidate - baseline（更快是负数） | faster is negative"
assert _c["overhead_delta"] == 0.125, "overhead_delta = candidate - baseline（开销增加是正数） | more overhead is positive"
_c = compare_prefix_cache_to_baseline(_cand, _base)
assert _c["hit_rate_gain"] == -0.5 and _c["ttft_delta_ms"] == 25.0 and _c["overhead_delta"] == -0.125, "变差时增益为负、差值为正 | when things get worse the gain is negative and the deltas positive"
assert _raises_value_error(lambda: compare_prefix_cache_to_baseline({"hit_rate": 0.1, "ttft_ms": 100.0}, _cand)), "缺失的 overhead 必须 raise ValueError，不能当成 0 | a missing overhead must raise ValueError, never read as 0"
assert _raises_value_error(lambda: compare_prefix_cache_to_baseline(_base, dict(_cand, ttft_ms=None))), "ttft_ms 为 None 必须 raise ValueError，不能当成 0 | a None ttft_ms must raise ValueError, never read as 0"
assert _raises_value_error(lambda: compare_prefix_cache_to_baseline(_base, dict(_cand, hit_rate=None))), "hit_rate 为 None 必须 raise ValueError，不能当成 0 | a None hit_rate must raise ValueError, never read as 0"
assert _raises_value_error(lambda: compare_prefix_cache_to_baseline(_base, dict(_cand, hit_rate=1.5))), "hit_rate 必须在 [0, 1] 内 | hit_rate must be in [0, 1]"
assert _raises_value_error(lambda: compare_prefix_cache_to_baseline(_base, dict(_cand, ttft_ms=float("nan")))), "NaN 不是可比较的数，要 raise ValueError | NaN is not a comparable number and must raise ValueError"
assert _raises_value_error(lambda: compare_prefix_cache_to_baseline(dict(_base, overhead=False), _cand)), "bool 不是数：overhead=False 要 raise ValueError | a bool is not a number: overhead=False must raise ValueError"
assert _raises_value_error(lambda: compare_prefix_cache_to_baseline(dict(_base, workload_id="w1"), dict(_cand, workload_id="w2"))), "不同 workload 的 baseline 和 candidate 不能比较 | a baseline and a candidate of different workloads cannot be compared"
_c = compare_prefix_cache_to_baseline(dict(_base, workload_id="w"), dict(_cand, workload_id="w"))
assert _c["hit_rate_gain"] == 0.5, "同一 workload 的运行应该正常比较 | runs of the same workload must compare normally"
### END HIDDEN TESTS
