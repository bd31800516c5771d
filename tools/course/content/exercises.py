"""The four exercises of chapter 69: reference solutions, visible tests and hidden tests, as cell sources.

Kept apart from the lesson prose (lesson.py) so the graded code can be read, diffed and reviewed on its own.
Everything between ``### BEGIN SOLUTION`` / ``### END SOLUTION`` becomes the seed's stub in the student release;
everything between ``### BEGIN HIDDEN TESTS`` / ``### END HIDDEN TESTS`` is removed from the release and only
runs at grading time.

Hidden-test messages are constant strings on purpose: grading feedback shows a hidden test's failure message
only when it is one of these authored hints (see tools/course/grading/feedback.py), never data from the test.
"""

IMPORTS = '''\
# 练习用到的类型与容器 | Types and containers for the exercises (read-only)
import copy
import os
from collections import OrderedDict
from contextlib import contextmanager
from typing import Dict, List, Optional

if "say" not in globals():  # the setup cell defines EDITION and say(); the exercises also work without it
    EDITION = "zh"

    def say(zh, en):
        return en if EDITION == "en" else f"{zh} | {en}"


def in_edition(message):
    """A bilingual test message ("中文 | English") in this notebook's language."""
    if globals().get("EDITION") == "en" and " | " in message:
        return message.rsplit(" | ", 1)[1]
    return message


@contextmanager
def explain_failure(exercise):
    """可见测试在这里面运行：失败时先打印该练习的诊断，再报错。
    Visible tests run inside this: when one fails, the self-check's diagnosis of ``exercise`` is printed first."""
    try:
        yield
    except NotImplementedError:
        raise
    except Exception as failure:
        if not os.environ.get("NBGRADER_EXECUTION"):  # while grading, the diagnosis goes into the feedback
            try:
                from tools.course.diagnosis import self_check
                self_check(globals(), exercises=[exercise])
            except Exception as exc:  # the diagnosis must never hide the test's own error
                print(say(f"（诊断不可用：{type(exc).__name__}）", f"(diagnosis unavailable: {type(exc).__name__})"))
        message = failure.args[0] if isinstance(failure, AssertionError) and failure.args else None
        if isinstance(message, str) and in_edition(message) != message:  # the English edition: English only
            raise AssertionError(in_edition(message)) from None
        raise


def unchanged(before, after, name):
    """The contract: no function modifies its arguments (a visible check of it)."""
    assert before == after, (f"{name} 被修改了：函数不能修改调用者传入的参数（不要原地 sort / pop / 赋值） | "
                             f"{name} was modified: a function never changes its caller's arguments "
                             "(no in-place sort / pop / assignment)")
'''

SIMULATE = '''\
def simulate_prefix_cache(token_sequences: List[List[int]], block_size: int = 4, capacity_blocks: int = 8) -> Dict[str, object]:
    """模拟按完整 token block 复用的前缀缓存（vLLM v1 / SGLang 的 LRU 语义）；不测真实 KV Cache 显存或延迟。

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
      缓存已满且所有 block 都被当前请求 pin 住时，剩下的 block 不缓存（不驱逐、不计 eviction）；
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
'''

SUMMARIZE = '''\
def summarize_prefix_cache(runs: List[Dict[str, float]]) -> Dict[str, object]:
    """汇总同一请求分布下的缓存运行结果。

    返回 run_count、avg_hit_rate、avg_ttft_ms（算术平均）和 best_hit_rate_run（命中率最高的 run 的 name，
    并列时取先出现的）。约定（唯一的契约，评分只检查这里写的规则）：
    - runs 必须是 list，否则 raise TypeError；每个元素必须是 dict，否则 raise ValueError；
    - 空列表返回空摘要：run_count 为 0，其余三个字段为 None，不构成性能结论；
    - 每个 run 必须有 name、hit_rate、ttft_ms：缺失或为 None 时 raise ValueError，不能静默当成实测 0；
      name 可以是任何非 None 的值（不检查类型，也不检查是否为空字符串）；
    - hit_rate 和 ttft_ms 必须是数（int 或 float；bool、字符串不算），hit_rate 在 [0, 1] 内（含两端）、
      ttft_ms ≥ 0，否则 raise ValueError；NaN 不满足范围，也 raise ValueError；ttft_ms=float("inf") 可以接受；
      其他字段（例如 overhead）不检查；
    - 只能汇总同一 workload、同一命中率口径的运行：各 run 的 workload_id、hit_rate_unit 不一致时 raise ValueError；
      “没有这个字段”与值为 None 视为相同。hit_rate_unit 的取值是 "token"、"block" 或 "request"（Step 3 的三种口径），
      但函数不检查取值本身：未知的取值也只和其他 run 比较是否相同；
    - 不修改参数：runs 的顺序和其中每个 dict 调用前后完全相同（不要 runs.sort(...)，用 max 或 sorted）；
    - 比较和平均都用普通的 Python 算术，不加容差。
    """
    # TODO 1：使用 run_count、avg_hit_rate、avg_ttft_ms、best_hit_rate_run。
    # run_count = ???；avg_hit_rate = ???；avg_ttft_ms = ???；best_hit_rate_run = ???。
    #         不要把缺失的 hit_rate 或 ttft_ms 当成实测 0；空列表应返回空摘要。
    ### BEGIN SOLUTION
    if not isinstance(runs, list):
        raise TypeError("runs 必须是 list[dict]")
    if not runs:
        return {"run_count": 0, "avg_hit_rate": None, "avg_ttft_ms": None, "best_hit_rate_run": None}
    for index, run in enumerate(runs):
        if not isinstance(run, dict):
            raise ValueError(f"runs[{index}] 必须是 dict")
        for key in ("name", "hit_rate", "ttft_ms"):
            if run.get(key) is None:
                raise ValueError(f"runs[{index}].{key} 缺失：没有测到的指标不能当成 0")
        if isinstance(run["hit_rate"], bool) or not isinstance(run["hit_rate"], (int, float)) \\
                or not 0 <= run["hit_rate"] <= 1:
            raise ValueError(f"runs[{index}].hit_rate 必须是 [0, 1] 内的数，收到 {run['hit_rate']!r}")
        if isinstance(run["ttft_ms"], bool) or not isinstance(run["ttft_ms"], (int, float)) \\
                or not run["ttft_ms"] >= 0:
            raise ValueError(f"runs[{index}].ttft_ms 必须是非负数，收到 {run['ttft_ms']!r}")
    for key in ("workload_id", "hit_rate_unit"):
        if len({repr(run.get(key)) for run in runs}) > 1:
            raise ValueError(f"{key} 不一致：只能汇总同一 workload、同一命中率口径的运行")
    best = max(runs, key=lambda run: run["hit_rate"])  # max keeps the first of equals
    return {
        "run_count": len(runs),
        "avg_hit_rate": sum(run["hit_rate"] for run in runs) / len(runs),
        "avg_ttft_ms": sum(run["ttft_ms"] for run in runs) / len(runs),
        "best_hit_rate_run": best["name"],
    }
    ### END SOLUTION
'''

