# 隐藏测试 | Hidden tests (graded): TODO 0, full blocks only, empty input, invalid sizes.
# 学生版里这里只有这段注释；评分时会在这里运行隐藏测试。
### BEGIN HIDDEN TESTS
_seqs = [[5, 6, 7, 8, 9, 10], [5, 6, 7, 8, 9, 10]]
_r = simulate_prefix_cache(_seqs, block_size=4, capacity_blocks=8)
assert _seqs == [[5, 6, 7, 8, 9, 10], [5, 6, 7, 8, 9, 10]], "simulate_prefix_cache 不能修改调用者的 token_sequences | simulate_prefix_cache must not modify the caller's token_sequences"
assert _r["reused_tokens"] == 4, "尾部不足 block_size 的 token 不能计入命中 | a trailing partial block never hits"
assert _r["cache_size_blocks"] == 1, "尾部不完整的 block 不能进入缓存 | a trailing partial block is never cached"
assert _r["total_prompt_tokens"] == 12 and _r["miss_tokens"] == 8, "miss_tokens 必须等于 total_prompt_tokens - reused_tokens | miss_tokens must be total_prompt_tokens - reused_tokens"
_r = simulate_prefix_cache([[1, 2, 3], [1, 2, 3]], block_size=4, capacity_blocks=2)
assert _r["reused_tokens"] == 0 and _r["cache_size_blocks"] == 0, "比一个 block 还短的请求不命中、不缓存 | a request shorter than one block neither hits nor is cached"
assert _r["total_requests"] == 2 and _r["cache_hit_rate"] == 0.0, "短请求也是请求：命中率是 0 而不是 None | a short request is still a request: the hit rate is 0, not None"
_r = simulate_prefix_cache([[], [1, 2, 3, 4], []], block_size=4, capacity_blocks=2)
assert _r["total_requests"] == 1 and _r["total_prompt_tokens"] == 4, "空的 token list 要跳过，不计入请求 | an empty token list is skipped, not counted as a request"
_r = simulate_prefix_cache([], block_size=4, capacity_blocks=2)
assert _r["total_requests"] == 0 and _r["reused_tokens"] == 0, "没有请求时计数为 0 | with no requests the counts are 0"
assert _r["cache_hit_rate"] is None and _r["token_reuse_rate"] is None, "没有请求时比率没有定义：返回 None，不是 0 | with no requests a rate is undefined: None, not 0"
assert _r["prefill_work_reduction"] is None, "没有请求时比率没有定义：返回 None，不是 0 | with no requests a rate is undefined: None, not 0"
for _bad in ({"block_size": -1}, {"capacity_blocks": -3}, {"block_size": 0, "capacity_blocks": 0},
             {"block_size": True}, {"capacity_blocks": 2.0}):
    try:
        simulate_prefix_cache([[1, 2, 3, 4]], **_bad)
    except ValueError:
        pass
    else:
        raise AssertionError("block_size / capacity_blocks 必须是正的 int（bool、2.0 都不算），否则 raise ValueError | block_size / capacity_blocks must be positive ints (not a bool, not 2.0), else raise ValueError")
### END HIDDEN TESTS
