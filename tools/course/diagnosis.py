"""Feedback that names the mistake: probe a student's chapter-69 functions and say which known mistake they make.

A failing assert says *that* an answer is wrong; this module says *which* of the course's known mistakes it
most likely is, and what to look at, in Simplified Chinese and English.

How a mistake is told apart from the others: each targeted probe is a small case on which exactly one known
mistake changes the answer, in a known direction (the *symptom*), paired with a *control* case that differs
only in the detail the mistake trips over. A probe is blamed on its mistake only when it fails with the
symptom and its control passes; every other failure is reported as ``other`` with the probe's hint. A named
mistake, once found, hides ``other`` for the same exercise (the general failures are usually its echo).

Probes are ``visible`` (the notebook's self-check runs them and may show their inputs) or ``hidden`` (grading
only: they may shape the message, but their inputs and expected values never appear in it).

Student-side code: standard library only. The simulator oracle (``tools.prefixbench``, also stdlib-only) is
imported on first use. Student functions run with a time limit (SIGALRM in the main thread, else a daemon
thread), their prints swallowed, and any exception caught, ``SystemExit`` included.

    self_check(globals())                       # notebook: visible probes, prints zh + en, returns findings
    diagnose(functions, {"visible", "hidden"})  # grading: list[Finding]
    feedback_text(findings)                     # grading: text safe to hand back
"""

from __future__ import annotations

import contextlib
import copy
import gc
import io
import math
import numbers
import random
import signal
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterable, Mapping

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


# ============================================================================================ the catalogue

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
                  "o_capacity_eviction", "missing_metric_as_zero", "wrong_delta_sign", "ttft_only_accept",
                  "unchecked_thresholds")
"""The mistakes the course names; the other catalogue codes say a function is missing, unfinished or crashing."""


# ============================================================================================ guarded calls

class _Deadline(BaseException):
    """Raised into student code by the alarm; a BaseException, so `except Exception` in student code cannot
    swallow it."""


@dataclass
class Outcome:
    value: Any = None
    error: BaseException | None = None
    timed_out: bool = False
    cpu_s: float = 0.0
    """CPU time of the call's own thread: unlike wall time, not inflated when other processes take the CPU."""
    raised_in_function: bool = False
    """The exception came from the function's own body, not from a helper it called."""


def _raised_in(fn: Callable, exc: BaseException) -> bool:
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code is getattr(fn, "__code__", None)


def _timed(fn: Callable, args: tuple, kwargs: dict, box: Outcome) -> None:
    start = time.thread_time()
    try:
        box.value = fn(*args, **kwargs)
    finally:
        box.cpu_s = time.thread_time() - start


def _swallowing_prints():
    """Student prints would bury the diagnosis; the redirect is process-wide, so always enter it in the
    caller's thread (an abandoned worker thread would never leave it)."""
    stack = contextlib.ExitStack()
    stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
    stack.enter_context(contextlib.redirect_stderr(io.StringIO()))
    return stack


def _call_with_alarm(fn: Callable, args: tuple, kwargs: dict, timeout_s: float) -> Outcome:
    box = Outcome()
    armed = True

    def on_alarm(signum, frame):
        if armed:
            raise _Deadline()

    previous_handler = signal.signal(signal.SIGALRM, on_alarm)
    previous_timer = (0.0, 0.0)
    started = time.monotonic()
    try:
        with _swallowing_prints():  # entered before the timer starts, left after it stops
            try:
                # The timer re-fires every 50 ms until disarmed: a loop that catches one alarm meets the next.
                previous_timer = signal.setitimer(signal.ITIMER_REAL, timeout_s, 0.05)
                _timed(fn, args, kwargs, box)
            finally:
                armed = False
                signal.setitimer(signal.ITIMER_REAL, 0)
    except _Deadline:
        box.timed_out = True
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - SystemExit and friends from student code are findings
        box.error, box.raised_in_function = exc, _raised_in(fn, exc)
    finally:
        signal.signal(signal.SIGALRM, previous_handler)
        if previous_timer[0] > 0:  # give an outer timer (a grader's own) its remaining time back
            left = max(previous_timer[0] - (time.monotonic() - started), 1e-3)
            signal.setitimer(signal.ITIMER_REAL, left, previous_timer[1])
    return box


def _call_in_thread(fn: Callable, args: tuple, kwargs: dict, timeout_s: float) -> Outcome:
    """Fallback off the main thread or without SIGALRM: a runaway call is abandoned in a daemon thread."""
    box = Outcome()

    def target():
        try:
            _timed(fn, args, kwargs, box)
        except BaseException as exc:  # noqa: BLE001
            box.error, box.raised_in_function = exc, _raised_in(fn, exc)

    worker = threading.Thread(target=target, name="diagnosis-probe", daemon=True)
    with _swallowing_prints():
        worker.start()
        worker.join(timeout_s)
    if worker.is_alive():
        return Outcome(timed_out=True)
    return box


def call_guarded(fn: Callable, args: tuple = (), kwargs: Mapping | None = None,
                 timeout_s: float = DEFAULT_CALL_TIMEOUT_S) -> Outcome:
    """Call student code without letting it hang, exit or print over the diagnosis."""
    kwargs = dict(kwargs or {})
    if hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread():
        return _call_with_alarm(fn, args, kwargs, timeout_s)
    return _call_in_thread(fn, args, kwargs, timeout_s)


# ============================================================================================ probes

@dataclass(frozen=True)
class Failure:
    code: str
    detail: str = ""
    """May quote the probe's inputs and expected values: shown for visible probes only."""
    note: str = ""
    """Safe for any probe (an exception type, missing key names, a time limit): fills the message's {note}."""


class _Stop(Exception):
    """A call gave no usable result (not implemented, timed out, crashed): ends the probe with ``failure``."""

    def __init__(self, failure: Failure):
        super().__init__(failure.code)
        self.failure = failure


def _call_text(name: str, args: tuple, kwargs: Mapping, limit: int = 220) -> str:
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    text = f"{name}({', '.join(parts)})"
    return text if len(text) <= limit else text[:limit - 4] + " ...)"