COMPARE = '''\
def compare_prefix_cache_to_baseline(baseline: Dict[str, float], candidate: Dict[str, float]) -> Dict[str, float]:
    """计算 candidate 相对 baseline 的命中率、TTFT 和开销变化（一律是 candidate − baseline）。

    返回 hit_rate_gain（越大越好）、ttft_delta_ms 和 overhead_delta（越小越好，负数表示变好），都是普通的
    Python 减法结果，不取整、不加容差。约定（唯一的契约）：
    - baseline、candidate 必须是 dict，否则 raise ValueError；
    - 两组都必须有 hit_rate、ttft_ms 和 overhead，而且都是数（int 或 float；bool、字符串、NaN 不算）；
      缺失、为 None 或不是数时 raise ValueError；
    - 会检查的范围：hit_rate 在 [0, 1] 内、ttft_ms ≥ 0，否则 raise ValueError；overhead 只要求是数（不检查范围）；
      ttft_ms、overhead 为 float("inf") 可以接受；
    - 两组的 workload_id、hit_rate_unit 不一致时 raise ValueError（不同 workload、不同口径不能比；
      与 summarize 一样只比较是否相同，不检查取值；“没有这个字段”与值为 None 视为相同）；
    - 不修改参数：baseline、candidate 调用前后完全相同；name 和其他字段不检查。
    结果只服务于报告比较，不能单独证明 backend 已产生真实缓存命中。
    """
    # TODO 2：使用 hit_rate_gain、ttft_delta_ms、overhead_delta。
    # hit_rate_gain = ???；ttft_delta_ms = ???；overhead_delta = ???。
    #         注意增益和差值的方向不同，并要求 baseline/candidate workload 一致。
    ### BEGIN SOLUTION
    values = {}
    for label, run in (("baseline", baseline), ("candidate", candidate)):
        if not isinstance(run, dict):
            raise ValueError(f"{label} 必须是 dict")
        for key in ("hit_rate", "ttft_ms", "overhead"):
            value = run.get(key)
            if value is None:
                raise ValueError(f"{label}.{key} 缺失：没有测到的指标不能当成 0")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
                raise ValueError(f"{label}.{key} 必须是数，收到 {value!r}")
        if not 0 <= run["hit_rate"] <= 1:
            raise ValueError(f"{label}.hit_rate 必须在 [0, 1] 内，收到 {run['hit_rate']!r}")
        if run["ttft_ms"] < 0:
            raise ValueError(f"{label}.ttft_ms 不能为负，收到 {run['ttft_ms']!r}")
        values[label] = run
    for key in ("workload_id", "hit_rate_unit"):
        if repr(baseline.get(key)) != repr(candidate.get(key)):
            raise ValueError(f"{key} 不一致：baseline 与 candidate 必须来自同一 workload、同一口径")
    return {
        "hit_rate_gain": candidate["hit_rate"] - baseline["hit_rate"],
        "ttft_delta_ms": candidate["ttft_ms"] - baseline["ttft_ms"],
        "overhead_delta": candidate["overhead"] - baseline["overhead"],
    }
    ### END SOLUTION
'''

RECOMMEND = '''\
def recommend_prefix_cache_run(baseline: Dict[str, float], candidate: Dict[str, float], min_hit_rate: float, max_overhead: float) -> Dict[str, object]:
    """按命中率、TTFT 收益和维护开销给出教学决策；返回 decision、reason、next_action。

    约定（唯一的契约，Step 4 的表格与它一致）：
    - 先校验门槛，再看 baseline / candidate：min_hit_rate 必须是 [0, 1] 内的数，max_overhead 必须是 ≥ 0 的数
      （float("inf") 可以，表示不限开销；None、NaN、bool、字符串都不行），否则 raise ValueError；
    - baseline / candidate 的检查同 compare_prefix_cache_to_baseline（用它算出 comparison）；
    - 门槛比较的是增益 hit_rate_gain = candidate − baseline，不是 candidate 自己的 hit_rate；
    - 比较用普通的 float 运算，不加容差：例如 0.7 − 0.2 = 0.49999999999999994 < 0.5，门槛 0.5 时不达标；
    - accept（next_action='promote_to_serving_eval'）：hit_rate_gain ≥ min_hit_rate，
      ttft_delta_ms < 0，且 overhead_delta ≤ max_overhead（恰好等于门槛也算达标）；
    - tune（'refine_chunk_or_eviction_policy'）：hit_rate_gain ≥ min_hit_rate 且 ttft_delta_ms < 0，
      但 overhead_delta > max_overhead；
    - reject（'fallback_to_no_cache'）：其余情况——命中率增益未达门槛（哪怕 TTFT 变快），或 TTFT 没有变快
      （ttft_delta_ms ≥ 0，哪怕命中率达标）；
    - reason 是任意非空字符串（内容不评分）；返回的 dict 可以多带字段；
    - 不修改参数：baseline、candidate 调用前后完全相同。
    min_hit_rate、max_overhead 是当前 workload 的门槛，不是通用常数；本函数不能替代真实 backend 验证。
    """
    # TODO 3：先得到 comparison，再使用 min_hit_rate、max_overhead 判断
    # hit_rate_ok = ???；overhead_ok = ???；decision = ???；next_action = ???。
    #         accept / tune / reject，并填写 reason、next_action。
    #         命中率未达门槛时不能仅因 TTFT 改善就 accept；门槛必须先校验。
    ### BEGIN SOLUTION
    for name, value, low, high in (("min_hit_rate", min_hit_rate, 0.0, 1.0),
                                   ("max_overhead", max_overhead, 0.0, float("inf"))):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise ValueError(f"{name} 必须是 [{low}, {high}] 内的数，收到 {value!r}")
    comparison = compare_prefix_cache_to_baseline(baseline, candidate)
    hit_rate_ok = comparison["hit_rate_gain"] >= min_hit_rate
    ttft_improved = comparison["ttft_delta_ms"] < 0
    overhead_ok = comparison["overhead_delta"] <= max_overhead
    if hit_rate_ok and ttft_improved and overhead_ok:
        decision, reason = "accept", "命中率增益、TTFT 收益和维护开销都达标"
    elif hit_rate_ok and ttft_improved:
        decision, reason = "tune", "命中率和 TTFT 收益达标，但维护开销超过上限"
    elif not hit_rate_ok:
        decision, reason = "reject", "命中率增益低于门槛；TTFT 改善本身不能证明缓存复用"
    else:
        decision, reason = "reject", "相对 baseline 没有 TTFT 收益"
    next_action = {"accept": "promote_to_serving_eval", "tune": "refine_chunk_or_eviction_policy",
                   "reject": "fallback_to_no_cache"}[decision]
    return {"decision": decision, "reason": reason, "next_action": next_action}
    ### END SOLUTION
'''

