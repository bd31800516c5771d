"""The visible probes: the cases the notebook's self-check runs and may show, in exercise order.

Data only; how each kind of probe checks is in simulate_probes.py and decision_probes.py. This file ships to
students (the student distribution); the hidden probes live in hidden_probes.py, which does not.
"""

from __future__ import annotations

from .catalogue import COMPARISON_KEYS, DECIDED_KEYS, SUMMARY_KEYS
from .decision_probes import accepts_or_tunes, decision_probe, flipped_signs, value_error_probe, value_probe
from .probing import Probe
from .simulate_probes import (
    EVICTION_TIMING,
    caches_or_reuses_more,
    invalid_sizes_probe,
    random_probe,
    reuses_less,
    reuses_more,
    sim_probe,
    timing_probe,
)


def h(zh: str, en: str) -> tuple[str, str]:
    return zh, en


A, B, C, D, E, F = [1, 1], [2, 2], [3, 3], [4, 4], [5, 5], [6, 6]
ABCD = A + B + C + D
BASE = {"name": "cache_off", "hit_rate": 0.0, "ttft_ms": 130.0, "overhead": 0.0}
CAND = {"name": "prefix_cache", "hit_rate": 0.75, "ttft_ms": 90.0, "overhead": 0.05}

VISIBLE_PROBES: tuple[Probe, ...] = (
    sim_probe("simulate.smoke", "visible", ([[1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 9, 10]], 2, 8),
              hint=h("从 block 0 开始找最长的已缓存前缀，并核对每个返回字段的算法。",
                      "Find the longest cached prefix from block 0, and check how each returned field is computed.")),
    sim_probe("simulate.seed_example", "visible",
              ([[1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 9, 10], [20, 21, 22, 23, 24, 25, 26, 27]], 2, 4),
              hint=h("容量不足时的 LRU 驱逐：eviction_count 和 cache_size_blocks。",
                      "LRU eviction once the cache is full: eviction_count and cache_size_blocks.")),
    sim_probe("simulate.partial_tail", "visible", ([[1, 2, 3, 4, 5], [1, 2, 3, 4, 5]], 2, 8),
              targets="partial_block_counted", symptom=caches_or_reuses_more,
              control=([[1, 2, 3, 4], [1, 2, 3, 4]], 2, 8),
              hint=h("尾部不足一个 block 的 token 不缓存、不命中。",
                      "Tokens of a trailing partial block are neither cached nor hit.")),
    sim_probe("simulate.same_block_after_other_prefix", "visible", ([A + B, C + D, A + D], 2, 16),
              targets="position_keys", symptom=reuses_more, control=([A + B, C + E, A + D], 2, 16),
              hint=h("同样的 token 出现在不同前缀之后，是不同的 block。",
                      "The same tokens after a different prefix are a different block.")),
    sim_probe("simulate.later_block_after_miss", "visible", ([A + B, C + B], 2, 16),
              targets="no_stop_at_first_miss", symptom=reuses_more, control=([A + B, C + D], 2, 16),
              hint=h("第一个未命中之后的 block 不能算命中。", "No block after the first miss counts as a hit.")),
    sim_probe("simulate.deepest_block_evicted_first", "visible", ([ABCD, E + F, ABCD], 2, 4),
              targets="head_first_eviction", symptom=reuses_less, control=([ABCD, E + F, ABCD], 2, 6),
              hint=h("同样新的 block 中先驱逐最深的（尾部），保留还能被查到的头部。",
                      "Among equally recent blocks evict the deepest (the tail) and keep the reachable head.")),
    invalid_sizes_probe("simulate.invalid_sizes", "visible",
                        ({"block_size": 0, "capacity_blocks": 8}, {"block_size": 4, "capacity_blocks": 0},
                         {"block_size": -2, "capacity_blocks": 8}),
                        h("block_size 或 capacity_blocks <= 0 时要 raise ValueError。",
                           "block_size or capacity_blocks <= 0 must raise ValueError.")),
    timing_probe("simulate.eviction_cost_vs_capacity", "visible",
                 h("每次驱逐、查找和更新都应是 O(1)。", "Every eviction, lookup and update should be O(1)."),
                 **EVICTION_TIMING),
    random_probe("simulate.random_small", "visible", 69, 150, (3, 10, 5, 3, 8),
                 h("拿这个最小反例手算一遍，逐个请求打印缓存内容和驱逐顺序。",
                    "Trace this smallest case by hand: print the cache and the eviction order after each request.")),
    value_probe("summarize.basic", "summarize_prefix_cache", "visible",
                ([{"name": "cache_off", "hit_rate": 0.0, "ttft_ms": 130.0},
                  {"name": "prefix_cache", "hit_rate": 0.5, "ttft_ms": 90.0}],), SUMMARY_KEYS,
                h("run_count、两个平均值和命中率最高的 run 的 name。",
                   "run_count, the two means and the name of the run with the highest hit rate.")),
    value_probe("summarize.empty", "summarize_prefix_cache", "visible", ([],), SUMMARY_KEYS,
                h("空列表：run_count 为 0，其余字段为 None。", "Empty list: run_count 0, the other fields None."),
                targets="missing_metric_as_zero",
                symptom=lambda got, want: any(got.get(k) == 0 for k in ("avg_hit_rate", "avg_ttft_ms"))),
    value_error_probe("summarize.missing_hit_rate", "summarize_prefix_cache", "visible",
                      ([{"name": "a", "hit_rate": 0.5, "ttft_ms": 100.0}, {"name": "b", "ttft_ms": 80.0}],),
                      ([{"name": "a", "hit_rate": 0.5, "ttft_ms": 100.0},
                        {"name": "b", "hit_rate": 0.25, "ttft_ms": 80.0}],),
                      "missing_metric_as_zero", SUMMARY_KEYS,
                      h("缺失的 hit_rate 要 raise ValueError。", "A missing hit_rate must raise ValueError.")),
    value_probe("compare.signs", "compare_prefix_cache_to_baseline", "visible",
                (BASE, {"name": "prefix_cache", "hit_rate": 0.5, "ttft_ms": 100.0, "overhead": 0.25}),
                COMPARISON_KEYS, h("三个差值都是 candidate − baseline。",
                                    "All three deltas are candidate − baseline."),
                targets="wrong_delta_sign", symptom=flipped_signs),
    value_error_probe("compare.missing_overhead", "compare_prefix_cache_to_baseline", "visible",
                      ({"name": "cache_off", "hit_rate": 0.0, "ttft_ms": 130.0},
                       {"name": "prefix_cache", "hit_rate": 0.5, "ttft_ms": 100.0, "overhead": 0.25}),
                      (BASE, {"name": "prefix_cache", "hit_rate": 0.5, "ttft_ms": 100.0, "overhead": 0.25}),
                      "missing_metric_as_zero", COMPARISON_KEYS,
                      h("缺失的 overhead 要 raise ValueError。", "A missing overhead must raise ValueError.")),
    decision_probe("recommend.accept", "visible",
                   (BASE, CAND, 0.5, 0.1),
                   h("三项都达标时 accept，next_action 为 promote_to_serving_eval；TTFT 变快即 ttft_delta_ms < 0。",
                      "All three pass: accept with next_action promote_to_serving_eval; faster TTFT means "
                      "ttft_delta_ms < 0.")),
    decision_probe("recommend.tune", "visible",
                   (BASE, dict(CAND, overhead=0.5), 0.5, 0.1),
                   h("命中率和 TTFT 达标、开销超限时 tune。",
                      "Hit rate and TTFT pass but the overhead is over its limit: tune.")),
    decision_probe("recommend.low_hit_rate_but_faster", "visible",
                   (BASE, {"name": "prefix_cache", "hit_rate": 0.25, "ttft_ms": 60.0, "overhead": 0.0}, 0.5, 0.1),
                   h("命中率增益未达门槛时 reject，哪怕 TTFT 变快。",
                      "A hit-rate gain below the threshold is reject, even with a faster TTFT."),
                   targets="ttft_only_accept", symptom=accepts_or_tunes,
                   control=(BASE, {"name": "prefix_cache", "hit_rate": 0.75, "ttft_ms": 150.0, "overhead": 0.0},
                            0.5, 0.1)),
    value_error_probe("recommend.threshold_out_of_range", "recommend_prefix_cache_run", "visible",
                      (BASE, {"name": "prefix_cache", "hit_rate": 0.75, "ttft_ms": 90.0, "overhead": 0.05}, 1.5, 0.1),
                      (BASE, CAND, 0.5, 0.1),
                      "unchecked_thresholds", DECIDED_KEYS,
                      h("min_hit_rate 超出 [0, 1] 要 raise ValueError。",
                         "min_hit_rate outside [0, 1] must raise ValueError.")),
)