class Runner:
    """One student function, its time limits, and the ways a probe may call it."""

    def __init__(self, name: str, fn: Callable, call_timeout_s: float, budget_s: float = EXERCISE_BUDGET_S):
        self.name, self.fn, self.call_timeout_s = name, fn, call_timeout_s
        self.deadline = time.monotonic() + budget_s

    def call(self, *args, _timeout_s: float | None = None, _copy: bool = True, **kwargs) -> Outcome:
        if _copy:  # student code may mutate its inputs; probes reuse theirs
            args, kwargs = copy.deepcopy((args, kwargs))
        limit = min(_timeout_s or self.call_timeout_s, max(self.deadline - time.monotonic(), 0.0))
        if limit <= 0:
            return Outcome(timed_out=True)
        return call_guarded(self.fn, args, kwargs, limit)

    def stop_failure(self, outcome: Outcome, args: tuple, kwargs: Mapping) -> Failure | None:
        """The finding for a call that gave no result, or None when it returned normally."""
        where = _call_text(self.name, args, kwargs)
        if outcome.timed_out:
            return Failure("timed_out", f"{where} did not return", f"{self.call_timeout_s:g} s")
        if outcome.error is None:
            return None
        kind = type(outcome.error).__name__
        if isinstance(outcome.error, NotImplementedError) and outcome.raised_in_function:
            return Failure("not_implemented")  # the call itself adds nothing: every call raises
        return Failure("raised_exception", f"{where} raised {kind}: {outcome.error}", kind)

    def result(self, *args, keys: Iterable[str] = (), **kwargs) -> Mapping:
        """The call's dict result; anything else ends the probe (``_Stop``)."""
        outcome = self.call(*args, **kwargs)
        failure = self.stop_failure(outcome, args, kwargs)
        if failure:
            raise _Stop(failure)
        value = outcome.value
        if not isinstance(value, Mapping):
            raise _Stop(Failure("missing_keys", f"{_call_text(self.name, args, kwargs)} returned "
                                                f"{type(value).__name__}", f"got {type(value).__name__}"))
        missing = [key for key in keys if key not in value]
        if missing:
            raise _Stop(Failure("missing_keys", f"{_call_text(self.name, args, kwargs)} lacks {missing}",
                                f"missing {missing}"))
        return value

    def raises_value_error(self, *args, **kwargs) -> tuple[bool, str]:
        """(True, "") when the call raises ValueError; else (False, what it did instead)."""
        outcome = self.call(*args, **kwargs)
        if outcome.timed_out or (isinstance(outcome.error, NotImplementedError) and outcome.raised_in_function):
            raise _Stop(self.stop_failure(outcome, args, kwargs))
        if isinstance(outcome.error, ValueError):
            return True, ""
        did = "returned normally" if outcome.error is None else f"raised {type(outcome.error).__name__}"
        return False, f"{_call_text(self.name, args, kwargs)} {did}, expected ValueError"


@dataclass(frozen=True)
class Probe:
    id: str
    exercise: str
    visibility: str
    targets: str
    """The mistake this probe exists to reveal ('other' for a general check)."""
    hint_zh: str
    hint_en: str
    inputs: tuple
    """Every (args, kwargs) the probe may pass, for audits (the hidden-leak test); generated cases excluded."""
    check: Callable[[Runner], Failure | None]


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _same_value(got: Any, want: Any) -> bool:
    """Equal, floats within rounding; never raises whatever the student returned (numpy arrays included)."""
    if want is None or got is None:
        return got is want
    try:
        if _is_number(want):
            return _is_number(got) and math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12)
        return bool(got == want)
    except Exception:  # noqa: BLE001 - an odd value is simply not equal
        return False


def _diffs(got: Mapping, want: Mapping, keys: Iterable[str]) -> list[str]:
    return [f"{key} expected {want[key]!r}, got {got.get(key)!r}" for key in keys
            if not _same_value(got.get(key), want[key])]


def _mismatch_detail(call: str, diffs: list[str]) -> str:
    return f"{call}: {'; '.join(diffs[:2])}"


# --- simulate_prefix_cache ------------------------------------------------------------------------------

def _oracle_simulate(seqs, block_size, capacity_blocks) -> dict:
    from tools.prefixbench import simulate_prefix_cache

    return simulate_prefix_cache(seqs, block_size, capacity_blocks, policy="lru")


def _sim_failure(run: Runner, seqs, block_size, capacity_blocks) -> tuple[Failure | None, Mapping, Mapping]:
    kwargs = {"block_size": block_size, "capacity_blocks": capacity_blocks}
    got = run.result(seqs, keys=SIMULATE_KEYS, **kwargs)
    want = _oracle_simulate(seqs, block_size, capacity_blocks)
    diffs = _diffs(got, want, SIMULATE_KEYS)
    if not diffs:
        return None, got, want
    return Failure("other", _mismatch_detail(_call_text(run.name, (seqs,), kwargs), diffs)), got, want


def _sim_probe(probe_id, visibility, case, *, hint, targets="other", symptom=None, control=None) -> Probe:
    """``case`` and ``control`` are (token_sequences, block_size, capacity_blocks)."""

    def check(run: Runner) -> Failure | None:
        failure, got, want = _sim_failure(run, *case)
        if failure is None or targets == "other" or not symptom(got, want):
            return failure
        if control is not None and _sim_failure(run, *control)[0] is not None:
            return failure
        return Failure(targets, failure.detail)

    cases = [case] + ([control] if control else [])
    inputs = tuple(((seqs,), {"block_size": bs, "capacity_blocks": cap}) for seqs, bs, cap in cases)
    return Probe(probe_id, "simulate_prefix_cache", visibility, targets, *hint, inputs, check)


def _reuses_more(got, want) -> bool:
    return got["reused_tokens"] > want["reused_tokens"]


def _caches_or_reuses_more(got, want) -> bool:
    return _reuses_more(got, want) or got["cache_size_blocks"] > want["cache_size_blocks"]


