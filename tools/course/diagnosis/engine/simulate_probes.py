"""Probes of ``simulate_prefix_cache``: targeted cases with controls, seeded random cases shrunk to a small
counterexample, and a timing probe that tells O(1) from O(capacity) eviction.

The oracle is the library (tools.prefixbench, numpy-based), imported on first use.
"""

from __future__ import annotations

import gc
import math
import random
from typing import Callable, Iterator, Mapping, Sequence

from .catalogue import SIMULATE_KEYS
from .probing import Failure, Probe, Runner, Stop, call_text, field_diffs, mismatch_detail


def _oracle_simulate(seqs: list[list[int]], block_size: int, capacity_blocks: int) -> dict:
    from tools.prefixbench import simulate_prefix_cache

    return simulate_prefix_cache(seqs, block_size, capacity_blocks, policy="lru")


def _sim_failure(run: Runner, seqs: list[list[int]], block_size: int,
                 capacity_blocks: int) -> tuple[Failure | None, Mapping, Mapping]:
    kwargs = {"block_size": block_size, "capacity_blocks": capacity_blocks}
    got = run.result(seqs, keys=SIMULATE_KEYS, **kwargs)
    want = _oracle_simulate(seqs, block_size, capacity_blocks)
    diffs = field_diffs(got, want, SIMULATE_KEYS)
    if not diffs:
        return None, got, want
    return Failure("other", mismatch_detail(call_text(run.name, (seqs,), kwargs), diffs)), got, want


def sim_probe(probe_id: str, visibility: str, case: tuple[list[list[int]], int, int], *, hint: tuple[str, str],
              targets: str = "other", symptom: Callable[[Mapping, Mapping], bool] | None = None,
              control: tuple[list[list[int]], int, int] | None = None) -> Probe:
    """``case`` and ``control`` are (token_sequences, block_size, capacity_blocks)."""

    def check(run: Runner) -> Failure | None:
        failure, got, want = _sim_failure(run, *case)
        if failure is None or targets == "other" or symptom is None or not symptom(got, want):
            return failure
        if control is not None and _sim_failure(run, *control)[0] is not None:
            return failure
        return Failure(targets, failure.detail)

    cases = [case] + ([control] if control else [])
    inputs = tuple(((seqs,), {"block_size": bs, "capacity_blocks": cap}) for seqs, bs, cap in cases)
    return Probe(probe_id, "simulate_prefix_cache", visibility, targets, hint[0], hint[1], inputs, check)


def reuses_more(got: Mapping, want: Mapping) -> bool:
    return got["reused_tokens"] > want["reused_tokens"]


def caches_or_reuses_more(got: Mapping, want: Mapping) -> bool:
    return reuses_more(got, want) or got["cache_size_blocks"] > want["cache_size_blocks"]


def holds_one_block_too_many(got: Mapping, want: Mapping) -> bool:
    """More blocks kept and fewer evictions than the oracle: the capacity test lets one block too many in."""
    return got["cache_size_blocks"] > want["cache_size_blocks"] and got["eviction_count"] < want["eviction_count"]


def reuses_less(got: Mapping, want: Mapping) -> bool:
    return got["reused_tokens"] < want["reused_tokens"]


def invalid_sizes_probe(probe_id: str, visibility: str, variants: Sequence[Mapping[str, int]],
                        hint: tuple[str, str]) -> Probe:
    def check(run: Runner) -> Failure | None:
        for kwargs in variants:
            ok, did = run.raises_value_error([[1, 2, 3, 4]], **kwargs)
            if not ok:
                return Failure("other", did)
        return None

    inputs = tuple((([[1, 2, 3, 4]],), kwargs) for kwargs in variants)
    return Probe(probe_id, "simulate_prefix_cache", visibility, "other", hint[0], hint[1], inputs, check)


