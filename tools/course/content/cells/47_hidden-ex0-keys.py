# 隐藏测试 | Hidden tests (graded): TODO 0, a block's key is its whole prefix; lookup stops at the first miss.
# 学生版里这里只有这段注释；评分时会在这里运行隐藏测试。
### BEGIN HIDDEN TESTS
_A, _B, _C, _D = [1, 1], [2, 2], [3, 3], [4, 4]
_r = simulate_prefix_cache([_A + _B, _C + _D, _A + _D], block_size=2, capacity_blocks=16)
assert _r["reused_tokens"] == 2, "block 的 key 必须是整个前缀，不能只用 (位置, 内容) | a block's key is its whole prefix, not (position, content)"
assert _r["cache_size_blocks"] == 5, "block 的 key 必须是整个前缀，不能只用 (位置, 内容) | a block's key is its whole prefix, not (position, content)"
_r = simulate_prefix_cache([_A + _B, _C + _B], block_size=2, capacity_blocks=16)
assert _r["reused_tokens"] == 0 and _r["cache_hit_rate"] == 0.0, "查找遇到第一个未命中就必须停止 | lookup must stop at the first miss"
_r = simulate_prefix_cache([[7, 7, 8, 8], [8, 8, 7, 7]], block_size=2, capacity_blocks=16)
assert _r["reused_tokens"] == 0 and _r["cache_size_blocks"] == 4, "相同 token 出现在不同前缀之后是不同的 block | the same tokens after a different prefix are a different block"
_r = simulate_prefix_cache([[9] * 8, [9] * 8, [9] * 6], block_size=2, capacity_blocks=16)
assert _r["cache_size_blocks"] == 4 and _r["reused_tokens"] == 14, "相同 token 出现在不同前缀之后是不同的 block | the same tokens after a different prefix are a different block"
### END HIDDEN TESTS