def _reuses_less(got, want) -> bool:
    return got["reused_tokens"] < want["reused_tokens"]


def _invalid_sizes_probe(probe_id, visibility, variants, hint) -> Probe:
    def check(run: Runner) -> Failure | None:
        for kwargs in variants:
            ok, did = run.raises_value_error([[1, 2, 3, 4]], **kwargs)
            if not ok:
                return Failure("other", did)
        return None

    inputs = tuple((([[1, 2, 3, 4]],), kwargs) for kwargs in variants)
    return Probe(probe_id, "simulate_prefix_cache", visibility, "other", *hint, inputs, check)


def _random_cases(seed: int, count: int, vocab: int, length: int, requests: int, block: int, capacity: int):
    rng = random.Random(seed)
    for _ in range(count):
        v = rng.randint(1, vocab)
        seqs = [[rng.randrange(v) for _ in range(rng.randint(1, length))] for _ in range(rng.randint(1, requests))]
        yield seqs, rng.randint(1, block), rng.randint(1, capacity)


def _smaller(case):
    """Cases one step simpler than ``case``: a request fewer, a token fewer, a smaller block or cache."""
    seqs, block_size, capacity = case
    for i in range(len(seqs)):
        if len(seqs) > 1:
            yield seqs[:i] + seqs[i + 1:], block_size, capacity
    for i, tokens in enumerate(seqs):
        if len(tokens) > 1:
            yield seqs[:i] + [tokens[:-1]] + seqs[i + 1:], block_size, capacity
    if capacity > 1:
        yield seqs, block_size, capacity - 1
    if block_size > 1:
        yield seqs, block_size - 1, capacity


def _random_probe(probe_id, visibility, seed, count, sizes, hint, shrink_budget=200) -> Probe:
    """Agreement with the oracle on seeded random workloads; the first disagreement is shrunk to a small
    counterexample the student can trace by hand."""

    def failure_for(run, case):
        try:
            return _sim_failure(run, *case)[0]
        except _Stop as stop:
            if stop.failure.code in ("timed_out", "not_implemented"):
                raise
            return stop.failure

    def check(run: Runner) -> Failure | None:
        for case in _random_cases(seed, count, *sizes):
            failure = failure_for(run, case)
            if failure is None:
                continue
            budget, improved = shrink_budget, True
            while improved and budget > 0:
                improved = False
                for smaller in _smaller(case):
                    budget -= 1
                    smaller_failure = failure_for(run, smaller)
                    if smaller_failure is not None:
                        case, failure, improved = smaller, smaller_failure, True
                        break
                    if budget <= 0:
                        break
            if failure.code == "other":
                return Failure("other", "smallest case found: " + failure.detail)
            return failure
        return None

    return Probe(probe_id, "simulate_prefix_cache", visibility, "other", *hint, (), check)


EVICTION_TIMING = {"capacity": 128, "growth": 8, "evicting_blocks": 4000, "block_size": 4, "blocks_per_request": 4}
O_CAPACITY_RATIO = 3.0
"""Run time at 8x the capacity over run time at 1x, same evictions. Measured on a 2-core machine: O(1) about
1.1-1.3, a scan per eviction about 5-7; 3 leaves room for noise either way."""


def _eviction_workload(capacity: int, evicting_blocks: int, block_size: int, blocks_per_request: int):
    """Distinct requests (no hits): the first ``capacity`` blocks fill the cache, each later block evicts
    one, so every capacity gets the same ``evicting_blocks`` evictions."""
    tokens = block_size * blocks_per_request
    count = (capacity + evicting_blocks) // blocks_per_request
    return [list(range(i * tokens, (i + 1) * tokens)) for i in range(count)]


def _timing_probe(probe_id, visibility, hint, *, capacity, growth, evicting_blocks, block_size,
                  blocks_per_request) -> Probe:
    """O(1) vs O(capacity) eviction: time the same number of evictions at two capacities, side by side."""
    big_capacity = capacity * growth

    def cpu_seconds(run: Runner, cap: int, limit: float) -> float | None:
        """CPU time of one run at capacity ``cap``; None when it ran past ``limit``."""
        seqs = _eviction_workload(cap, evicting_blocks, block_size, blocks_per_request)  # fresh, so no copy
        kwargs = {"block_size": block_size, "capacity_blocks": cap}
        outcome = run.call(seqs, _timeout_s=limit, _copy=False, **kwargs)
        if outcome.error is not None:
            raise _Stop(run.stop_failure(outcome, (f"<{len(seqs)} distinct requests>",), kwargs))
        return None if outcome.timed_out else outcome.cpu_s

    def check(run: Runner) -> Failure | None:
        limit = 2 * run.call_timeout_s

        def small_run() -> float:
            seconds = cpu_seconds(run, capacity, limit)
            if seconds is None:
                raise _Stop(Failure("timed_out", f"{evicting_blocks} evictions at capacity {capacity} took "
                                                 f"over {limit:g} s", f"{limit:g} s"))
            return seconds

        gc_was_enabled = gc.isenabled()
        gc.collect()
        gc.disable()
        try:
            small, big = [small_run()], []
            repeats = max(1, min(10, math.ceil(0.02 / max(small[0], 1e-4))))  # ~20 ms of work per side
            for _ in range(2):  # the second round only confirms a slow-looking first one
                for _ in range(repeats):
                    seconds = cpu_seconds(run, big_capacity, limit)
                    if seconds is None:
                        return Failure("o_capacity_eviction",
                                       f"the same {evicting_blocks} evictions took {min(small):.3f} CPU s at "
                                       f"capacity {capacity} but over {limit:g} s at capacity {big_capacity}")
                    big.append(seconds)
                    small.append(small_run())
                ratio = min(big) / max(min(small), 1e-9)
                if ratio <= O_CAPACITY_RATIO:
                    return None
            return Failure("o_capacity_eviction",
                           f"the same {evicting_blocks} evictions took {ratio:.1f}x the CPU time at capacity "
                           f"{big_capacity} as at capacity {capacity} (O(1) per eviction stays near 1x)")
        finally:
            if gc_was_enabled:
                gc.enable()

    return Probe(probe_id, "simulate_prefix_cache", visibility, "o_capacity_eviction", *hint, (), check)


