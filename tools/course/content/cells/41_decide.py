# 决策 | Decide: measured hit rate + modelled TTFT (an assumption, not a measurement) -> accept / tune / reject
require_done("simulate_prefix_cache", "summarize_prefix_cache", "compare_prefix_cache_to_baseline",
             "recommend_prefix_cache_run")
MIN_HIT_RATE, MAX_OVERHEAD = 0.5, 0.05  # thresholds for this workload, not universal constants
WORKLOAD_ID = docs.workload_id


def modelled_run(name, capacity_blocks, overhead):
    result = simulate(docs.prompts, BLOCK, capacity_blocks)  # your TODO 0
    ttft_ms = 15.0 + 0.05 * result["miss_tokens"] / result["total_requests"]  # assumed model
    return {"name": name, "hit_rate": result["token_reuse_rate"], "ttft_ms": round(ttft_ms, 2),
            "overhead": overhead, "workload_id": WORKLOAD_ID, "hit_rate_unit": "token"}


baseline = {"name": "G0 cache off", "hit_rate": 0.0, "ttft_ms": round(15.0 + 0.05 * 704, 2), "overhead": 0.0,
            "workload_id": WORKLOAD_ID, "hit_rate_unit": "token"}
scenarios = [modelled_run("G1 capacity=160", 160, overhead=0.03),
             modelled_run("G1 capacity=160, costly", 160, overhead=0.12),
             modelled_run("G1 capacity=100", 100, overhead=0.01)]
print(summarize_prefix_cache([baseline, *scenarios]))  # your TODO 1
for candidate in scenarios:
    comparison = compare_prefix_cache_to_baseline(baseline, candidate)  # your TODO 2
    verdict = recommend_prefix_cache_run(baseline, candidate, MIN_HIT_RATE, MAX_OVERHEAD)  # your TODO 3
    print(f"{candidate['name']:<26} gain={comparison['hit_rate_gain']:.3f} ttft_delta={comparison['ttft_delta_ms']:+.1f} ms "
          f"overhead_delta={comparison['overhead_delta']:+.2f} -> {verdict['decision']:<6} ({verdict['next_action']})")
