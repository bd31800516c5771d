def simulate_prefix_cache(token_sequences: List[List[int]], block_size: int = 4, capacity_blocks: int = 8) -> Dict[str, object]:
    """模拟按完整 token block 复用的前缀缓存（vLLM v1 / SGLang 的 LRU 语义，不含 vLLM 的“最后一个 token”规则，
    见 Step 5）；不测真实 KV Cache 显存或延迟。

    token_sequences 必须已经使用同一 tokenizer 转成 token id；相同字符串但 token 序列不同不视为命中。
    约定（这是唯一的契约，评分只检查这里写的规则）：
    - 参数：block_size、capacity_blocks 必须是 Python int 且 > 0；bool、2.0 这样的 float、numpy 整数、None 都不算，
      raise ValueError
      （capacity_blocks=None 在参考库 tools.prefixbench 里表示“不限容量”，本练习不要求支持）；
    - 不修改参数：token_sequences 和其中每个 list 调用前后完全相同；
    - 只缓存完整 block：尾部不足 block_size 的 token 永远不命中，也不进入缓存；
    - block 的 key 是它的整个前缀（父 block 的 key + 本 block 的 token），不是 (block_index, 内容)；
    - 查找从 block 0 开始，遇到第一个未命中就停止（后面的 block 即使在缓存里也不算命中）；
    - 容量：缓存里最多 capacity_blocks 个 block；插入新 block 前，若已有 capacity_blocks 个就先驱逐一个；
    - LRU：请求运行期间它用到的每个 block（命中的和新插入的）被 pin（不可驱逐）；请求结束后按“尾部先释放”
      放回 LRU 队列的最近使用端，所以命中的 block 也变成最近使用，同样新的 block 中最深的先被驱逐；
      缓存已满且所有 block 都被当前请求 pin 住时，剩下的 block 不缓存（不驱逐、不计 eviction；这是本练习的规则，
      真实引擎会让请求等待或抢占别的请求）；
    - 查找、插入、驱逐每次 O(1)（OrderedDict），不要每次驱逐都扫描整个缓存（大 workload 限时 5 秒）；
    - 空的 token list 跳过，不计入请求；比一个 block 还短的非空请求仍是请求（不命中，命中率 0.0 而不是 None）；
      分母为 0 的比率返回 None（没有数据不等于 0%）。
    返回 dict，至少包含下面 9 个字段（多出的字段不检查）：total_requests、total_prompt_tokens、reused_tokens
    （命中 block 数 × block_size）、miss_tokens = total_prompt_tokens - reused_tokens、
    cache_hit_rate = 至少命中一个 block 的请求数 / total_requests（请求口径）、
    token_reuse_rate = reused_tokens / total_prompt_tokens（token 口径）、prefill_work_reduction（这个模型里每个
    prompt token 的 prefill 代价相同，所以等于 token_reuse_rate）、eviction_count、cache_size_blocks = 最后缓存里的
    block 数。比率是普通的 Python 除法（float），与参考库比较时允许 1e-9 的相对误差。
    """
    # ==========================================
    # TODO 0：实现最长完整前缀命中和 LRU 驱逐。
    # 变量提示：block_ids（(父 key, block token) -> key）、cached（已缓存的 key）、
    #       evictable（OrderedDict：未被 pin 的 block，最先被驱逐的排在最前）、
    #       reused_tokens、hit_requests、eviction_count；
    # 返回 total_requests、total_prompt_tokens、reused_tokens、miss_tokens、
    # cache_hit_rate（至少命中一个 block 的请求占比）、token_reuse_rate、prefill_work_reduction、
    # eviction_count、cache_size_blocks。
    # ==========================================
    ### BEGIN SOLUTION
    for name, value in (("block_size", block_size), ("capacity_blocks", capacity_blocks)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{name} 必须是正整数，收到 {value!r}")
    block_ids = {}             # (parent key, block tokens) -> small int: the key names the whole prefix
    cached = set()             # keys of every cached block
    evictable = OrderedDict()  # cached blocks no running request uses, next victim first
    total_requests = total_prompt_tokens = reused_tokens = hit_requests = eviction_count = 0
    for tokens in token_sequences:
        if not tokens:
            continue
        total_requests += 1
        total_prompt_tokens += len(tokens)
        keys, parent = [], -1
        for start in range(0, len(tokens) - block_size + 1, block_size):  # full blocks only
            parent = block_ids.setdefault((parent, tuple(tokens[start:start + block_size])), len(block_ids))
            keys.append(parent)
        hits = 0
        while hits < len(keys) and keys[hits] in cached:  # longest cached prefix; stop at the first miss
            hits += 1
        reused_tokens += hits * block_size
        hit_requests += hits > 0
        held = []
        for key in keys:
            if key in cached:
                evictable.pop(key, None)  # pinned while this request runs
            else:
                if len(cached) >= capacity_blocks:
                    if not evictable:
                        break  # every cached block is pinned by this request: the rest is computed, not kept
                    victim, _ = evictable.popitem(last=False)
                    cached.remove(victim)
                    eviction_count += 1
                cached.add(key)
            held.append(key)
        for key in reversed(held):  # release tail first: the deepest block becomes the next victim
            evictable[key] = None
    miss_tokens = total_prompt_tokens - reused_tokens
    reuse = reused_tokens / total_prompt_tokens if total_prompt_tokens else None
    return {
        "total_requests": total_requests,
        "total_prompt_tokens": total_prompt_tokens,
        "reused_tokens": reused_tokens,
        "miss_tokens": miss_tokens,
        "cache_hit_rate": hit_requests / total_requests if total_requests else None,
        "token_reuse_rate": reuse,
        "prefill_work_reduction": reuse,
        "eviction_count": eviction_count,
        "cache_size_blocks": len(cached),
    }
    ### END SOLUTION