# --- visible tests -----------------------------------------------------------------------------------------

TEST_SIMULATE_VISIBLE = '''\
# 可见测试 | Visible test: TODO 0 simulate_prefix_cache
with explain_failure("simulate_prefix_cache"):
    sequences = [[1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 9, 10]]
    result = simulate_prefix_cache(sequences, block_size=2, capacity_blocks=8)
    unchanged([[1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 9, 10]], sequences, "token_sequences")
    expected_keys = {"total_requests", "total_prompt_tokens", "reused_tokens", "miss_tokens", "cache_hit_rate",
                     "token_reuse_rate", "prefill_work_reduction", "eviction_count", "cache_size_blocks"}
    assert expected_keys <= set(result), f"缺少返回字段 | missing keys: {sorted(expected_keys - set(result))}"
    assert result["total_requests"] == 2 and result["total_prompt_tokens"] == 16, \\
        "total_requests / total_prompt_tokens：2 个请求、16 个 token | 2 requests, 16 tokens"
    assert result["reused_tokens"] == 6, ("第二个请求命中 [1,2] [3,4] [5,6] 三个 block，[9,10] 不命中 | "
                                          "the second request hits [1,2] [3,4] [5,6]; [9,10] misses")
    assert result["miss_tokens"] == 10, "miss_tokens = total_prompt_tokens - reused_tokens"
    assert result["cache_hit_rate"] == 1 / 2 and result["token_reuse_rate"] == 6 / 16, \\
        "cache_hit_rate 按请求、token_reuse_rate 按 token 计 | cache_hit_rate per request, token_reuse_rate per token"
    assert result["prefill_work_reduction"] == result["token_reuse_rate"], \\
        "prefill_work_reduction = reused_tokens / total_prompt_tokens"
    assert result["eviction_count"] == 0 and result["cache_size_blocks"] == 5, \\
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
    assert result["cache_hit_rate"] is None and result["token_reuse_rate"] is None, \\
        "没有请求时比率没有定义：返回 None，不是 0 | with no requests a rate is undefined: None, not 0"

    for invalid in ({"block_size": 0}, {"capacity_blocks": 0}, {"block_size": -2}, {"block_size": True}):
        try:
            simulate_prefix_cache([[1, 2]], **invalid)
        except ValueError:
            pass
        else:
            raise AssertionError(f"非法参数 {invalid} 应该 raise ValueError | {invalid} must raise ValueError")
print(say("TODO 0 可见测试通过", "TODO 0: visible test passed"))
'''

TEST_SUMMARIZE_VISIBLE = '''\
# 可见测试 | Visible test: TODO 1 summarize_prefix_cache
with explain_failure("summarize_prefix_cache"):
    runs = [{"name": "small_cache", "hit_rate": 0.3, "ttft_ms": 110.0},
            {"name": "prefix_cache", "hit_rate": 0.6, "ttft_ms": 90.0},
            {"name": "cache_off", "hit_rate": 0.0, "ttft_ms": 130.0}]
    before = copy.deepcopy(runs)
    summary = summarize_prefix_cache(runs)
    unchanged(before, runs, "runs")
    assert summary["run_count"] == 3, "run_count 是 run 的个数 | run_count is the number of runs"
    assert abs(summary["avg_hit_rate"] - 0.3) < 1e-12 and summary["avg_ttft_ms"] == 110.0, \\
        "avg_hit_rate / avg_ttft_ms 是算术平均 | avg_hit_rate / avg_ttft_ms are plain means"
    assert summary["best_hit_rate_run"] == "prefix_cache", \\
        "best_hit_rate_run 是命中率最高的 run 的 name | best_hit_rate_run is the name of the run with the highest hit rate"
    empty = summarize_prefix_cache([])
    assert empty == {"run_count": 0, "avg_hit_rate": None, "avg_ttft_ms": None, "best_hit_rate_run": None}, \\
        "空列表只返回空摘要：run_count 为 0，其余字段为 None | an empty list: run_count 0, every other field None"
print(say("TODO 1 可见测试通过", "TODO 1: visible test passed"))
'''

TEST_COMPARE_VISIBLE = '''\
# 可见测试 | Visible test: TODO 2 compare_prefix_cache_to_baseline
with explain_failure("compare_prefix_cache_to_baseline"):
    baseline = {"name": "small_cache", "hit_rate": 0.25, "ttft_ms": 130.0, "overhead": 0.125}
    candidate = {"name": "prefix_cache", "hit_rate": 0.75, "ttft_ms": 100.0, "overhead": 0.375}
    before = copy.deepcopy((baseline, candidate))
    comparison = compare_prefix_cache_to_baseline(baseline, candidate)
    unchanged(before, (baseline, candidate), "baseline / candidate")
    assert comparison["hit_rate_gain"] == 0.5, \\
        "hit_rate_gain = candidate − baseline（不是 candidate 的 hit_rate）| candidate − baseline, not candidate's hit_rate"
    assert comparison["ttft_delta_ms"] == -30.0, \\
        "ttft_delta_ms = candidate − baseline（更快是负数）| candidate − baseline (faster is negative)"
    assert comparison["overhead_delta"] == 0.25, \\
        "overhead_delta = candidate − baseline（开销增加是正数）| candidate − baseline (more overhead is positive)"
print(say("TODO 2 可见测试通过", "TODO 2: visible test passed"))
'''