# --- the decision functions -----------------------------------------------------------------------------

def _oracle(name: str) -> Callable:
    from tools.prefixbench import decision

    return getattr(decision, name)


def _value_probe(probe_id, exercise, visibility, args, keys, hint, *, targets="other", symptom=None) -> Probe:
    """The student's result must match the library's on ``keys``; ``symptom(got, want)`` names the mistake."""

    def check(run: Runner) -> Failure | None:
        got = run.result(*args, keys=keys)
        want = _oracle(exercise)(*args)
        diffs = _diffs(got, want, [key for key in keys if key != "reason"])
        if "reason" in keys and not (isinstance(got["reason"], str) and got["reason"].strip()):
            diffs.append(f"reason expected a non-empty string, got {got['reason']!r}")
        if not diffs:
            return None
        code = targets if targets != "other" and symptom(got, want) else "other"
        return Failure(code, _mismatch_detail(_call_text(run.name, args, {}), diffs))

    return Probe(probe_id, exercise, visibility, targets, *hint, ((args, {}),), check)


def _value_error_probe(probe_id, exercise, visibility, args, control_args, targets, keys, hint) -> Probe:
    """Must raise ValueError; blamed on ``targets`` when the same call with the bad value fixed (the control)
    returns the library's answer on ``keys``."""

    def control_is_right(run: Runner) -> bool:
        outcome = run.call(*control_args)
        if outcome.timed_out or outcome.error is not None or not isinstance(outcome.value, Mapping):
            return False
        want = _oracle(exercise)(*control_args)
        return all(_same_value(outcome.value.get(key), want[key]) for key in keys)

    def check(run: Runner) -> Failure | None:
        ok, did = run.raises_value_error(*args)
        if ok:
            return None
        return Failure(targets if control_is_right(run) else "other", did)

    return Probe(probe_id, exercise, visibility, targets, *hint, ((args, {}), (control_args, {})), check)


def _flipped_signs(got, want) -> bool:
    """Every delta right or exactly negated, at least one negated: a sign mistake, not an arithmetic one."""
    flipped = False
    for key in COMPARISON_KEYS:
        g, w = got.get(key), want[key]
        if _same_value(g, w):
            continue
        if w != 0 and _same_value(g, -w):
            flipped = True
            continue
        return False
    return flipped


def _decision_probe(probe_id, visibility, args, hint, *, targets="other", symptom=None, control=None) -> Probe:
    """recommend_prefix_cache_run's decision and next_action must match the library's; ``control`` is a second
    argument tuple that must come out right for the failure to be blamed on ``targets``."""
    exercise = "recommend_prefix_cache_run"

    def failure_for(run, call_args):
        got = run.result(*call_args, keys=DECISION_KEYS)
        want = _oracle(exercise)(*call_args)
        diffs = _diffs(got, want, ("decision", "next_action"))
        if not (isinstance(got["reason"], str) and got["reason"].strip()):
            diffs.append(f"reason expected a non-empty string, got {got['reason']!r}")
        detail = _mismatch_detail(_call_text(run.name, call_args, {}), diffs) if diffs else ""
        return detail, got

    def check(run: Runner) -> Failure | None:
        detail, got = failure_for(run, args)
        if not detail:
            return None
        if targets != "other" and symptom(got) and not failure_for(run, control)[0]:
            return Failure(targets, detail)
        return Failure("other", detail)

    inputs = tuple((a, {}) for a in ([args] + ([control] if control else [])))
    return Probe(probe_id, exercise, visibility, targets, *hint, inputs, check)


def _accepts_or_tunes(got) -> bool:
    return got.get("decision") in ("accept", "tune")


# ============================================================================================ the probe set

def _h(zh: str, en: str) -> tuple[str, str]:
    return zh, en


_A, _B, _C, _D, _E, _F = [1, 1], [2, 2], [3, 3], [4, 4], [5, 5], [6, 6]
_P, _Q, _R, _S, _T = [11, 12, 13], [14, 15, 16], [17, 18, 19], [13, 12, 11], [20, 21, 22]
_BASE = {"name": "cache_off", "hit_rate": 0.0, "ttft_ms": 130.0, "overhead": 0.0}
_HIDDEN_BASE = {"name": "off", "hit_rate": 0.25, "ttft_ms": 120.0, "overhead": 0.0}
_HIDDEN_GOOD = {"name": "on", "hit_rate": 0.875, "ttft_ms": 80.0, "overhead": 0.0}
_ABCD = _A + _B + _C + _D
_CAND = {"name": "prefix_cache", "hit_rate": 0.75, "ttft_ms": 90.0, "overhead": 0.05}
_RANGE_HINT = _h("门槛的取值范围。", "The allowed range of each threshold.")
_NOT_A_NUMBER_HINT = _h("门槛不是数时也要 raise ValueError。", "A threshold that is not a number must raise ValueError too.")

