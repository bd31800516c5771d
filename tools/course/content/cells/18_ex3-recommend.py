def recommend_prefix_cache_run(baseline: Dict[str, float], candidate: Dict[str, float], min_hit_rate: float, max_overhead: float) -> Dict[str, object]:
    """按命中率、TTFT 收益和维护开销给出教学决策；返回 decision、reason、next_action。

    约定（唯一的契约，Step 4 的表格与它一致）：
    - 先校验门槛，再看 baseline / candidate：min_hit_rate 必须是 [0, 1] 内的数，max_overhead 必须是 ≥ 0 的数
      （float("inf") 可以，表示不限开销；None、NaN、bool、字符串都不行），否则 raise ValueError；
    - baseline / candidate 的检查同 compare_prefix_cache_to_baseline（用它算出 comparison）；
    - 门槛比较的是增益 hit_rate_gain = candidate − baseline，不是 candidate 自己的 hit_rate；
    - 比较用普通的 float 运算，不加容差：例如 0.7 − 0.2 = 0.49999999999999994 < 0.5，门槛 0.5 时不达标；
    - accept（next_action='promote_to_serving_eval'）：hit_rate_gain ≥ min_hit_rate，
      ttft_delta_ms < 0，且 overhead_delta ≤ max_overhead（恰好等于门槛也算达标）；
    - tune（'refine_chunk_or_eviction_policy'）：hit_rate_gain ≥ min_hit_rate 且 ttft_delta_ms < 0，
      但 overhead_delta > max_overhead；
    - reject（'fallback_to_no_cache'）：其余情况——命中率增益未达门槛（哪怕 TTFT 变快），或 TTFT 没有变快
      （ttft_delta_ms ≥ 0，哪怕命中率达标）；
    - reason 是任意非空字符串（内容不评分）；返回的 dict 可以多带字段；
    - 不修改参数：baseline、candidate 调用前后完全相同。
    min_hit_rate、max_overhead 是当前 workload 的门槛，不是通用常数；本函数不能替代真实 backend 验证。
    """
    # TODO 3：先得到 comparison，再使用 min_hit_rate、max_overhead 判断
    # hit_rate_ok = ???；overhead_ok = ???；decision = ???；next_action = ???。
    #         accept / tune / reject，并填写 reason、next_action。
    #         命中率未达门槛时不能仅因 TTFT 改善就 accept；门槛必须先校验。
    ### BEGIN SOLUTION
    for name, value, low, high in (("min_hit_rate", min_hit_rate, 0.0, 1.0),
                                   ("max_overhead", max_overhead, 0.0, float("inf"))):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise ValueError(f"{name} 必须是 [{low}, {high}] 内的数，收到 {value!r}")
    comparison = compare_prefix_cache_to_baseline(baseline, candidate)
    hit_rate_ok = comparison["hit_rate_gain"] >= min_hit_rate
    ttft_improved = comparison["ttft_delta_ms"] < 0
    overhead_ok = comparison["overhead_delta"] <= max_overhead
    if hit_rate_ok and ttft_improved and overhead_ok:
        decision, reason = "accept", "命中率增益、TTFT 收益和维护开销都达标"
    elif hit_rate_ok and ttft_improved:
        decision, reason = "tune", "命中率和 TTFT 收益达标，但维护开销超过上限"
    elif not hit_rate_ok:
        decision, reason = "reject", "命中率增益低于门槛；TTFT 改善本身不能证明缓存复用"
    else:
        decision, reason = "reject", "相对 baseline 没有 TTFT 收益"
    next_action = {"accept": "promote_to_serving_eval", "tune": "refine_chunk_or_eviction_policy",
                   "reject": "fallback_to_no_cache"}[decision]
    return {"decision": decision, "reason": reason, "next_action": next_action}
    ### END SOLUTION
