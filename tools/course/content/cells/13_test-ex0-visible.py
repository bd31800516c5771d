# 可见测试 | Visible test: TODO 0 simulate_prefix_cache
with explain_failure("simulate_prefix_cache"):
    sequences = [[1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 9, 10]]
    result = simulate_prefix_cache(sequences, block_size=2, capacity_blocks=8)
    unchanged([[1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 9, 10]], sequences, "token_sequences")
    expected_keys = {"total_requests", "total_prompt_tokens", "reused_tokens", "miss_tokens", "cache_hit_rate",
                     "token_reuse_rate", "prefill_work_reduction", "eviction_count", "cache_size_blocks"}
    assert expected_keys <= set(result), f"缺少返回字段 | missing keys: {sorted(expected_keys - set(result))}"
    assert result["total_requests"] == 2 and result["total_prompt_tokens"] == 16, \
        "total_requests / total_prompt_tokens：2 个请求、16 个 token | 2 requests, 16 tokens"
    assert result["reused_tokens"] == 6, ("第二个请求命中 [1,2] [3,4] [5,6] 三个 block，[9,10] 不命中 | "
                                          "the second request hits [1,2] [3,4] [5,6]; [9,10] misses")
    assert result["miss_tokens"] == 10, "miss_tokens = total_prompt_tokens - reused_tokens"
    assert result["cache_hit_rate"] == 1 / 2 and result["token_reuse_rate"] == 6 / 16, \
        "cache_hit_rate 按请求、token_reuse_rate 按 token 计 | cache_hit_rate per request, token_reuse_rate per token"
    assert result["prefill_work_reduction"] == result["token_reuse_rate"], \
        "prefill_work_reduction = reused_tokens / total_prompt_tokens"
    assert result["eviction_count"] == 0 and result["cache_size_blocks"] == 5, \
        "容量 8 装得下全部 5 个不同的 block，不驱逐 | capacity 8 holds all 5 distinct blocks: no eviction"

    # 尾部不足一个 block 的 token（这里的 5）不命中、也不进缓存。| A trailing partial block (the 5) never hits, never is cached.
    result = simulate_prefix_cache([[1, 2, 3, 4, 5], [1, 2, 3, 4, 5]], block_size=2, capacity_blocks=8)
    assert result["reused_tokens"] == 4, "尾部不足 block_size 的 token 不能计入命中 | a trailing partial block never hits"
    assert result["cache_size_blocks"] == 2, "尾部不完整的 block 不能进入缓存 | a trailing partial block is never cached"

    # Step 5 的 r1 = A B、r2 = C D、r3 = A D：r3 的 D 接在 A 后面，和 r2 的 D 不是同一个 block。
    # Step 5's r1 = A B, r2 = C D, r3 = A D: r3's D follows A, so it is not r2's D.
    result = simulate_prefix_cache([[1, 1, 2, 2], [3, 3, 4, 4], [1, 1, 4, 4]], block_size=2, capacity_blocks=8)
    assert result["reused_tokens"] == 2 and result["cache_size_blocks"] == 5, (
        "block 的 key 必须是整个前缀（父 key + 本 block 的 token），不能只用 (位置, 内容) | "
        "a block's key is its whole prefix (parent key + its tokens), not (position, content)")

    # 容量是上限：3 个不同的 block、capacity_blocks=2，第 3 个进来之前要驱逐一个。
    # Capacity is an upper bound: with 3 distinct blocks and capacity_blocks=2, the third evicts one first.
    result = simulate_prefix_cache([[1, 1], [2, 2], [3, 3]], block_size=2, capacity_blocks=2)
    assert result["cache_size_blocks"] == 2 and result["eviction_count"] == 1, (
        "capacity_blocks=2 时缓存最多 2 个 block：插入第 3 个之前先驱逐一个（len(cached) >= capacity_blocks 时驱逐）| "
        "with capacity_blocks=2 the cache holds at most 2 blocks: the third evicts one first "
        "(evict when len(cached) >= capacity_blocks)")

    # 命中的 block 也变成最近使用：[3,3] 第二次命中后，先被驱逐的是 [4,4]。
    # A block that hits becomes most recently used: after [3,3] hits again, [4,4] is evicted first.
    result = simulate_prefix_cache([[3, 3], [4, 4], [3, 3], [5, 5], [3, 3]], block_size=2, capacity_blocks=2)
    assert result["reused_tokens"] == 4 and result["eviction_count"] == 1, (
        "命中的 block 要刷新为最近使用：第 5 个请求的 [3,3] 应该还在缓存里 | "
        "a block that hits becomes most recently used: the fifth request's [3,3] is still cached")

    # 空的 token list 不是请求；没有请求时比率是 None（没有数据不是 0%）。
    # An empty token list is not a request; with no requests a rate is None (no data is not 0%).
    result = simulate_prefix_cache([[], [1, 2]], block_size=2, capacity_blocks=4)
    assert result["total_requests"] == 1, "空的 token list 要跳过，不计入请求 | an empty token list is skipped, not a request"
    result = simulate_prefix_cache([], block_size=2, capacity_blocks=4)
    assert result["cache_hit_rate"] is None and result["token_reuse_rate"] is None, \
        "没有请求时比率没有定义：返回 None，不是 0 | with no requests a rate is undefined: None, not 0"

    for invalid in ({"block_size": 0}, {"capacity_blocks": 0}, {"block_size": -2}, {"block_size": True}):
        try:
            simulate_prefix_cache([[1, 2]], **invalid)
        except ValueError:
            pass
        else:
            raise AssertionError(f"非法参数 {invalid} 应该 raise ValueError | {invalid} must raise ValueError")
print(say("TODO 0 可见测试通过", "TODO 0: visible test passed"))
