# 代价 | Cost: O(capacity) eviction (the chapter's original scan) vs O(1) eviction (OrderedDict)
import time


def scan_eviction_simulate(token_sequences, block_size, capacity_blocks):
    """The original reference's eviction loop, kept only to time it: every eviction scans the cache."""
    cache, clock, evictions = {}, 0, 0
    for tokens in token_sequences:
        for start in range(0, len(tokens) - block_size + 1, block_size):
            clock += 1
            cache[(start // block_size, tuple(tokens[start:start + block_size]))] = clock
            while len(cache) > capacity_blocks:
                del cache[min(cache, key=cache.get)]
                evictions += 1
    return evictions


require_done("simulate_prefix_cache")
if GRADING:  # a wall-clock measurement on a busy grading machine says nothing, and would differ run to run
    print(say("评分时跳过计时。", "Timing skipped while grading."))
else:
    churn = generate_shared_prefix_workload(num_requests=300, input_len=128, prefix_len=0, seed=1).prompts
    sizes = [250, 500, 1000, 2000]
    scan_s, ordered_s = [], []
    for cap in sizes:
        start = time.perf_counter()
        scan_eviction_simulate(churn, 4, cap)
        scan_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        simulate_prefix_cache(churn, block_size=4, capacity_blocks=cap)
        ordered_s.append(time.perf_counter() - start)

    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    ax.plot(sizes, scan_s, marker="o", label="min() scan per eviction")
    ax.plot(sizes, ordered_s, marker="s", label="your simulate_prefix_cache (OrderedDict)")
    inserted = sum(len(p) // 4 for p in churn)
    ax.set(xlabel="cache capacity (blocks)", ylabel="seconds", title=f"Eviction cost, {inserted} blocks inserted")
    ax.legend()
    fig.tight_layout()
    plt.show()
