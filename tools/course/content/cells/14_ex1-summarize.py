def summarize_prefix_cache(runs: List[Dict[str, float]]) -> Dict[str, object]:
    """汇总同一请求分布下的缓存运行结果。

    返回 run_count、avg_hit_rate、avg_ttft_ms（算术平均）和 best_hit_rate_run（命中率最高的 run 的 name，
    并列时取先出现的）。约定（唯一的契约，评分只检查这里写的规则）：
    - runs 必须是 list，否则 raise TypeError；每个元素必须是 dict，否则 raise ValueError；
    - 空列表返回空摘要：run_count 为 0，其余三个字段为 None，不构成性能结论；
    - 每个 run 必须有 name、hit_rate、ttft_ms：缺失或为 None 时 raise ValueError，不能静默当成实测 0；
      name 可以是任何非 None 的值（不检查类型，也不检查是否为空字符串）；
    - hit_rate 和 ttft_ms 必须是数（int 或 float；bool、字符串不算），hit_rate 在 [0, 1] 内（含两端）、
      ttft_ms ≥ 0，否则 raise ValueError；NaN 不满足范围，也 raise ValueError；ttft_ms=float("inf") 可以接受；
      其他字段（例如 overhead）不检查；
    - 只能汇总同一 workload、同一命中率口径的运行：各 run 的 workload_id、hit_rate_unit 不一致时 raise ValueError；
      “没有这个字段”与值为 None 视为相同。hit_rate_unit 的取值是 "token"、"block" 或 "request"（Step 3 的三种口径），
      但函数不检查取值本身：未知的取值也只和其他 run 比较是否相同；
    - 不修改参数：runs 的顺序和其中每个 dict 调用前后完全相同（不要 runs.sort(...)，用 max 或 sorted）；
    - 比较和平均都用普通的 Python 算术，不加容差。
    """
    # TODO 1：使用 run_count、avg_hit_rate、avg_ttft_ms、best_hit_rate_run。
    # run_count = ???；avg_hit_rate = ???；avg_ttft_ms = ???；best_hit_rate_run = ???。
    #         不要把缺失的 hit_rate 或 ttft_ms 当成实测 0；空列表应返回空摘要。
    ### BEGIN SOLUTION
    if not isinstance(runs, list):
        raise TypeError("runs 必须是 list[dict]")
    if not runs:
        return {"run_count": 0, "avg_hit_rate": None, "avg_ttft_ms": None, "best_hit_rate_run": None}
    for index, run in enumerate(runs):
        if not isinstance(run, dict):
            raise ValueError(f"runs[{index}] 必须是 dict")
        for key in ("name", "hit_rate", "ttft_ms"):
            if run.get(key) is None:
                raise ValueError(f"runs[{index}].{key} 缺失：没有测到的指标不能当成 0")
        if isinstance(run["hit_rate"], bool) or not isinstance(run["hit_rate"], (int, float)) \
                or not 0 <= run["hit_rate"] <= 1:
            raise ValueError(f"runs[{index}].hit_rate 必须是 [0, 1] 内的数，收到 {run['hit_rate']!r}")
        if isinstance(run["ttft_ms"], bool) or not isinstance(run["ttft_ms"], (int, float)) \
                or not run["ttft_ms"] >= 0:
            raise ValueError(f"runs[{index}].ttft_ms 必须是非负数，收到 {run['ttft_ms']!r}")
    for key in ("workload_id", "hit_rate_unit"):
        if len({repr(run.get(key)) for run in runs}) > 1:
            raise ValueError(f"{key} 不一致：只能汇总同一 workload、同一命中率口径的运行")
    best = max(runs, key=lambda run: run["hit_rate"])  # max keeps the first of equals
    return {
        "run_count": len(runs),
        "avg_hit_rate": sum(run["hit_rate"] for run in runs) / len(runs),
        "avg_ttft_ms": sum(run["ttft_ms"] for run in runs) / len(runs),
        "best_hit_rate_run": best["name"],
    }
    ### END SOLUTION