PROBES: tuple[Probe, ...] = (
    # --- simulate_prefix_cache, visible
    _sim_probe("simulate.smoke", "visible", ([[1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 9, 10]], 2, 8),
               hint=_h("从 block 0 开始找最长的已缓存前缀，并核对每个返回字段的算法。",
                       "Find the longest cached prefix from block 0, and check how each returned field is computed.")),
    _sim_probe("simulate.seed_example", "visible",
               ([[1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 9, 10], [20, 21, 22, 23, 24, 25, 26, 27]], 2, 4),
               hint=_h("容量不足时的 LRU 驱逐：eviction_count 和 cache_size_blocks。",
                       "LRU eviction once the cache is full: eviction_count and cache_size_blocks.")),
    _sim_probe("simulate.partial_tail", "visible", ([[1, 2, 3, 4, 5], [1, 2, 3, 4, 5]], 2, 8),
               targets="partial_block_counted", symptom=_caches_or_reuses_more,
               control=([[1, 2, 3, 4], [1, 2, 3, 4]], 2, 8),
               hint=_h("尾部不足一个 block 的 token 不缓存、不命中。",
                       "Tokens of a trailing partial block are neither cached nor hit.")),
    _sim_probe("simulate.same_block_after_other_prefix", "visible", ([_A + _B, _C + _D, _A + _D], 2, 16),
               targets="position_keys", symptom=_reuses_more, control=([_A + _B, _C + _E, _A + _D], 2, 16),
               hint=_h("同样的 token 出现在不同前缀之后，是不同的 block。",
                       "The same tokens after a different prefix are a different block.")),
    _sim_probe("simulate.later_block_after_miss", "visible", ([_A + _B, _C + _B], 2, 16),
               targets="no_stop_at_first_miss", symptom=_reuses_more, control=([_A + _B, _C + _D], 2, 16),
               hint=_h("第一个未命中之后的 block 不能算命中。", "No block after the first miss counts as a hit.")),
    _sim_probe("simulate.deepest_block_evicted_first", "visible", ([_ABCD, _E + _F, _ABCD], 2, 4),
               targets="head_first_eviction", symptom=_reuses_less, control=([_ABCD, _E + _F, _ABCD], 2, 6),
               hint=_h("同样新的 block 中先驱逐最深的（尾部），保留还能被查到的头部。",
                       "Among equally recent blocks evict the deepest (the tail) and keep the reachable head.")),
    _invalid_sizes_probe("simulate.invalid_sizes", "visible",
                         ({"block_size": 0, "capacity_blocks": 8}, {"block_size": 4, "capacity_blocks": 0},
                          {"block_size": -2, "capacity_blocks": 8}),
                         _h("block_size 或 capacity_blocks <= 0 时要 raise ValueError。",
                            "block_size or capacity_blocks <= 0 must raise ValueError.")),
    _timing_probe("simulate.eviction_cost_vs_capacity", "visible",
                  _h("每次驱逐、查找和更新都应是 O(1)。", "Every eviction, lookup and update should be O(1)."),
                  **EVICTION_TIMING),
    _random_probe("simulate.random_small", "visible", 69, 150, (3, 10, 5, 3, 8),
                  _h("拿这个最小反例手算一遍，逐个请求打印缓存内容和驱逐顺序。",
                     "Trace this smallest case by hand: print the cache and the eviction order after each request.")),
    # --- simulate_prefix_cache, hidden
    _sim_probe("simulate.hidden.partial_tail", "hidden",
               ([[5, 6, 7, 8, 9], [5, 6, 7, 8, 9], [5, 6, 7, 8, 9, 10]], 3, 8),
               targets="partial_block_counted", symptom=_caches_or_reuses_more,
               control=([[5, 6, 7], [5, 6, 7], [5, 6, 7, 8, 9, 10]], 3, 8),
               hint=_h("只缓存、只命中完整 block。", "Only full blocks are cached and hit.")),
    _sim_probe("simulate.hidden.same_block_after_other_prefix", "hidden", ([_P + _Q, _S + _R, _P + _R + _Q], 3, 16),
               targets="position_keys", symptom=_reuses_more, control=([_P + _Q, _S + _R, _P + _Q + _R], 3, 16),
               hint=_h("block 的 key 要代表整个前缀。", "A block's key must name its whole prefix.")),
    _sim_probe("simulate.hidden.later_block_after_miss", "hidden", ([_P + _Q + _R, _S + _Q + _R], 3, 16),
               targets="no_stop_at_first_miss", symptom=_reuses_more,
               control=([_P + _Q + _R, _S + _R + _Q], 3, 16),
               hint=_h("查找在第一个未命中处停止。", "Lookup stops at the first miss.")),
    _sim_probe("simulate.hidden.deepest_block_evicted_first", "hidden", ([_P + _Q + _R, _S + _T, _P + _Q + _R], 3, 3),
               targets="head_first_eviction", symptom=_reuses_less,
               control=([_P + _Q + _R, _S + _T, _P + _Q + _R], 3, 5),
               hint=_h("驱逐顺序：尾部先于头部。", "Eviction order: tail before head.")),
    _sim_probe("simulate.hidden.pinned_request", "hidden", ([_A + _B + _C + _D + _E, _A + _B + _C + _D + _E], 2, 3),
               hint=_h("运行中的请求用到的 block 不能被驱逐；缓存全被它 pin 住时，剩下的 block 不缓存。",
                       "A running request's blocks cannot be evicted; when it pins the whole cache, its remaining "
                       "blocks are not cached.")),
    _sim_probe("simulate.hidden.hit_refreshes_recency", "hidden", ([_A, _B, _A, _C, _A], 2, 2),
               hint=_h("命中的 block 也要变成最近使用。", "A block that hits becomes most recently used too.")),
    _sim_probe("simulate.hidden.lru_across_requests", "hidden", ([_A + _B, _C + _D, _E, _A + _B, _C + _D], 2, 4),
               hint=_h("最久未用的请求先被驱逐，同一请求内尾部先走。",
                       "The least recently used request goes first, and within a request its tail goes first.")),
    _sim_probe("simulate.hidden.repeated_tokens", "hidden", ([[9] * 8, [9] * 8, [9] * 6], 2, 16),
               hint=_h("内容相同但深度不同的 block 是不同的 block。",
                       "Blocks with equal tokens at different depths are different blocks.")),
    _invalid_sizes_probe("simulate.hidden.invalid_sizes", "hidden",
                         ({"block_size": 4, "capacity_blocks": -3}, {"block_size": 0, "capacity_blocks": 0}),
                         _h("非正的 block_size / capacity_blocks 要 raise ValueError。",
                            "Non-positive block_size / capacity_blocks must raise ValueError.")),
    _random_probe("simulate.hidden.random", "hidden", 2025, 300, (4, 24, 12, 5, 20),
                  _h("在随机 workload 上与参考实现不一致；先运行自检，找到最小反例。",
                     "Differs from the reference on random workloads; run the self-check for a small counterexample.")),
    # --- summarize_prefix_cache
    _value_probe("summarize.basic", "summarize_prefix_cache", "visible",
                 ([{"name": "cache_off", "hit_rate": 0.0, "ttft_ms": 130.0},
                   {"name": "prefix_cache", "hit_rate": 0.5, "ttft_ms": 90.0}],), SUMMARY_KEYS,
                 _h("run_count、两个平均值和命中率最高的 run 的 name。",
                    "run_count, the two means and the name of the run with the highest hit rate.")),
    _value_probe("summarize.empty", "summarize_prefix_cache", "visible", ([],), SUMMARY_KEYS,
                 _h("空列表：run_count 为 0，其余字段为 None。", "Empty list: run_count 0, the other fields None."),
                 targets="missing_metric_as_zero",
                 symptom=lambda got, want: any(got.get(k) == 0 for k in ("avg_hit_rate", "avg_ttft_ms"))),
    _value_error_probe("summarize.missing_hit_rate", "summarize_prefix_cache", "visible",
                       ([{"name": "a", "hit_rate": 0.5, "ttft_ms": 100.0}, {"name": "b", "ttft_ms": 80.0}],),
                       ([{"name": "a", "hit_rate": 0.5, "ttft_ms": 100.0},
                         {"name": "b", "hit_rate": 0.25, "ttft_ms": 80.0}],),
                       "missing_metric_as_zero", SUMMARY_KEYS,
                       _h("缺失的 hit_rate 要 raise ValueError。", "A missing hit_rate must raise ValueError.")),
    _value_error_probe("summarize.hidden.none_ttft", "summarize_prefix_cache", "hidden",
                       ([{"name": "x", "hit_rate": 0.75, "ttft_ms": None}],),
                       ([{"name": "x", "hit_rate": 0.75, "ttft_ms": 70.0}],),
                       "missing_metric_as_zero", SUMMARY_KEYS,
                       _h("为 None 的指标要 raise ValueError。", "A None metric must raise ValueError.")),
    _value_probe("summarize.hidden.ties", "summarize_prefix_cache", "hidden",
                 ([{"name": "p", "hit_rate": 0.125, "ttft_ms": 100.0},
                   {"name": "q", "hit_rate": 0.625, "ttft_ms": 80.0},
                   {"name": "r", "hit_rate": 0.625, "ttft_ms": 96.0}],), SUMMARY_KEYS,
                 _h("命中率并列时取先出现的 run；平均值除以 run 数。",
                    "On a hit-rate tie the first run wins; means divide by the number of runs.")),
    _value_probe("summarize.hidden.single_run", "summarize_prefix_cache", "hidden",
                 ([{"name": "solo", "hit_rate": 0.375, "ttft_ms": 42.0}],), SUMMARY_KEYS,
                 _h("只有一个 run 时的摘要。", "The summary of a single run.")),
    # --- compare_prefix_cache_to_baseline
    _value_probe("compare.signs", "compare_prefix_cache_to_baseline", "visible",
                 (_BASE, {"name": "prefix_cache", "hit_rate": 0.5, "ttft_ms": 100.0, "overhead": 0.25}),
                 COMPARISON_KEYS, _h("三个差值都是 candidate − baseline。",
                                     "All three deltas are candidate − baseline."),
                 targets="wrong_delta_sign", symptom=_flipped_signs),
    _value_error_probe("compare.missing_overhead", "compare_prefix_cache_to_baseline", "visible",
                       ({"name": "cache_off", "hit_rate": 0.0, "ttft_ms": 130.0},
                        {"name": "prefix_cache", "hit_rate": 0.5, "ttft_ms": 100.0, "overhead": 0.25}),
                       (_BASE, {"name": "prefix_cache", "hit_rate": 0.5, "ttft_ms": 100.0, "overhead": 0.25}),
                       "missing_metric_as_zero", COMPARISON_KEYS,
                       _h("缺失的 overhead 要 raise ValueError。", "A missing overhead must raise ValueError.")),
    _value_probe("compare.hidden.getting_worse", "compare_prefix_cache_to_baseline", "hidden",
                 ({"name": "on", "hit_rate": 0.625, "ttft_ms": 95.0, "overhead": 0.375},
                  {"name": "off", "hit_rate": 0.125, "ttft_ms": 120.0, "overhead": 0.25}),
                 COMPARISON_KEYS, _h("变差时增益为负、差值为正。",
                                     "When things get worse the gain is negative and the deltas positive."),
                 targets="wrong_delta_sign", symptom=_flipped_signs),
    _value_error_probe("compare.hidden.none_ttft", "compare_prefix_cache_to_baseline", "hidden",
                       ({"name": "off", "hit_rate": 0.125, "ttft_ms": 120.0, "overhead": 0.25},
                        {"name": "on", "hit_rate": 0.625, "ttft_ms": None, "overhead": 0.375}),
                       ({"name": "off", "hit_rate": 0.125, "ttft_ms": 120.0, "overhead": 0.25},
                        {"name": "on", "hit_rate": 0.625, "ttft_ms": 95.0, "overhead": 0.375}),
                       "missing_metric_as_zero", COMPARISON_KEYS,
                       _h("为 None 的指标要 raise ValueError。", "A None metric must raise ValueError.")),
    _value_error_probe("compare.hidden.none_hit_rate", "compare_prefix_cache_to_baseline", "hidden",
                       ({"name": "off", "hit_rate": None, "ttft_ms": 120.0, "overhead": 0.25},
                        {"name": "on", "hit_rate": 0.625, "ttft_ms": 95.0, "overhead": 0.375}),
                       ({"name": "off", "hit_rate": 0.125, "ttft_ms": 120.0, "overhead": 0.25},
                        {"name": "on", "hit_rate": 0.625, "ttft_ms": 95.0, "overhead": 0.375}),
                       "missing_metric_as_zero", COMPARISON_KEYS,
                       _h("为 None 的指标要 raise ValueError。", "A None metric must raise ValueError.")),
    # --- recommend_prefix_cache_run
    _decision_probe("recommend.accept", "visible",
                    (_BASE, _CAND, 0.5, 0.1),
                    _h("三项都达标时 accept，next_action 为 promote_to_serving_eval；TTFT 变快即 ttft_delta_ms < 0。",
                       "All three pass: accept with next_action promote_to_serving_eval; faster TTFT means "
                       "ttft_delta_ms < 0.")),
    _decision_probe("recommend.tune", "visible",
                    (_BASE, dict(_CAND, overhead=0.5), 0.5, 0.1),
                    _h("命中率和 TTFT 达标、开销超限时 tune。",
                       "Hit rate and TTFT pass but the overhead is over its limit: tune.")),
    _decision_probe("recommend.low_hit_rate_but_faster", "visible",
                    (_BASE, {"name": "prefix_cache", "hit_rate": 0.25, "ttft_ms": 60.0, "overhead": 0.0}, 0.5, 0.1),
                    _h("命中率增益未达门槛时 reject，哪怕 TTFT 变快。",
                       "A hit-rate gain below the threshold is reject, even with a faster TTFT."),
                    targets="ttft_only_accept", symptom=_accepts_or_tunes,
                    control=(_BASE, {"name": "prefix_cache", "hit_rate": 0.75, "ttft_ms": 150.0, "overhead": 0.0},
                             0.5, 0.1)),
    _value_error_probe("recommend.threshold_out_of_range", "recommend_prefix_cache_run", "visible",
                       (_BASE, {"name": "prefix_cache", "hit_rate": 0.75, "ttft_ms": 90.0, "overhead": 0.05}, 1.5, 0.1),
                       (_BASE, _CAND, 0.5, 0.1),
                       "unchecked_thresholds", DECIDED_KEYS,
                       _h("min_hit_rate 超出 [0, 1] 要 raise ValueError。",
                          "min_hit_rate outside [0, 1] must raise ValueError.")),
    _decision_probe("recommend.hidden.low_hit_rate_costly", "hidden",
                    (_HIDDEN_BASE, {"name": "on", "hit_rate": 0.5, "ttft_ms": 40.0, "overhead": 0.5}, 0.5, 0.125),
                    _h("命中率不达标时是 reject，不是 tune。", "A hit rate below the threshold is reject, not tune."),
                    targets="ttft_only_accept", symptom=_accepts_or_tunes,
                    control=(_HIDDEN_BASE, {"name": "on", "hit_rate": 0.875, "ttft_ms": 120.0, "overhead": 0.0},
                             0.5, 0.125)),
    _value_error_probe("recommend.hidden.negative_min_hit_rate", "recommend_prefix_cache_run", "hidden",
                       (_HIDDEN_BASE, _HIDDEN_GOOD, -0.25, 0.125), (_HIDDEN_BASE, _HIDDEN_GOOD, 0.25, 0.125),
                       "unchecked_thresholds", DECIDED_KEYS, _RANGE_HINT),
    _value_error_probe("recommend.hidden.negative_max_overhead", "recommend_prefix_cache_run", "hidden",
                       (_HIDDEN_BASE, _HIDDEN_GOOD, 0.25, -0.01), (_HIDDEN_BASE, _HIDDEN_GOOD, 0.25, 0.01),
                       "unchecked_thresholds", DECIDED_KEYS, _RANGE_HINT),
    _value_error_probe("recommend.hidden.none_threshold", "recommend_prefix_cache_run", "hidden",
                       (_HIDDEN_BASE, _HIDDEN_GOOD, None, 0.125), (_HIDDEN_BASE, _HIDDEN_GOOD, 0.375, 0.125),
                       "unchecked_thresholds", DECIDED_KEYS, _NOT_A_NUMBER_HINT),
    _value_error_probe("recommend.hidden.nan_threshold", "recommend_prefix_cache_run", "hidden",
                       (_HIDDEN_BASE, _HIDDEN_GOOD, float("nan"), 0.125), (_HIDDEN_BASE, _HIDDEN_GOOD, 0.625, 0.125),
                       "unchecked_thresholds", DECIDED_KEYS, _NOT_A_NUMBER_HINT),
    _decision_probe("recommend.hidden.boundaries", "hidden",
                    (_HIDDEN_BASE, {"name": "on", "hit_rate": 0.75, "ttft_ms": 80.0, "overhead": 0.125}, 0.5, 0.125),
                    _h("恰好等于门槛也算达标（>= 与 <=）。", "Meeting a threshold exactly passes (>= and <=).")),
    _decision_probe("recommend.hidden.no_ttft_gain", "hidden",
                    (_HIDDEN_BASE, {"name": "on", "hit_rate": 0.875, "ttft_ms": 120.0, "overhead": 0.0}, 0.5, 0.125),
                    _h("TTFT 没有变快（差值不小于 0）时 reject。", "No TTFT gain (delta not below 0) is reject.")),
    _decision_probe("recommend.hidden.zero_min_hit_rate", "hidden",
                    (_HIDDEN_BASE, {"name": "on", "hit_rate": 0.3125, "ttft_ms": 100.0, "overhead": 0.0}, 0.0, 0.125),
                    _h("门槛为 0 时，有 TTFT 收益即可 accept。", "With a zero threshold a TTFT gain is enough to accept.")),
)


