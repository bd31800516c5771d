def compare_prefix_cache_to_baseline(baseline: Dict[str, float], candidate: Dict[str, float]) -> Dict[str, float]:
    """计算 candidate 相对 baseline 的命中率、TTFT 和开销变化（一律是 candidate − baseline）。

    返回 hit_rate_gain（越大越好）、ttft_delta_ms 和 overhead_delta（越小越好，负数表示变好），都是普通的
    Python 减法结果，不取整、不加容差。约定（唯一的契约）：
    - baseline、candidate 必须是 dict，否则 raise ValueError；
    - 两组都必须有 hit_rate、ttft_ms 和 overhead，而且都是数（int 或 float；bool、字符串、NaN 不算）；
      缺失、为 None 或不是数时 raise ValueError；
    - 会检查的范围：hit_rate 在 [0, 1] 内、ttft_ms ≥ 0，否则 raise ValueError；overhead 只要求是数（不检查范围）；
      ttft_ms、overhead 为 float("inf") 可以接受；
    - 两组的 workload_id、hit_rate_unit 不一致时 raise ValueError（不同 workload、不同口径不能比；
      与 summarize 一样只比较是否相同，不检查取值；“没有这个字段”与值为 None 视为相同）；
    - 不修改参数：baseline、candidate 调用前后完全相同；name 和其他字段不检查。
    结果只服务于报告比较，不能单独证明 backend 已产生真实缓存命中。
    """
    # TODO 2：使用 hit_rate_gain、ttft_delta_ms、overhead_delta。
    # hit_rate_gain = ???；ttft_delta_ms = ???；overhead_delta = ???。
    #         注意增益和差值的方向不同，并要求 baseline/candidate workload 一致。
    ### BEGIN SOLUTION
    values = {}
    for label, run in (("baseline", baseline), ("candidate", candidate)):
        if not isinstance(run, dict):
            raise ValueError(f"{label} 必须是 dict")
        for key in ("hit_rate", "ttft_ms", "overhead"):
            value = run.get(key)
            if value is None:
                raise ValueError(f"{label}.{key} 缺失：没有测到的指标不能当成 0")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
                raise ValueError(f"{label}.{key} 必须是数，收到 {value!r}")
        if not 0 <= run["hit_rate"] <= 1:
            raise ValueError(f"{label}.hit_rate 必须在 [0, 1] 内，收到 {run['hit_rate']!r}")
        if run["ttft_ms"] < 0:
            raise ValueError(f"{label}.ttft_ms 不能为负，收到 {run['ttft_ms']!r}")
        values[label] = run
    for key in ("workload_id", "hit_rate_unit"):
        if repr(baseline.get(key)) != repr(candidate.get(key)):
            raise ValueError(f"{key} 不一致：baseline 与 candidate 必须来自同一 workload、同一口径")
    return {
        "hit_rate_gain": candidate["hit_rate"] - baseline["hit_rate"],
        "ttft_delta_ms": candidate["ttft_ms"] - baseline["ttft_ms"],
        "overhead_delta": candidate["overhead"] - baseline["overhead"],
    }
    ### END SOLUTION
