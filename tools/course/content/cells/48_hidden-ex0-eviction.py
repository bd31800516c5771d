# 隐藏测试 | Hidden tests (graded): TODO 0, LRU with pinned blocks and tail-first release.
# 学生版里这里只有这段注释；评分时会在这里运行隐藏测试。
### BEGIN HIDDEN TESTS
_A, _B, _C, _D, _E, _F = [1, 1], [2, 2], [3, 3], [4, 4], [5, 5], [6, 6]
for _cap in (1, 2, 3):
    _r = simulate_prefix_cache([_A, _B + _C, _D + _E + _F], block_size=2, capacity_blocks=_cap)
    assert _r["cache_size_blocks"] <= _cap, "缓存里的 block 数不能超过 capacity_blocks：插入前 len(cached) >= capacity_blocks 就要先驱逐 | the cache never holds more than capacity_blocks blocks: evict before inserting when len(cached) >= capacity_blocks"
_r = simulate_prefix_cache([_A, _B, _C], block_size=2, capacity_blocks=2)
assert _r["eviction_count"] == 1 and _r["cache_size_blocks"] == 2, "容量是上限：第 3 个不同的 block 进来前要驱逐一个 | capacity is an upper bound: a third distinct block evicts one first"
_r = simulate_prefix_cache([_A + _B + _C + _D, _E + _F, _A + _B + _C + _D], block_size=2, capacity_blocks=4)
assert _r["reused_tokens"] == 4, "同样新的 block 里要先驱逐尾部（最深的），不能先驱逐请求的头部 | among equally recent blocks evict the tail (deepest) first, never the request's head"
assert _r["eviction_count"] == 4 and _r["cache_size_blocks"] == 4, "同样新的 block 里要先驱逐尾部（最深的），不能先驱逐请求的头部 | among equally recent blocks evict the tail (deepest) first, never the request's head"
_r = simulate_prefix_cache([_A + _B + _C + _D + _E, _A + _B + _C + _D + _E], block_size=2, capacity_blocks=3)
assert _r["eviction_count"] == 0, "运行中的请求用到的 block 被 pin 住，不能被驱逐 | a running request's blocks are pinned and cannot be evicted"
assert _r["reused_tokens"] == 6 and _r["cache_size_blocks"] == 3, "缓存已满且全部被当前请求 pin 住时，剩下的 block 不缓存 | when the current request pins the whole full cache, its remaining blocks are not cached"
_r = simulate_prefix_cache([_A + _B, _C + _D, _E, _A + _B, _C + _D], block_size=2, capacity_blocks=4)
assert _r["reused_tokens"] == 4 and _r["eviction_count"] == 3, "驱逐顺序：最久未用的请求先走，同一请求内尾部先走 | eviction order: the least recently used request first, and within a request its tail first"
_r = simulate_prefix_cache([_A, _B, _A, _C, _A], block_size=2, capacity_blocks=2)
assert _r["reused_tokens"] == 4 and _r["eviction_count"] == 1, "被命中的 block 也要刷新为最近使用 | a block that hits becomes most recently used too"
### END HIDDEN TESTS