# ============================================================================================ diagnosis

@dataclass(frozen=True)
class Finding:
    code: str
    exercise: str
    message_zh: str
    message_en: str
    probes: tuple[str, ...] = ()
    """Ids of the visible probes behind this finding."""
    hidden_probes: int = 0
    """How many hidden probes agree with it (their ids and inputs are not shown)."""
    details: tuple[str, ...] = ()
    """What a visible probe called and what came back; never from a hidden probe."""

    def as_dict(self) -> dict:
        return asdict(self)


def _finding(exercise: str, code: str, failures: list[tuple[Probe, Failure]]) -> Finding:
    mistake = CATALOGUE[code]
    note = next((f.note for _, f in failures if f.note), "")
    zh, en = mistake.zh.format(note=note), mistake.en.format(note=note)
    if code in ("other", "raised_exception"):
        probe = failures[0][0]  # what to look at: the first failing probe's hint
        zh, en = f"{zh} 重点看：{probe.hint_zh}", f"{en} Look at: {probe.hint_en}"
    visible = [(p, f) for p, f in failures if p.visibility == "visible"]
    return Finding(
        code=code, exercise=exercise, message_zh=zh, message_en=en,
        probes=tuple(dict.fromkeys(p.id for p, _ in visible)),
        hidden_probes=sum(1 for p, _ in failures if p.visibility != "visible"),
        details=tuple(dict.fromkeys(f.detail for _, f in visible if f.detail))[:3],
    )