TEST_RECOMMEND_VISIBLE = '''\
# 可见测试 | Visible test: TODO 3 recommend_prefix_cache_run
with explain_failure("recommend_prefix_cache_run"):
    baseline = {"name": "small_cache", "hit_rate": 0.25, "ttft_ms": 130.0, "overhead": 0.0}
    good = {"name": "prefix_cache", "hit_rate": 0.875, "ttft_ms": 90.0, "overhead": 0.05}
    before = copy.deepcopy((baseline, good))
    decision = recommend_prefix_cache_run(baseline, good, min_hit_rate=0.5, max_overhead=0.1)
    unchanged(before, (baseline, good), "baseline / candidate")
    assert decision["decision"] == "accept" and decision["next_action"] == "promote_to_serving_eval", \\
        "增益 0.625 ≥ 0.5、TTFT 变快、开销达标：accept | gain 0.625 >= 0.5, faster, overhead within limit: accept"
    assert isinstance(decision["reason"], str) and decision["reason"], "reason 不能为空 | reason must not be empty"
    costly = dict(good, overhead=0.5)
    decision = recommend_prefix_cache_run(baseline, costly, min_hit_rate=0.5, max_overhead=0.1)
    assert decision["decision"] == "tune" and decision["next_action"] == "refine_chunk_or_eviction_policy", \\
        "命中率和 TTFT 达标、开销超限：tune | hit rate and TTFT pass, overhead over the limit: tune"
    modest = dict(good, hit_rate=0.625)  # candidate 的 hit_rate ≥ 0.5，但增益只有 0.375 | its gain is only 0.375
    decision = recommend_prefix_cache_run(baseline, modest, min_hit_rate=0.5, max_overhead=0.1)
    assert decision["decision"] == "reject" and decision["next_action"] == "fallback_to_no_cache", (
        "门槛比较的是增益 hit_rate_gain（0.375 < 0.5），不是 candidate 的 hit_rate：reject | "
        "the threshold applies to the gain (0.375 < 0.5), not to candidate's hit_rate: reject")
    slower = dict(good, ttft_ms=150.0)  # 命中率达标、开销达标，但 TTFT 变慢 | hit rate and overhead pass, TTFT is slower
    decision = recommend_prefix_cache_run(baseline, slower, min_hit_rate=0.5, max_overhead=0.1)
    assert decision["decision"] == "reject" and decision["next_action"] == "fallback_to_no_cache", (
        "TTFT 没有变快（ttft_delta_ms >= 0）时 reject；tune 只用于命中率和 TTFT 都达标、只有开销超限 | "
        "no faster TTFT (ttft_delta_ms >= 0) is reject; tune is only for hit rate and TTFT passing with the overhead over")
    near = {"name": "near", "hit_rate": 0.7, "ttft_ms": 90.0, "overhead": 0.0}  # 0.7 − 0.2 = 0.49999999999999994
    decision = recommend_prefix_cache_run(dict(baseline, hit_rate=0.2), near, min_hit_rate=0.5, max_overhead=0.1)
    assert decision["decision"] == "reject", (
        "门槛比较不加容差：0.7 − 0.2 = 0.49999999999999994 < 0.5，不达标：reject | "
        "thresholds are compared without tolerance: 0.7 − 0.2 = 0.49999999999999994 < 0.5 misses: reject")
print(say("TODO 3 可见测试通过", "TODO 3: visible test passed"))
'''

TEST_SEED_TEMPLATE = '''\
# 测试你的实现 | The chapter's original end-to-end test
def test_prefix_cache_benchmark_template():
    sequences = [
        [1, 2, 3, 4, 5, 6, 7, 8],
        [1, 2, 3, 4, 5, 6, 9, 10],
        [20, 21, 22, 23, 24, 25, 26, 27],
    ]
    simulated = simulate_prefix_cache(sequences, block_size=2, capacity_blocks=4)
    assert simulated['total_requests'] == 3
    assert simulated['total_prompt_tokens'] == 24
    assert simulated['reused_tokens'] == 6
    assert simulated['miss_tokens'] == 18
    assert simulated['cache_hit_rate'] == 1 / 3
    assert simulated['token_reuse_rate'] == 6 / 24
    assert simulated['eviction_count'] > 0
    print('CPU Prefix Cache simulation:', simulated)
    for invalid in ({'block_size': 0}, {'capacity_blocks': 0}):
        try:
            simulate_prefix_cache(sequences, **invalid)
        except ValueError:
            pass
        else:
            raise AssertionError(say('非法缓存参数应明确拒绝！', 'invalid cache sizes must be refused'))

    baseline = {'name': 'baseline', 'hit_rate': 0.0, 'ttft_ms': 130, 'overhead': 0.0}
    candidate = {'name': 'cache', 'hit_rate': 0.68, 'ttft_ms': 92, 'overhead': 0.08}
    summary = summarize_prefix_cache([baseline, candidate])
    assert summary['run_count'] == 2
    assert summary['best_hit_rate_run'] == 'cache'
    comparison = compare_prefix_cache_to_baseline(baseline, candidate)
    assert comparison['hit_rate_gain'] == 0.68
    assert comparison['ttft_delta_ms'] == -38
    assert comparison['overhead_delta'] == 0.08
    decision = recommend_prefix_cache_run(baseline, candidate, min_hit_rate=0.5, max_overhead=0.1)
    assert decision['decision'] == 'accept'
    assert decision['next_action'] == 'promote_to_serving_eval'


test_prefix_cache_benchmark_template()
print(say('测试通过：前缀缓存基准模板可以工作。', 'Test passed: the prefix cache benchmark template works.'))
'''

# --- hidden tests -------------------------------------------------------------------------------------------

HIDDEN_SIMULATE_BLOCKS = '''\
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
'''

