# 对比 | Compare: your tail-first LRU ("lru", TODO 0) vs the chapter's original head-first LRU ("seed")
require_done("simulate_prefix_cache")


def seed_policy(prompts, block_size, capacity_blocks):
    """The chapter's original head-first LRU (keys already fixed to whole-prefix keys), on the block model."""
    cache, keys, per_request = PrefixCache(capacity_blocks, "seed"), BlockKeys(), []
    for tokens in (p for p in prompts if p):
        per_request.append(cache.process(keys.of(tokens, block_size)) * block_size)
    total = sum(len(p) for p in prompts)
    return {"token_reuse_rate": sum(per_request) / total if total else None,
            "cache_hit_rate": sum(h > 0 for h in per_request) / len(per_request) if per_request else None,
            "cache_size_blocks": len(cache),
            "orphan_blocks": cache.orphan_blocks(), "eviction_count": cache.evictions,
            "per_request_hit_tokens": per_request}


def lru_policy(prompts, block_size, capacity_blocks):
    """Your simulate_prefix_cache. Tail-first release never strands a block, so it has no orphans."""
    return dict(simulate(prompts, block_size, capacity_blocks), orphan_blocks=0)


POLICY = {"lru": lru_policy, "seed": seed_policy}
policy_capacities = [40, 60, 80, 100, 120, 140, 160, 200] if not QUICK else [60, 100, 140, 200]
runs = {policy: [POLICY[policy](docs.prompts, BLOCK, cap) for cap in policy_capacities] for policy in POLICY}

fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
for policy, marker in (("lru", "o"), ("seed", "s")):
    left.plot(policy_capacities, [r["token_reuse_rate"] for r in runs[policy]], marker=marker, label=policy)
left.set(xlabel="cache capacity (blocks)", ylabel="token reuse rate", title="Same workload, two policies", ylim=(-0.03, 1))
left.legend()
width = 6
for offset, policy in ((-width / 2, "lru"), (width / 2, "seed")):
    reachable = [r["cache_size_blocks"] - r["orphan_blocks"] for r in runs[policy]]
    orphans = [r["orphan_blocks"] for r in runs[policy]]
    xs = [c + offset for c in policy_capacities]
    right.bar(xs, reachable, width, label=f"{policy}: reachable")
    if any(orphans):  # lru never strands a block: no empty legend entry for it
        right.bar(xs, orphans, width, bottom=reachable, label=f"{policy}: orphan", hatch="//")
right.set_xticks(policy_capacities, [str(c) for c in policy_capacities])  # one tick under each pair of bars
right.set(xlabel="cache capacity (blocks)", ylabel="blocks in cache at the end", title="What the cache holds")
right.legend(fontsize=8)
fig.tight_layout()
plt.show()
for cap, a, b in zip(policy_capacities, runs["lru"], runs["seed"]):
    print(f"capacity={cap:>3}: lru reuse={a['token_reuse_rate']:.3f} orphans={a['orphan_blocks']:>2} | "
          f"seed reuse={b['token_reuse_rate']:.3f} orphans={b['orphan_blocks']:>2}")
