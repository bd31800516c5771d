"""The hidden probes: grading only. They may shape a graded diagnosis, but their inputs and expected values never
appear in it, and this file never leaves the course repository (the student distribution holds no copy:
``python -m tools.course.release --check`` fails if any of its text reaches it).
"""

from __future__ import annotations

from .catalogue import COMPARISON_KEYS, DECIDED_KEYS, SUMMARY_KEYS
from .decision_probes import accepts_or_tunes, decision_probe, flipped_signs, value_error_probe, value_probe
from .probing import Probe
from .simulate_probes import caches_or_reuses_more, invalid_sizes_probe, random_probe, reuses_less, reuses_more, sim_probe
from .visible_probes import A, B, C, D, E, h

_P, _Q, _R, _S, _T = [11, 12, 13], [14, 15, 16], [17, 18, 19], [13, 12, 11], [20, 21, 22]
_HIDDEN_BASE = {"name": "off", "hit_rate": 0.25, "ttft_ms": 120.0, "overhead": 0.0}
_HIDDEN_GOOD = {"name": "on", "hit_rate": 0.875, "ttft_ms": 80.0, "overhead": 0.0}
_RANGE_HINT = h("门槛的取值范围。", "The allowed range of each threshold.")
_NOT_A_NUMBER_HINT = h("门槛不是数时也要 raise ValueError。", "A threshold that is not a number must raise ValueError too.")