HIDDEN_SIMULATE_KEYS = '''\
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
'''

HIDDEN_SIMULATE_EVICTION = '''\
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
'''

HIDDEN_SIMULATE_ORACLE = '''\
# 隐藏测试 | Hidden tests (graded): TODO 0, agreement with the reference library on random workloads.
# 学生版里这里只有这段注释；评分时会在这里运行隐藏测试（可以先用 Step 6 的“对照参考库”单元格自查）。
### BEGIN HIDDEN TESTS
import math as _math
import random as _random
from tools.prefixbench import simulate_prefix_cache as _oracle
_KEYS = ("total_requests", "total_prompt_tokens", "reused_tokens", "miss_tokens",
         "cache_hit_rate", "token_reuse_rate", "prefill_work_reduction",
         "eviction_count", "cache_size_blocks")

def _agrees(mine, ref):
    for key in _KEYS:
        a, b = mine.get(key), ref[key]
        if isinstance(b, float) and isinstance(a, (int, float)) and not isinstance(a, bool):
            if not _math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12):
                return False
        elif a != b:
            return False
    return True

_rng = _random.Random(69_2025)
for _trial in range(400):
    _vocab = _rng.randrange(1, 5)
    _seqs = [[_rng.randrange(_vocab) for _ in range(_rng.randrange(0, 25))] for _ in range(_rng.randrange(1, 13))]
    _bs, _cap = _rng.randrange(1, 6), _rng.randrange(1, 21)
    _mine = simulate_prefix_cache([list(s) for s in _seqs], block_size=_bs, capacity_blocks=_cap)
    assert isinstance(_mine.get("cache_size_blocks"), int) and _mine["cache_size_blocks"] <= _cap, "缓存里的 block 数超过了 capacity_blocks（容量差一？）| the cache holds more than capacity_blocks blocks (capacity off by one?)"
    assert _agrees(_mine, _oracle(_seqs, block_size=_bs, capacity_blocks=_cap)), "随机 workload 上的结果与参考库不一致（先运行 Step 6 的“对照参考库”单元格找最小反例）| differs from the library on random workloads (Step 6's check against the library prints the smallest case)"
### END HIDDEN TESTS
'''

HIDDEN_SIMULATE_SPEED = '''\
# 隐藏测试 | Hidden tests (graded): TODO 0, O(1) eviction on a large workload (time budget).
# 学生版里这里只有这段注释；评分时会在这里运行隐藏测试。
### BEGIN HIDDEN TESTS
import random as _random
import signal as _signal
import time as _time
from tools.prefixbench import simulate_prefix_cache as _oracle
_rng = _random.Random(1969)
_prefixes = [[_rng.randrange(1000) for _ in range(120)] for _ in range(50)]
_seqs = [_prefixes[i % 50] + [_rng.randrange(1000) for _ in range(120)] for i in range(1500)]
_BUDGET_S = 5.0

def _too_slow(signum, frame):
    raise TimeoutError("simulate_prefix_cache 太慢：驱逐不能每次都扫描整个缓存（O(capacity)），用 OrderedDict 做到 O(1) | too slow: never scan the whole cache per eviction (O(capacity)); use an OrderedDict for O(1)")

_previous = _signal.signal(_signal.SIGALRM, _too_slow)
_signal.setitimer(_signal.ITIMER_REAL, _BUDGET_S)
try:
    _start = _time.perf_counter()
    _r = simulate_prefix_cache(_seqs, block_size=4, capacity_blocks=10000)
    _elapsed = _time.perf_counter() - _start
finally:
    _signal.setitimer(_signal.ITIMER_REAL, 0)
    _signal.signal(_signal.SIGALRM, _previous)
assert _elapsed < _BUDGET_S, "simulate_prefix_cache 太慢：驱逐不能每次都扫描整个缓存（O(capacity)），用 OrderedDict 做到 O(1) | too slow: never scan the whole cache per eviction (O(capacity)); use an OrderedDict for O(1)"
_ref = _oracle(_seqs, block_size=4, capacity_blocks=10000)
assert all(_r[k] == _ref[k] for k in ("reused_tokens", "eviction_count", "cache_size_blocks")), "大规模 workload 上的计数与参考库不一致 | the counts on a large workload differ from the library"
### END HIDDEN TESTS
'''

