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