HIDDEN_PROBES: tuple[Probe, ...] = (
    sim_probe("simulate.hidden.partial_tail", "hidden",
              ([[5, 6, 7, 8, 9], [5, 6, 7, 8, 9], [5, 6, 7, 8, 9, 10]], 3, 8),
              targets="partial_block_counted", symptom=caches_or_reuses_more,
              control=([[5, 6, 7], [5, 6, 7], [5, 6, 7, 8, 9, 10]], 3, 8),
              hint=h("只缓存、只命中完整 block。", "Only full blocks are cached and hit.")),
    sim_probe("simulate.hidden.same_block_after_other_prefix", "hidden", ([_P + _Q, _S + _R, _P + _R + _Q], 3, 16),
              targets="position_keys", symptom=reuses_more, control=([_P + _Q, _S + _R, _P + _Q + _R], 3, 16),
              hint=h("block 的 key 要代表整个前缀。", "A block's key must name its whole prefix.")),
    sim_probe("simulate.hidden.later_block_after_miss", "hidden", ([_P + _Q + _R, _S + _Q + _R], 3, 16),
              targets="no_stop_at_first_miss", symptom=reuses_more,
              control=([_P + _Q + _R, _S + _R + _Q], 3, 16),
              hint=h("查找在第一个未命中处停止。", "Lookup stops at the first miss.")),
    sim_probe("simulate.hidden.deepest_block_evicted_first", "hidden", ([_P + _Q + _R, _S + _T, _P + _Q + _R], 3, 3),
              targets="head_first_eviction", symptom=reuses_less,
              control=([_P + _Q + _R, _S + _T, _P + _Q + _R], 3, 5),
              hint=h("驱逐顺序：尾部先于头部。", "Eviction order: tail before head.")),
    sim_probe("simulate.hidden.pinned_request", "hidden", ([A + B + C + D + E, A + B + C + D + E], 2, 3),
              hint=h("运行中的请求用到的 block 不能被驱逐；缓存全被它 pin 住时，剩下的 block 不缓存。",
                      "A running request's blocks cannot be evicted; when it pins the whole cache, its remaining "
                      "blocks are not cached.")),
    sim_probe("simulate.hidden.hit_refreshes_recency", "hidden", ([A, B, A, C, A], 2, 2),
              hint=h("命中的 block 也要变成最近使用。", "A block that hits becomes most recently used too.")),
    sim_probe("simulate.hidden.lru_across_requests", "hidden", ([A + B, C + D, E, A + B, C + D], 2, 4),
              hint=h("最久未用的请求先被驱逐，同一请求内尾部先走。",
                      "The least recently used request goes first, and within a request its tail goes first.")),
    sim_probe("simulate.hidden.repeated_tokens", "hidden", ([[9] * 8, [9] * 8, [9] * 6], 2, 16),
              hint=h("内容相同但深度不同的 block 是不同的 block。",
                      "Blocks with equal tokens at different depths are different blocks.")),
    invalid_sizes_probe("simulate.hidden.invalid_sizes", "hidden",
                        ({"block_size": 4, "capacity_blocks": -3}, {"block_size": 0, "capacity_blocks": 0}),
                        h("非正的 block_size / capacity_blocks 要 raise ValueError。",
                           "Non-positive block_size / capacity_blocks must raise ValueError.")),
    random_probe("simulate.hidden.random", "hidden", 2025, 300, (4, 24, 12, 5, 20),
                 h("在随机 workload 上与参考实现不一致；先运行 Step 6 的“对照参考库”单元格，找到最小反例。",
                    "Differs from the reference on random workloads; Step 6's check against the library prints "
                    "a small counterexample.")),
    value_error_probe("summarize.hidden.none_ttft", "summarize_prefix_cache", "hidden",
                      ([{"name": "x", "hit_rate": 0.75, "ttft_ms": None}],),
                      ([{"name": "x", "hit_rate": 0.75, "ttft_ms": 70.0}],),
                      "missing_metric_as_zero", SUMMARY_KEYS,
                      h("为 None 的指标要 raise ValueError。", "A None metric must raise ValueError.")),
    value_probe("summarize.hidden.ties", "summarize_prefix_cache", "hidden",
                ([{"name": "p", "hit_rate": 0.125, "ttft_ms": 100.0},
                  {"name": "q", "hit_rate": 0.625, "ttft_ms": 80.0},
                  {"name": "r", "hit_rate": 0.625, "ttft_ms": 96.0}],), SUMMARY_KEYS,
                h("命中率并列时取先出现的 run；平均值除以 run 数。",
                   "On a hit-rate tie the first run wins; means divide by the number of runs.")),
    value_probe("summarize.hidden.single_run", "summarize_prefix_cache", "hidden",
                ([{"name": "solo", "hit_rate": 0.375, "ttft_ms": 42.0}],), SUMMARY_KEYS,
                h("只有一个 run 时的摘要。", "The summary of a single run.")),
    value_probe("compare.hidden.getting_worse", "compare_prefix_cache_to_baseline", "hidden",
                ({"name": "on", "hit_rate": 0.625, "ttft_ms": 95.0, "overhead": 0.375},
                 {"name": "off", "hit_rate": 0.125, "ttft_ms": 120.0, "overhead": 0.25}),
                COMPARISON_KEYS, h("变差时增益为负、差值为正。",
                                    "When things get worse the gain is negative and the deltas positive."),
                targets="wrong_delta_sign", symptom=flipped_signs),
    value_error_probe("compare.hidden.none_ttft", "compare_prefix_cache_to_baseline", "hidden",
                      ({"name": "off", "hit_rate": 0.125, "ttft_ms": 120.0, "overhead": 0.25},
                       {"name": "on", "hit_rate": 0.625, "ttft_ms": None, "overhead": 0.375}),
                      ({"name": "off", "hit_rate": 0.125, "ttft_ms": 120.0, "overhead": 0.25},
                       {"name": "on", "hit_rate": 0.625, "ttft_ms": 95.0, "overhead": 0.375}),
                      "missing_metric_as_zero", COMPARISON_KEYS,
                      h("为 None 的指标要 raise ValueError。", "A None metric must raise ValueError.")),
    value_error_probe("compare.hidden.none_hit_rate", "compare_prefix_cache_to_baseline", "hidden",
                      ({"name": "off", "hit_rate": None, "ttft_ms": 120.0, "overhead": 0.25},
                       {"name": "on", "hit_rate": 0.625, "ttft_ms": 95.0, "overhead": 0.375}),
                      ({"name": "off", "hit_rate": 0.125, "ttft_ms": 120.0, "overhead": 0.25},
                       {"name": "on", "hit_rate": 0.625, "ttft_ms": 95.0, "overhead": 0.375}),
                      "missing_metric_as_zero", COMPARISON_KEYS,
                      h("为 None 的指标要 raise ValueError。", "A None metric must raise ValueError.")),
    decision_probe("recommend.hidden.low_hit_rate_costly", "hidden",
                   (_HIDDEN_BASE, {"name": "on", "hit_rate": 0.5, "ttft_ms": 40.0, "overhead": 0.5}, 0.5, 0.125),
                   h("命中率不达标时是 reject，不是 tune。", "A hit rate below the threshold is reject, not tune."),
                   targets="ttft_only_accept", symptom=accepts_or_tunes,
                   control=(_HIDDEN_BASE, {"name": "on", "hit_rate": 0.875, "ttft_ms": 120.0, "overhead": 0.0},
                            0.5, 0.125)),
    value_error_probe("recommend.hidden.negative_min_hit_rate", "recommend_prefix_cache_run", "hidden",
                      (_HIDDEN_BASE, _HIDDEN_GOOD, -0.25, 0.125), (_HIDDEN_BASE, _HIDDEN_GOOD, 0.25, 0.125),
                      "unchecked_thresholds", DECIDED_KEYS, _RANGE_HINT),
    value_error_probe("recommend.hidden.negative_max_overhead", "recommend_prefix_cache_run", "hidden",
                      (_HIDDEN_BASE, _HIDDEN_GOOD, 0.25, -0.01), (_HIDDEN_BASE, _HIDDEN_GOOD, 0.25, 0.01),
                      "unchecked_thresholds", DECIDED_KEYS, _RANGE_HINT),
    value_error_probe("recommend.hidden.none_threshold", "recommend_prefix_cache_run", "hidden",
                      (_HIDDEN_BASE, _HIDDEN_GOOD, None, 0.125), (_HIDDEN_BASE, _HIDDEN_GOOD, 0.375, 0.125),
                      "unchecked_thresholds", DECIDED_KEYS, _NOT_A_NUMBER_HINT),
    value_error_probe("recommend.hidden.nan_threshold", "recommend_prefix_cache_run", "hidden",
                      (_HIDDEN_BASE, _HIDDEN_GOOD, float("nan"), 0.125), (_HIDDEN_BASE, _HIDDEN_GOOD, 0.625, 0.125),
                      "unchecked_thresholds", DECIDED_KEYS, _NOT_A_NUMBER_HINT),
    decision_probe("recommend.hidden.boundaries", "hidden",
                   (_HIDDEN_BASE, {"name": "on", "hit_rate": 0.75, "ttft_ms": 80.0, "overhead": 0.125}, 0.5, 0.125),
                   h("恰好等于门槛也算达标（>= 与 <=）。", "Meeting a threshold exactly passes (>= and <=).")),
    decision_probe("recommend.hidden.no_ttft_gain", "hidden",
                   (_HIDDEN_BASE, {"name": "on", "hit_rate": 0.875, "ttft_ms": 120.0, "overhead": 0.0}, 0.5, 0.125),
                   h("TTFT 没有变快（差值不小于 0）时 reject。", "No TTFT gain (delta not below 0) is reject.")),
    decision_probe("recommend.hidden.zero_min_hit_rate", "hidden",
                   (_HIDDEN_BASE, {"name": "on", "hit_rate": 0.3125, "ttft_ms": 100.0, "overhead": 0.0}, 0.0, 0.125),
                   h("门槛为 0 时，有 TTFT 收益即可 accept。", "With a zero threshold a TTFT gain is enough to accept.")),
)