HIDDEN_SUMMARIZE = '''\
# 隐藏测试 | Hidden tests (graded): TODO 1, missing metrics, ties, same workload and unit.
# 学生版里这里只有这段注释；评分时会在这里运行隐藏测试。
### BEGIN HIDDEN TESTS
def _raises_value_error(call):
    try:
        call()
    except ValueError:
        return True
    return False

_runs = [{"name": "a", "hit_rate": 0.2, "ttft_ms": 100.0},
         {"name": "b", "hit_rate": 0.6, "ttft_ms": 80.0},
         {"name": "c", "hit_rate": 0.6, "ttft_ms": 90.0}]
_s = summarize_prefix_cache(_runs)
assert [_run["name"] for _run in _runs] == ["a", "b", "c"] and len(_runs[0]) == 3, "summarize_prefix_cache 不能修改调用者的 runs（不要 runs.sort(...)，用 max 或 sorted）| summarize_prefix_cache must not modify the caller's runs (no runs.sort(...); use max or sorted)"
assert _s["run_count"] == 3 and abs(_s["avg_hit_rate"] - 1.4 / 3) < 1e-12 and _s["avg_ttft_ms"] == 90.0, "平均值算错了 | the means are wrong"
assert _s["best_hit_rate_run"] == "b", "命中率并列时取先出现的 run | on a hit-rate tie the first run wins"
assert _raises_value_error(lambda: summarize_prefix_cache([{"name": "a", "ttft_ms": 100.0}])), "缺失的 hit_rate 必须 raise ValueError，不能当成 0 | a missing hit_rate must raise ValueError, never read as 0"
assert _raises_value_error(lambda: summarize_prefix_cache([{"name": "a", "hit_rate": None, "ttft_ms": 100.0}])), "hit_rate 为 None 必须 raise ValueError，不能当成 0 | a None hit_rate must raise ValueError, never read as 0"
assert _raises_value_error(lambda: summarize_prefix_cache([{"name": "a", "hit_rate": 0.5}])), "缺失的 ttft_ms 必须 raise ValueError，不能当成 0 | a missing ttft_ms must raise ValueError, never read as 0"
assert _raises_value_error(lambda: summarize_prefix_cache([{"name": "a", "hit_rate": 0.5, "ttft_ms": None}])), "ttft_ms 为 None 必须 raise ValueError，不能当成 0 | a None ttft_ms must raise ValueError, never read as 0"
assert _raises_value_error(lambda: summarize_prefix_cache([{"name": "a", "hit_rate": 1.5, "ttft_ms": 10.0}])), "hit_rate 必须在 [0, 1] 内 | hit_rate must be in [0, 1]"
assert _raises_value_error(lambda: summarize_prefix_cache([{"name": "a", "hit_rate": 0.5, "ttft_ms": float("nan")}])), "NaN 的 ttft_ms 不满足 ttft_ms ≥ 0，要 raise ValueError | a NaN ttft_ms is not >= 0 and must raise ValueError"
assert _raises_value_error(lambda: summarize_prefix_cache([{"name": "a", "hit_rate": True, "ttft_ms": 10.0}])), "bool 不是数：hit_rate=True 要 raise ValueError | a bool is not a number: hit_rate=True must raise ValueError"
assert _raises_value_error(lambda: summarize_prefix_cache([
    {"name": "a", "hit_rate": 0.5, "ttft_ms": 10.0, "workload_id": "w1"},
    {"name": "b", "hit_rate": 0.5, "ttft_ms": 10.0, "workload_id": "w2"}])), "不同 workload_id 的运行不能一起汇总 | runs with different workload_id cannot be summarised together"
assert _raises_value_error(lambda: summarize_prefix_cache([
    {"name": "a", "hit_rate": 0.5, "ttft_ms": 10.0, "hit_rate_unit": "token"},
    {"name": "b", "hit_rate": 0.5, "ttft_ms": 10.0, "hit_rate_unit": "block"}])), "token 口径和 block 口径的命中率不能混在一起 | token-level and block-level hit rates cannot be mixed"
_same = summarize_prefix_cache([{"name": "a", "hit_rate": 0.25, "ttft_ms": 10.0, "workload_id": "w"},
                                {"name": "b", "hit_rate": 0.75, "ttft_ms": 30.0, "workload_id": "w"}])
assert _same["avg_hit_rate"] == 0.5 and _same["best_hit_rate_run"] == "b", "同一 workload 的运行应该正常汇总 | runs of the same workload must summarise normally"
### END HIDDEN TESTS
'''

HIDDEN_COMPARE = '''\
# 隐藏测试 | Hidden tests (graded): TODO 2, direction of every delta, missing metrics, same workload.
# 学生版里这里只有这段注释；评分时会在这里运行隐藏测试。
### BEGIN HIDDEN TESTS
def _raises_value_error(call):
    try:
        call()
    except ValueError:
        return True
    return False

_base = {"name": "off", "hit_rate": 0.125, "ttft_ms": 120.0, "overhead": 0.25}
_cand = {"name": "on", "hit_rate": 0.625, "ttft_ms": 95.0, "overhead": 0.375}
_c = compare_prefix_cache_to_baseline(_base, _cand)
assert _base == {"name": "off", "hit_rate": 0.125, "ttft_ms": 120.0, "overhead": 0.25} and _cand == {"name": "on", "hit_rate": 0.625, "ttft_ms": 95.0, "overhead": 0.375}, "compare_prefix_cache_to_baseline 不能修改 baseline / candidate | compare_prefix_cache_to_baseline must not modify baseline / candidate"
assert _c["hit_rate_gain"] == 0.5, "hit_rate_gain = candidate - baseline"
assert _c["ttft_delta_ms"] == -25.0, "ttft_delta_ms = candidate - baseline（更快是负数） | faster is negative"
assert _c["overhead_delta"] == 0.125, "overhead_delta = candidate - baseline（开销增加是正数） | more overhead is positive"
_c = compare_prefix_cache_to_baseline(_cand, _base)
assert _c["hit_rate_gain"] == -0.5 and _c["ttft_delta_ms"] == 25.0 and _c["overhead_delta"] == -0.125, "变差时增益为负、差值为正 | when things get worse the gain is negative and the deltas positive"
assert _raises_value_error(lambda: compare_prefix_cache_to_baseline({"hit_rate": 0.1, "ttft_ms": 100.0}, _cand)), "缺失的 overhead 必须 raise ValueError，不能当成 0 | a missing overhead must raise ValueError, never read as 0"
assert _raises_value_error(lambda: compare_prefix_cache_to_baseline(_base, dict(_cand, ttft_ms=None))), "ttft_ms 为 None 必须 raise ValueError，不能当成 0 | a None ttft_ms must raise ValueError, never read as 0"
assert _raises_value_error(lambda: compare_prefix_cache_to_baseline(_base, dict(_cand, hit_rate=None))), "hit_rate 为 None 必须 raise ValueError，不能当成 0 | a None hit_rate must raise ValueError, never read as 0"
assert _raises_value_error(lambda: compare_prefix_cache_to_baseline(_base, dict(_cand, hit_rate=1.5))), "hit_rate 必须在 [0, 1] 内 | hit_rate must be in [0, 1]"
assert _raises_value_error(lambda: compare_prefix_cache_to_baseline(_base, dict(_cand, ttft_ms=float("nan")))), "NaN 不是可比较的数，要 raise ValueError | NaN is not a comparable number and must raise ValueError"
assert _raises_value_error(lambda: compare_prefix_cache_to_baseline(dict(_base, overhead=False), _cand)), "bool 不是数：overhead=False 要 raise ValueError | a bool is not a number: overhead=False must raise ValueError"
assert _raises_value_error(lambda: compare_prefix_cache_to_baseline(dict(_base, workload_id="w1"), dict(_cand, workload_id="w2"))), "不同 workload 的 baseline 和 candidate 不能比较 | a baseline and a candidate of different workloads cannot be compared"
_c = compare_prefix_cache_to_baseline(dict(_base, workload_id="w"), dict(_cand, workload_id="w"))
assert _c["hit_rate_gain"] == 0.5, "同一 workload 的运行应该正常比较 | runs of the same workload must compare normally"
### END HIDDEN TESTS
'''

