# 规则 4 演示 | Rule 4: step by step, tail-first LRU ("lru") vs the chapter's original head-first LRU ("seed")
require_setup()
LETTERS = {1: "A", 2: "B", 3: "C", 4: "D", 5: "E", 6: "F"}


def show_steps(requests, block_size, capacity_blocks, policy):
    """Replay requests through the library's PrefixCache and draw the cache after each one."""
    cache, table, names, parents = PrefixCache(capacity_blocks, policy), BlockKeys(), {}, {}
    print(f"policy={policy!r}, capacity={capacity_blocks} blocks")
    for tokens in requests:
        keys = table.of(tokens, block_size)
        for depth, key in enumerate(keys):
            names[key] = "".join(LETTERS[tokens[i * block_size]] for i in range(depth + 1))
            parents[key] = keys[depth - 1] if depth else None
        hits = cache.process(keys)
        cached = [key for key in names if key in cache]
        # an orphan is cached but unreachable: some block on its prefix path is gone
        orphan = {key for key in cached if any(p not in cache for p in _ancestors(key, parents))}
        shown = " ".join(f"[{names[k]}{'⚠' if k in orphan else ''}]" for k in cached)
        label = " ".join(names[k][-1] for k in keys)
        print(f"  {label:<9} hit {hits} block(s) | cache: {shown:<34} orphans: {len(orphan)}")
    print(f"  evictions: {cache.evictions}\n")


def _ancestors(key, parents):
    while parents[key] is not None:
        key = parents[key]
        yield key


A, B, C, D, E, F = [1, 1], [2, 2], [3, 3], [4, 4], [5, 5], [6, 6]
steps = [A + B + C + D, E + F, A + B + C + D]
for policy in ("lru", "seed"):
    show_steps(steps, block_size=2, capacity_blocks=4, policy=policy)
print(say("⚠ = orphan block：还占着缓存，但它的前缀已被驱逐，任何查找都走不到它。",
          "⚠ = orphan block: it still takes up the cache, but its prefix was evicted, so no lookup can reach it."))
