def simulate_prefix_cache(token_sequences: List[List[int]], block_size: int = 4, capacity_blocks: int = 8) -> Dict[str, object]:
    """Simulate a prefix cache that reuses full token blocks (vLLM v1 / SGLang LRU semantics, without vLLM's
    last-token rule: Step 5); it does not measure real KV-cache memory or latency.

    token_sequences must already be token ids from one tokenizer; equal strings with different token sequences are
    not hits. The rules (this is the one contract; grading checks only what is written here):
    - arguments: block_size and capacity_blocks must be Python ints > 0; a bool, a float such as 2.0, a numpy
      integer and None are not, and raise ValueError (capacity_blocks=None means "unlimited" in the reference library tools.prefixbench; these
      exercises need not support it);
    - no argument is modified: token_sequences and every list in it are the same after the call as before;
    - only full blocks are cached: a trailing partial block (fewer than block_size tokens) never hits and is never
      cached;
    - a block's key is its whole prefix (the parent block's key + this block's tokens), not (block_index, content);
    - lookup starts at block 0 and stops at the first miss (later blocks do not count even if they are cached);
    - capacity: the cache holds at most capacity_blocks blocks; before inserting a new block into a full cache
      (capacity_blocks blocks already), evict one;
    - LRU: while a request runs, every block it uses (hits and new blocks) is pinned (not evictable); when it ends
      they go back to the most-recent end of the LRU queue tail first, so a block that hits becomes most recently
      used, and among equally recent blocks the deepest is evicted first; when the cache is full and every block in
      it is pinned by the current request, its remaining blocks are not cached (no eviction, no eviction_count; this
      exercise's rule: a real engine would make the request wait or preempt another);
    - lookup, insertion and eviction are O(1) each (OrderedDict): never scan the whole cache per eviction (a large
      workload has a 5 s limit);
    - an empty token list is skipped and is not a request; a non-empty request shorter than one block is still a
      request (it cannot hit: its hit rate is 0.0, not None); a rate whose denominator is 0 is None (no data is not
      0%).
    Return a dict with at least these 9 fields (extra fields are not checked): total_requests, total_prompt_tokens,
    reused_tokens (hit blocks x block_size), miss_tokens = total_prompt_tokens - reused_tokens,
    cache_hit_rate = requests that hit at least one block / total_requests (request level),
    token_reuse_rate = reused_tokens / total_prompt_tokens (token level), prefill_work_reduction (every prompt token
    costs the same prefill in this model, so it equals token_reuse_rate), eviction_count, cache_size_blocks = the
    blocks cached at the end. Rates are plain Python divisions (floats), compared with the library's within a
    relative 1e-9.
    """
    # ==========================================
    # TODO 0: the longest cached full-block prefix, and LRU eviction.
    # Variables you may want: block_ids ((parent key, block tokens) -> key), cached (the cached keys),
    #       evictable (OrderedDict: unpinned blocks, next victim first),
    #       reused_tokens, hit_requests, eviction_count;
    # return total_requests, total_prompt_tokens, reused_tokens, miss_tokens,
    # cache_hit_rate (share of requests with at least one hit block), token_reuse_rate, prefill_work_reduction,
    # eviction_count, cache_size_blocks.
    # ==========================================