HIDDEN_RECOMMEND_DECISION = '''\
# 隐藏测试 | Hidden tests (graded): TODO 3, accept / tune / reject; a TTFT gain alone never accepts.
# 学生版里这里只有这段注释；评分时会在这里运行隐藏测试。
### BEGIN HIDDEN TESTS
_NEXT = {"accept": "promote_to_serving_eval", "tune": "refine_chunk_or_eviction_policy", "reject": "fallback_to_no_cache"}
_base = {"name": "off", "hit_rate": 0.25, "ttft_ms": 120.0, "overhead": 0.0}

def _decide(candidate, min_hit_rate=0.5, max_overhead=0.125):
    _given = dict(candidate)
    result = recommend_prefix_cache_run(_base, candidate, min_hit_rate=min_hit_rate, max_overhead=max_overhead)
    assert _base == {"name": "off", "hit_rate": 0.25, "ttft_ms": 120.0, "overhead": 0.0} and candidate == _given, "recommend_prefix_cache_run 不能修改 baseline / candidate | recommend_prefix_cache_run must not modify baseline / candidate"
    assert result["next_action"] == _NEXT.get(result["decision"]), "next_action 必须与 decision 对应 | next_action must match decision"
    assert isinstance(result["reason"], str) and result["reason"], "reason 不能为空 | reason must not be empty"
    return result["decision"]

assert _decide({"hit_rate": 0.75, "ttft_ms": 80.0, "overhead": 0.125}) == "accept", "增益恰好等于门槛、开销恰好等于上限时应 accept | a gain exactly at the threshold and an overhead exactly at the limit is accept"
assert _decide({"hit_rate": 0.75, "ttft_ms": 80.0, "overhead": 0.5}) == "tune", "命中率和 TTFT 达标但开销超限应 tune | hit rate and TTFT pass but the overhead is over its limit: tune"
assert _decide({"hit_rate": 0.5, "ttft_ms": 40.0, "overhead": 0.0}) == "reject", "命中率增益未达门槛时，TTFT 改善再多也不能 accept | a hit-rate gain below the threshold is never accept, however much faster TTFT is"
assert _decide({"hit_rate": 0.5, "ttft_ms": 40.0, "overhead": 0.5}) == "reject", "命中率增益未达门槛时应 reject，而不是 tune | a hit-rate gain below the threshold is reject, not tune"
assert _decide({"hit_rate": 0.9, "ttft_ms": 120.0, "overhead": 0.0}) == "reject", "TTFT 没有变快（差值不小于 0）时应 reject | no faster TTFT (delta not below 0) is reject"
assert _decide({"hit_rate": 0.9, "ttft_ms": 150.0, "overhead": 0.0}) == "reject", "TTFT 变慢时应 reject | a slower TTFT is reject"
assert _decide({"hit_rate": 0.9, "ttft_ms": 150.0, "overhead": 0.5}) == "reject", "TTFT 变慢时应 reject 而不是 tune：tune 要求命中率和 TTFT 都达标 | a slower TTFT is reject, not tune: tune needs both hit rate and TTFT to pass"
assert recommend_prefix_cache_run({"hit_rate": 0.2, "ttft_ms": 120.0, "overhead": 0.0}, {"hit_rate": 0.7, "ttft_ms": 80.0, "overhead": 0.0}, 0.5, 0.1)["decision"] == "reject", "比较不加容差：0.7 − 0.2 = 0.49999999999999994 < 0.5，不达标 | no tolerance: 0.7 − 0.2 = 0.49999999999999994 < 0.5 misses the threshold"
assert _decide({"hit_rate": 0.3, "ttft_ms": 100.0, "overhead": 0.0}, min_hit_rate=0.0) == "accept", "门槛为 0 时，有 TTFT 收益即可 accept | with a zero threshold a TTFT gain is enough to accept"
### END HIDDEN TESTS
'''

HIDDEN_RECOMMEND_THRESHOLDS = '''\
# 隐藏测试 | Hidden tests (graded): TODO 3, thresholds are validated before they are used.
# 学生版里这里只有这段注释；评分时会在这里运行隐藏测试。
### BEGIN HIDDEN TESTS
_base = {"name": "off", "hit_rate": 0.0, "ttft_ms": 120.0, "overhead": 0.0}
_cand = {"name": "on", "hit_rate": 0.75, "ttft_ms": 80.0, "overhead": 0.05}
for _kwargs in ({"min_hit_rate": -0.1, "max_overhead": 0.1}, {"min_hit_rate": 1.5, "max_overhead": 0.1},
                {"min_hit_rate": None, "max_overhead": 0.1}, {"min_hit_rate": float("nan"), "max_overhead": 0.1},
                {"min_hit_rate": 0.5, "max_overhead": -0.01}, {"min_hit_rate": 0.5, "max_overhead": None}):
    try:
        recommend_prefix_cache_run(_base, _cand, **_kwargs)
    except ValueError:
        pass
    else:
        raise AssertionError("门槛必须先校验：min_hit_rate 在 [0, 1] 内，max_overhead ≥ 0，None 或 NaN 都要 raise ValueError | check the thresholds first: min_hit_rate in [0, 1], max_overhead >= 0; None or NaN must raise ValueError")
try:
    recommend_prefix_cache_run({"hit_rate": 0.0, "ttft_ms": 120.0}, _cand, min_hit_rate=0.5, max_overhead=0.1)
except ValueError:
    pass
else:
    raise AssertionError("缺失的指标不能当成 0：recommend 也要拒绝缺 overhead 的 baseline | a missing metric is never 0: recommend must refuse a baseline without overhead too")
### END HIDDEN TESTS
'''


# --- the English edition ------------------------------------------------------------------------------------
# Each exercise's signature, docstring and TODO comment in English; the solution region below them is the same
# code in both editions (solution_source puts them together).

SIMULATE_EN = '''\
def simulate_prefix_cache(token_sequences: List[List[int]], block_size: int = 4, capacity_blocks: int = 8) -> Dict[str, object]:
    """Simulate a prefix cache that reuses full token blocks (vLLM v1 / SGLang LRU semantics); it does not measure
    real KV-cache memory or latency.

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
      it is pinned by the current request, its remaining blocks are not cached (no eviction, no eviction_count);
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
'''