def _findings_for(exercise: str, failures: list[tuple[Probe, Failure]]) -> list[Finding]:
    """One finding per code; 'other' only when nothing more specific explains the failures."""
    by_code: dict[str, list[tuple[Probe, Failure]]] = {}
    for probe, failure in failures:
        by_code.setdefault(failure.code, []).append((probe, failure))
    if "not_implemented" in by_code:
        return [_finding(exercise, "not_implemented", by_code["not_implemented"])]
    specific = [code for code in by_code if code != "other"]
    codes = specific or list(by_code)
    return [_finding(exercise, code, by_code[code]) for code in codes]


def _probe_function(name: str, fn: Callable, probes: list[Probe], call_timeout_s: float):
    runner = Runner(name, fn, call_timeout_s)
    failures: list[tuple[Probe, Failure]] = []
    for probe in probes:
        try:
            failure = probe.check(runner)
        except _Stop as stop:
            failure = stop.failure
        except Exception as exc:  # noqa: BLE001 - a result too odd to compare is a failure, not a crash
            failure = Failure("other", f"{name}: result could not be compared ({type(exc).__name__})")
        if failure is not None:
            failures.append((probe, failure))
            if failure.code in ("not_implemented", "timed_out"):
                break  # an unfinished or hanging function would fail every later probe the same way
    return failures


