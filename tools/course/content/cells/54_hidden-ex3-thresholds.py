# 隐藏测试 | Hidden tests (graded): TODO 3, thresholds are validated before they are used.
# 学生版里这里只有这段注释；评分时会在这里运行隐藏测试。
### BEGIN HIDDEN TESTS
_base = {"name": "off", "hit_rate": 0.0, "ttft_ms": 120.0, "overhead": 0.0}
_cand = {"name": "on", "hit_rate": 0.75, "ttft_ms": 80.0, "overhead": 0.05}
for _kwargs in ({"min_hit_rate": -0.1, "max_overhead": 0.1}, {"min_hit_rate": 1.5, "max_overhead": 0.1},
                {"min_hit_rate": None, "max_overhead": 0.1}, {"min_hit_rate": float("nan"), "max_overhead": 0.1},
                {"min_hit_rate": 0.5, "max_overhead": -0.01}, {"min_hit_rate": 0.5, "max_overhead": None}):
    try:
        recommend_prefix_cache_run(_base, _cand, **_kwargs)
    except ValueError:
        pass
    else:
        raise AssertionError("门槛必须先校验：min_hit_rate 在 [0, 1] 内，max_overhead ≥ 0，None 或 NaN 都要 raise ValueError | check the thresholds first: min_hit_rate in [0, 1], max_overhead >= 0; None or NaN must raise ValueError")
try:
    recommend_prefix_cache_run({"hit_rate": 0.0, "ttft_ms": 120.0}, _cand, min_hit_rate=0.5, max_overhead=0.1)
except ValueError:
    pass
else:
    raise AssertionError("缺失的指标不能当成 0：recommend 也要拒绝缺 overhead 的 baseline | a missing metric is never 0: recommend must refuse a baseline without overhead too")
### END HIDDEN TESTS