def _random_cases(seed: int, count: int,
                  sizes: tuple[int, int, int, int, int]) -> Iterator[tuple[list[list[int]], int, int]]:
    """``count`` seeded cases; ``sizes`` bounds the vocabulary, prompt length, request count, block and cache."""
    vocab, length, requests, block, capacity = sizes
    rng = random.Random(seed)
    for _ in range(count):
        v = rng.randint(1, vocab)
        seqs = [[rng.randrange(v) for _ in range(rng.randint(1, length))] for _ in range(rng.randint(1, requests))]
        yield seqs, rng.randint(1, block), rng.randint(1, capacity)


def _smaller(case: tuple[list[list[int]], int, int]) -> Iterator[tuple[list[list[int]], int, int]]:
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


def random_probe(probe_id: str, visibility: str, seed: int, count: int, sizes: tuple[int, int, int, int, int],
                 hint: tuple[str, str], *, shrink_budget: int = 200) -> Probe:
    """Agreement with the oracle on seeded random workloads; the first disagreement is shrunk to a small
    counterexample the student can trace by hand."""

    def failure_for(run: Runner, case: tuple[list[list[int]], int, int]) -> Failure | None:
        try:
            return _sim_failure(run, *case)[0]
        except Stop as stop:
            if stop.failure.code in ("timed_out", "not_implemented"):
                raise
            return stop.failure

    def check(run: Runner) -> Failure | None:
        for case in _random_cases(seed, count, sizes):
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

    return Probe(probe_id, "simulate_prefix_cache", visibility, "other", hint[0], hint[1], (), check)


EVICTION_TIMING = {"capacity": 128, "growth": 8, "evicting_blocks": 4000, "block_size": 4, "blocks_per_request": 4}
O_CAPACITY_RATIO = 3.0
"""Run time at 8x the capacity over run time at 1x, same evictions. Measured on a 2-core machine: O(1) about
1.1-1.3, a scan per eviction about 5-7; 3 leaves room for noise either way."""


def _eviction_workload(capacity: int, evicting_blocks: int, block_size: int,
                       blocks_per_request: int) -> list[list[int]]:
    """Distinct requests (no hits): the first ``capacity`` blocks fill the cache, each later block evicts
    one, so every capacity gets the same ``evicting_blocks`` evictions."""
    tokens = block_size * blocks_per_request
    count = (capacity + evicting_blocks) // blocks_per_request
    return [list(range(i * tokens, (i + 1) * tokens)) for i in range(count)]


def timing_probe(probe_id: str, visibility: str, hint: tuple[str, str], *, capacity: int, growth: int,
                 evicting_blocks: int, block_size: int, blocks_per_request: int) -> Probe:
    """O(1) vs O(capacity) eviction: time the same number of evictions at two capacities, side by side."""
    big_capacity = capacity * growth

    def cpu_seconds(run: Runner, cap: int, limit: float) -> float | None:
        """CPU time of one run at capacity ``cap``; None when it ran past ``limit``."""
        seqs = _eviction_workload(cap, evicting_blocks, block_size, blocks_per_request)  # fresh, so no copy
        kwargs = {"block_size": block_size, "capacity_blocks": cap}
        outcome = run.call(seqs, _timeout_s=limit, _copy=False, **kwargs)
        if outcome.error is not None:
            run.stop(outcome, (f"<{len(seqs)} distinct requests>",), kwargs)
        return None if outcome.timed_out else outcome.cpu_s

    def check(run: Runner) -> Failure | None:
        limit = 2 * run.call_timeout_s

        def small_run() -> float:
            seconds = cpu_seconds(run, capacity, limit)
            if seconds is None:
                raise Stop(Failure("timed_out", f"{evicting_blocks} evictions at capacity {capacity} took "
                                                f"over {limit:g} s", f"{limit:g} s"))
            return seconds

        gc_was_enabled = gc.isenabled()
        # no collection pause inside the timed runs; the young generations are emptied first, not the whole heap:
        # a full collection walks every object of the process (a kernel that imported torch: 0.3 s; a test
        # worker after the in-process vLLM modules: over 1 s), per diagnosis, and times nothing better
        gc.collect(1)
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

    return Probe(probe_id, "simulate_prefix_cache", visibility, "o_capacity_eviction", hint[0], hint[1], (), check)