def _as_namespace(functions: Any) -> Mapping:
    return functions if isinstance(functions, Mapping) else vars(functions)


def diagnose(functions: Any, visibility: Iterable[str] | str = ("visible",), *,
             exercises: Iterable[str] | None = None,
             call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S) -> list[Finding]:
    """Run the probes of the given visibilities against the student's functions and name their mistakes.

    ``functions``: a mapping from exercise name to function (``globals()`` of the notebook works) or a module.
    Returns one Finding per (exercise, mistake), in exercise order; an empty list means no probe failed.
    """
    namespace = _as_namespace(functions)
    wanted = {visibility} if isinstance(visibility, str) else set(visibility)
    if isinstance(exercises, str):
        exercises = [exercises]
    if not wanted or not wanted <= set(VISIBILITIES):
        raise ValueError(f"visibility must be a non-empty subset of {VISIBILITIES}, got {sorted(wanted)}")
    selected = list(EXERCISES) if exercises is None else [e for e in EXERCISES if e in set(exercises)]
    if exercises is not None and len(selected) != len(set(exercises)):
        raise ValueError(f"unknown exercise in {sorted(set(exercises))}; choose from {EXERCISES}")
    findings: list[Finding] = []
    for exercise in selected:
        fn = namespace.get(exercise)
        if not callable(fn):
            findings.append(_finding(exercise, "missing_function", []))
            continue
        probes = [p for p in PROBES if p.exercise == exercise and p.visibility in wanted]
        found = _findings_for(exercise, _probe_function(exercise, fn, probes, call_timeout_s))
        if exercise == "recommend_prefix_cache_run" and found and found[0].code not in (
                "not_implemented", "missing_function"):
            compare_failed = any(f.exercise == "compare_prefix_cache_to_baseline" for f in findings)
            if compare_failed:  # its failures may be compare's; say so instead of guessing
                found = [_finding(exercise, "fix_compare_first", [])]
        findings.extend(found)
    return findings


# ============================================================================================ presenting

def _finding_lines(finding: Finding) -> list[str]:
    lines = [f"✗ {finding.exercise}  [{finding.code}]",
             f"  中文：{finding.message_zh}",
             f"  EN:   {finding.message_en}"]
    for detail in finding.details:
        lines.append(f"  例 | e.g. {detail}")
    n = finding.hidden_probes
    if n and finding.probes:
        lines.append(f"  （另有 {n} 个隐藏检查得出同样结论 | {n} hidden check(s) point the same way）")
    elif n:
        lines.append(f"  （来自 {n} 个隐藏检查，不显示其输入 | found by {n} hidden check(s); inputs not shown）")
    return lines


def feedback_text(findings: Iterable[Finding]) -> str:
    """The findings as bilingual text for graded feedback. Safe to hand back: a Finding carries no hidden
    probe's id, inputs or expected values (details come from visible probes only)."""
    findings = list(findings)
    if not findings:
        return "未发现已知的典型错误。 | No known mistake detected."
    lines = ["诊断（最可能的错误与该看的地方） | Diagnosis (most likely mistake and where to look)"]
    for finding in findings:
        lines.extend(_finding_lines(finding))
    return "\n".join(lines)


def self_check(namespace_or_functions: Any, *, exercises: Iterable[str] | None = None,
               call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S) -> list[Finding]:
    """What the notebook calls (``self_check(globals())``): visible probes only; prints and returns findings."""
    findings = diagnose(namespace_or_functions, ("visible",), exercises=exercises, call_timeout_s=call_timeout_s)
    wanted = {exercises} if isinstance(exercises, str) else set(exercises or EXERCISES)
    checked = [e for e in EXERCISES if e in wanted]
    failing = {f.exercise for f in findings}
    print("前缀缓存自检（只用可见探针） | Prefix-cache self-check (visible probes only)")
    for exercise in checked:
        if exercise not in failing:
            print(f"✓ {exercise}")
        for finding in findings:
            if finding.exercise == exercise:
                print("\n".join(_finding_lines(finding)))
    if not findings:
        print("所有可见探针都通过；评分时还会运行隐藏检查。 | All visible probes pass; grading also runs hidden checks.")
    return findings
