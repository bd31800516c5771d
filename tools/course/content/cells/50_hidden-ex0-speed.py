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
