# 测量 | Measure: hit rate against cache capacity and block size, with your simulate_prefix_cache (TODO 0)
require_done("simulate_prefix_cache")
docs = generate_shared_prefix_workload(num_requests=120, input_len=704, prefix_len=600, num_prefixes=3, seed=0)
BLOCK = 16


def simulate(prompts, block_size, capacity_blocks=None):
    """Your simulate_prefix_cache; capacity_blocks=None means "room for every block of the workload"."""
    if capacity_blocks is None:
        capacity_blocks = max(1, sum(len(p) // block_size for p in prompts))  # nothing is ever evicted
    return simulate_prefix_cache(prompts, block_size=block_size, capacity_blocks=capacity_blocks)


capacities = [20, 40, 80, 100, 120, 140, 160, 200, 300] if not QUICK else [40, 120, 160, 300]
reuse = [simulate(docs.prompts, BLOCK, cap)["token_reuse_rate"] for cap in capacities]
unlimited = simulate(docs.prompts, BLOCK)["token_reuse_rate"]

block_sizes = [8, 16, 32, 64, 128, 256] if not QUICK else [16, 64, 256]
TOKEN_BUDGET = 1792  # the same KV memory for every block size
by_size_unlimited = [simulate(docs.prompts, bs)["token_reuse_rate"] for bs in block_sizes]
by_size_budget = [simulate(docs.prompts, bs, TOKEN_BUDGET // bs)["token_reuse_rate"] for bs in block_sizes]

fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
left.plot(capacities, reuse, marker="o", label=f"block_size={BLOCK}")
left.axhline(unlimited, color="gray", linestyle="--", label=f"unlimited capacity ({unlimited:.3f})")
left.set(xlabel="cache capacity (blocks)", ylabel="token reuse rate", title="Hit rate vs capacity", ylim=(-0.03, 1))
left.legend(loc="lower right")
right.plot(block_sizes, by_size_unlimited, marker="o", label="unlimited capacity")
right.plot(block_sizes, by_size_budget, marker="s", label=f"{TOKEN_BUDGET}-token budget")
right.set(xscale="log", xlabel="block size (tokens)", ylabel="token reuse rate", title="Hit rate vs block size", ylim=(-0.03, 1))
right.set_xticks(block_sizes, [str(b) for b in block_sizes])
right.legend(loc="lower left")
fig.tight_layout()
plt.show()
for bs, value, budget_value in zip(block_sizes, by_size_unlimited, by_size_budget):
    print(f"block_size={bs:>3}: cacheable shared prefix {600 // bs * bs:>3}/600 tokens | reuse unlimited={value:.3f}, "
          f"{TOKEN_BUDGET // bs} blocks={budget_value:.3f}")
