"""What the diagnosis can say: the exercises, the keys their results carry, and the catalogue of mistakes.

Every message a student sees comes from here (the graded run rebuilds findings from these codes, never from
text the student's code produced).
"""

from __future__ import annotations

from dataclasses import dataclass

EXERCISES = (
    "simulate_prefix_cache",
    "summarize_prefix_cache",
    "compare_prefix_cache_to_baseline",
    "recommend_prefix_cache_run",
)
SIMULATE_KEYS = ("total_requests", "total_prompt_tokens", "reused_tokens", "miss_tokens", "cache_hit_rate",
                 "token_reuse_rate", "prefill_work_reduction", "eviction_count", "cache_size_blocks")
SUMMARY_KEYS = ("run_count", "avg_hit_rate", "avg_ttft_ms", "best_hit_rate_run")
COMPARISON_KEYS = ("hit_rate_gain", "ttft_delta_ms", "overhead_delta")
DECISION_KEYS = ("decision", "reason", "next_action")
DECIDED_KEYS = ("decision", "next_action")
VISIBILITIES = ("visible", "hidden")
DEFAULT_CALL_TIMEOUT_S = 5.0
EXERCISE_BUDGET_S = 60.0
"""All calls into one student function together; past it every call reports ``timed_out``."""


@dataclass(frozen=True)
class Mistake:
    code: str
    zh: str
    en: str


def _catalogue(*entries: Mistake) -> dict[str, Mistake]:
    return {entry.code: entry for entry in entries}