SUMMARIZE_EN = '''\
def summarize_prefix_cache(runs: List[Dict[str, float]]) -> Dict[str, object]:
    """Summarise cache runs on one request distribution.

    Return run_count, avg_hit_rate, avg_ttft_ms (plain means) and best_hit_rate_run (the name of the run with the
    highest hit rate; on a tie, the first one). The rules (the one contract; grading checks only these):
    - runs must be a list, else raise TypeError; each item must be a dict, else raise ValueError;
    - an empty list gives the empty summary: run_count 0 and the other three fields None (no performance claim);
    - each run must have name, hit_rate and ttft_ms: a missing or None one raises ValueError; never read it
      silently as a measured 0; name may be any value but None (its type is not checked, nor whether it is empty);
    - hit_rate and ttft_ms must be numbers (int or float; a bool or a string is not), hit_rate in [0, 1] (both
      ends included) and ttft_ms >= 0, else raise ValueError; NaN is outside every range and raises ValueError;
      ttft_ms=float("inf") is accepted; other fields (overhead, for example) are not checked;
    - only runs of one workload and one hit-rate unit can be summarised: when the runs' workload_id or hit_rate_unit
      differ, raise ValueError; a missing field and an explicit None count as the same value. hit_rate_unit is
      "token", "block" or "request" (Step 3's three units), but the value itself is not checked: an unknown one is
      only compared with the others;
    - no argument is modified: the order of runs and every dict in it are the same after the call (no
      runs.sort(...); use max or sorted);
    - comparisons and means are plain Python arithmetic, without tolerance.
    """
    # TODO 1: compute run_count, avg_hit_rate, avg_ttft_ms, best_hit_rate_run.
    # run_count = ???; avg_hit_rate = ???; avg_ttft_ms = ???; best_hit_rate_run = ???.
    #         Never read a missing hit_rate or ttft_ms as a measured 0; an empty list gives the empty summary.
'''

COMPARE_EN = '''\
def compare_prefix_cache_to_baseline(baseline: Dict[str, float], candidate: Dict[str, float]) -> Dict[str, float]:
    """The change of hit rate, TTFT and overhead from baseline to candidate (always candidate − baseline).

    Return hit_rate_gain (larger is better), ttft_delta_ms and overhead_delta (smaller is better; negative means
    better), each a plain Python subtraction, not rounded, without tolerance. The rules (the one contract):
    - baseline and candidate must be dicts, else raise ValueError;
    - both must have hit_rate, ttft_ms and overhead, all numbers (int or float; a bool, a string or NaN is not); a
      missing, None or non-number one raises ValueError;
    - the ranges checked: hit_rate in [0, 1], ttft_ms >= 0, else raise ValueError; overhead only has to be a number
      (its range is not checked); ttft_ms or overhead of float("inf") is accepted;
    - when the two runs' workload_id or hit_rate_unit differ, raise ValueError (different workloads or units cannot
      be compared; as in summarize, values are only compared, not checked; a missing field and an explicit None
      count as the same value);
    - no argument is modified: baseline and candidate are the same after the call; name and other fields are not
      checked.
    The result serves a report's comparison; on its own it proves no real cache hit on a backend.
    """
    # TODO 2: compute hit_rate_gain, ttft_delta_ms, overhead_delta.
    # hit_rate_gain = ???; ttft_delta_ms = ???; overhead_delta = ???.
    #         Gains and deltas point in different directions; baseline and candidate must share a workload.
'''

RECOMMEND_EN = '''\
def recommend_prefix_cache_run(baseline: Dict[str, float], candidate: Dict[str, float], min_hit_rate: float, max_overhead: float) -> Dict[str, object]:
    """A teaching decision from hit rate, TTFT gain and maintenance overhead; return decision, reason, next_action.

    The rules (the one contract; Step 4's table agrees with it):
    - check the thresholds first, before baseline / candidate: min_hit_rate must be a number in [0, 1] and
      max_overhead a number >= 0 (float("inf") is allowed and means no limit; None, NaN, a bool or a string is not),
      else raise ValueError;
    - baseline / candidate are checked as in compare_prefix_cache_to_baseline (which gives the comparison);
    - the threshold applies to the gain hit_rate_gain = candidate − baseline, not to candidate's own hit_rate;
    - comparisons are plain float arithmetic, without tolerance: 0.7 − 0.2 = 0.49999999999999994 < 0.5, so a 0.5
      threshold is missed;
    - accept (next_action='promote_to_serving_eval'): hit_rate_gain >= min_hit_rate, ttft_delta_ms < 0 and
      overhead_delta <= max_overhead (meeting a threshold exactly passes);
    - tune ('refine_chunk_or_eviction_policy'): hit_rate_gain >= min_hit_rate and ttft_delta_ms < 0, but
      overhead_delta > max_overhead;
    - reject ('fallback_to_no_cache'): everything else: a gain below the threshold (even with a faster TTFT), or no
      faster TTFT (ttft_delta_ms >= 0, even with the hit rate passing);
    - reason is any non-empty string (its text is not graded); the returned dict may carry extra keys;
    - no argument is modified: baseline and candidate are the same after the call.
    min_hit_rate and max_overhead are this workload's thresholds, not universal constants; this function does not
    replace validation on a real backend.
    """
    # TODO 3: get the comparison first, then decide with min_hit_rate and max_overhead:
    # hit_rate_ok = ???; overhead_ok = ???; decision = ???; next_action = ???.
    #         accept / tune / reject, with reason and next_action.
    #         A hit rate below the threshold is never accepted for a faster TTFT alone; check the thresholds first.
'''


def solution_source(name: str, lang: str = "zh") -> str:
    """The exercise cell ``name`` (SIMULATE, SUMMARIZE, COMPARE, RECOMMEND) in one edition: the edition's head
    (signature, docstring, TODO comment), then the shared ``### BEGIN SOLUTION`` region."""
    source = globals()[name]
    if lang == "zh":
        return source
    head = globals()[f"{name}_{lang.upper()}"]
    region = source[source.index("    ### BEGIN SOLUTION"):]
    if head.split("\n", 1)[0] != source.split("\n", 1)[0]:
        raise ValueError(f"{name}: the {lang} edition's signature differs from the Chinese one")
    return head + region