CATALOGUE = _catalogue(
    Mistake("partial_block_counted",
            "把尾部不足 block_size 的残块也缓存或算成了命中。只有完整 block 才缓存、才命中：切块用 "
            "range(0, len(tokens) - block_size + 1, block_size)。",
            "A trailing partial block is cached or counted as a hit. Only full blocks are cached and hit: "
            "cut blocks with range(0, len(tokens) - block_size + 1, block_size)."),
    Mistake("position_keys",
            "block 的 key 只用了（位置, 内容）：前缀不同、但同位置同内容的 block 被误判为命中。key 要代表整个前缀："
            "父 block 的 key + 本 block 的 token。",
            "Block keys are (position, content), so a block with the same tokens at the same position after a "
            "different prefix counts as a hit. A key must name the whole prefix: parent key + this block's tokens."),
    Mistake("no_stop_at_first_miss",
            "查找在第一个未命中之后没有停止，后面的 block 仍被算成命中。从 block 0 开始走，第一个未命中就 break"
            "（key 代表整个前缀时，未命中之后的 block 本来就不可能命中）。",
            "Lookup goes on after the first miss and counts later blocks as hits. Walk from block 0 and break at "
            "the first miss (with whole-prefix keys a block after a miss cannot hit at all)."),
    Mistake("head_first_eviction",
            "驱逐顺序错了：请求的头部 block 先于尾部被驱逐，留下再也查不到的尾部。请求运行时 pin 住它的 block，"
            "结束后按尾部先释放（reversed）放回 LRU 队列，让最深的 block 先被驱逐。",
            "Wrong eviction order: a request's head block is evicted before its tail, leaving tail blocks no "
            "lookup can reach. Pin a request's blocks while it runs and release them tail first (reversed) so "
            "the deepest block is evicted first."),
    Mistake("capacity_off_by_one",
            "缓存容量差了一：缓存里装下了 capacity_blocks + 1 个 block（驱逐条件写成了 len(cached) > capacity_blocks）。"
            "容量是上限：插入一个新 block 之前，若 len(cached) >= capacity_blocks 就先驱逐一个，"
            "cache_size_blocks 永远不超过 capacity_blocks。",
            "The capacity is off by one: the cache holds capacity_blocks + 1 blocks (the eviction test reads "
            "len(cached) > capacity_blocks). Capacity is an upper bound: before inserting a new block, evict one "
            "when len(cached) >= capacity_blocks, so cache_size_blocks never exceeds capacity_blocks."),
    Mistake("hit_not_refreshed",
            "命中的 block 没有变成最近使用：它保留了旧的 LRU 位置，于是先于刚用过的 block 被驱逐。请求用到的每个 block"
            "（命中的也一样）都要 pin 住，请求结束时放回 LRU 队列的末尾（最近使用）。",
            "A block that hits does not become most recently used: it keeps its old LRU place and is evicted "
            "before blocks used less recently. Every block a request uses (hits included) is pinned and goes back "
            "to the most-recent end of the LRU queue when the request ends."),
    Mistake("mutates_input",
            "函数修改了调用者传入的参数（例如 runs.sort(...)、list.pop、给 dict 赋值）。约定：任何函数都不修改参数；"
            "需要排序就用 sorted(...) 或 max(...)，需要改就先复制。",
            "The function changes an argument the caller passed in (runs.sort(...), list.pop, assigning into a "
            "dict). The contract: no function modifies its arguments; use sorted(...) or max(...) instead of "
            "sorting in place, or work on a copy."),
    Mistake("o_capacity_eviction",
            "驱逐的开销随缓存容量线性增长：像是每次都扫描整个缓存（min(...)、list.remove、list.pop(0)、"
            "在 list 里查 key）。用 OrderedDict：popitem(last=False) 驱逐、pop / move_to_end 更新，每次 O(1)。",
            "Eviction cost grows with the cache capacity, as if every eviction scans the whole cache "
            "(min(...), list.remove, list.pop(0), `key in list`). Use an OrderedDict: popitem(last=False) to "
            "evict, pop / move_to_end to update, O(1) each."),
    Mistake("missing_metric_as_zero",
            "缺失或为 None 的指标被当成了 0（或空列表的摘要给出了 0）。没测到的指标要 raise ValueError，"
            "空列表的平均值用 None；不要写 .get(key, 0) 或 `or 0`，也不要让 KeyError / TypeError 漏出去。",
            "A missing or None metric is read as 0 (or an empty summary reports 0). An unmeasured metric must "
            "raise ValueError and an empty list averages to None; avoid .get(key, 0) and `or 0`, and do not "
            "let a KeyError / TypeError escape instead."),
    Mistake("invalid_value_accepted",
            "契约拒绝的值被接受了：hit_rate 不在 [0, 1] 内、bool（True / False 在这里不算数），或 NaN（它和任何数"
            "比较都是 False，所以 `x < 0` 这样的检查拦不住它，要写成 `not x >= 0` 或 `not 0 <= x <= 1`）。"
            "使用前逐个检查，不合格就 raise ValueError。",
            "A value the contract refuses was accepted: a hit_rate outside [0, 1], a bool (True / False are not "
            "numbers here) or NaN (every comparison with it is False, so a check like `x < 0` lets it through; "
            "write `not x >= 0` or `not 0 <= x <= 1`). Check each value before using it and raise ValueError."),
    Mistake("mixed_workloads_accepted",
            "不同 workload_id 或 hit_rate_unit 的运行被放在一起汇总 / 比较了，它们的数字不可比。先比较这两个字段"
            "（没有这个字段与值为 None 视为相同），不一致就 raise ValueError。",
            "Runs of different workload_id or hit_rate_unit were summarised or compared together, and their "
            "numbers are not comparable. Compare both fields first (a missing field counts as None) and raise "
            "ValueError when they differ."),
    Mistake("wrong_delta_sign",
            "差值方向反了。三个字段一律是 candidate − baseline：hit_rate_gain 为正表示变好，ttft_delta_ms 和 "
            "overhead_delta 为负表示变好。",
            "A delta has the wrong sign. All three are candidate − baseline: a positive hit_rate_gain is "
            "better, a negative ttft_delta_ms or overhead_delta is better."),
    Mistake("ttft_only_accept",
            "命中率增益没达到 min_hit_rate 却给了 accept / tune：TTFT 变快本身不能证明缓存在复用。先判断 "
            "hit_rate_gain >= min_hit_rate，不达标就 reject。",
            "accept / tune although the hit-rate gain is below min_hit_rate: a faster TTFT alone is no evidence "
            "of reuse. Check hit_rate_gain >= min_hit_rate first and reject when it fails."),
    Mistake("tune_without_ttft_gain",
            "TTFT 没有变快却给了 tune：tune 只用于“命中率和 TTFT 都达标、只有 overhead 超限”。"
            "条件写成 elif hit_rate_ok: 会漏掉 TTFT；ttft_delta_ms >= 0 时一律 reject。",
            "tune although TTFT did not get faster: tune is only for \"hit rate and TTFT pass, only the overhead "
            "is over its limit\". A bare `elif hit_rate_ok:` forgets TTFT; ttft_delta_ms >= 0 is always reject."),
    Mistake("unchecked_thresholds",
            "门槛没有在使用前校验：min_hit_rate 必须是 [0, 1] 内的数，max_overhead 必须是 >= 0 的数，"
            "None、NaN 也不行，否则 raise ValueError。",
            "Thresholds are used without being checked: min_hit_rate must be a number in [0, 1] and "
            "max_overhead a number >= 0 (None and NaN included), else raise ValueError."),
    Mistake("other",
            "结果与参考答案不一致，但不像已知的典型错误。",
            "The result differs from the reference answer, but not like one of the known mistakes."),
    Mistake("not_implemented",
            "还没有实现（仍然 raise NotImplementedError）。完成 TODO 后重新运行定义它的单元格。",
            "Not implemented yet (it still raises NotImplementedError). Finish the TODO and re-run its cell."),
    Mistake("missing_function",
            "找不到这个函数：先运行定义它的单元格，并保持函数名不变。",
            "Function not found: run the cell that defines it and keep its name unchanged."),
    Mistake("timed_out",
            "在 {note} 内没有返回：可能有死循环，或者比预期慢得多。",
            "Did not return within {note}: an endless loop, or far slower than expected."),
    Mistake("raised_exception",
            "调用时抛出了意外的异常（{note}）。",
            "Raised an unexpected exception ({note})."),
    Mistake("missing_keys",
            "返回值不是包含所需字段的 dict（{note}）。",
            "The return value is not a dict with the required keys ({note})."),
    Mistake("fix_compare_first",
            "这个函数建立在 compare_prefix_cache_to_baseline 之上；先修好 compare 的问题，再看这里的检查结果。",
            "This function builds on compare_prefix_cache_to_baseline; fix compare first, then look here again."),
)
NAMED_MISTAKES = ("partial_block_counted", "position_keys", "no_stop_at_first_miss", "head_first_eviction",
                  "capacity_off_by_one", "hit_not_refreshed", "mutates_input", "o_capacity_eviction",
                  "missing_metric_as_zero", "invalid_value_accepted", "mixed_workloads_accepted", "wrong_delta_sign", "ttft_only_accept", "tune_without_ttft_gain",
                  "unchecked_thresholds")
"""The mistakes the course names; the other catalogue codes say a function is missing, unfinished or crashing."""
