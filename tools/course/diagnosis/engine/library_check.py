"""Step 6's check against the library: your simulate_prefix_cache and the reference library on a few hundred
random small workloads, field by field; the first disagreement is shrunk to its smallest form and printed.

The library (tools.prefixbench) is the reference: reading it is fine, and this check is the one place the
notebook calls its simulator. Submitting the library (importing or copying it into an exercise) is flagged.
"""

from __future__ import annotations

import math
import random
from typing import Any, Callable, Iterator, Mapping

from .catalogue import SIMULATE_KEYS


def _library(seqs: list[list[int]], block_size: int, capacity: int) -> dict[str, object]:
    from tools.prefixbench import simulate_prefix_cache

    return simulate_prefix_cache(seqs, block_size=block_size, capacity_blocks=capacity, policy="lru")


def differences(fn: Callable[..., Any], seqs: list[list[int]], block_size: int, capacity: int) -> dict:
    """Fields where ``fn`` and the library disagree on this case ({} if none)."""
    try:
        mine = fn([list(s) for s in seqs], block_size=block_size, capacity_blocks=capacity)
    except NotImplementedError:
        raise
    except Exception as exc:  # noqa: BLE001 - a crash is a disagreement too
        return {"exception": (f"{type(exc).__name__}: {exc}", "-")}
    if not isinstance(mine, Mapping):
        return {"result": (type(mine).__name__, "dict")}
    ref = _library(seqs, block_size, capacity)

    def same(a: object, b: object) -> bool:
        return a == b or (isinstance(a, float) and isinstance(b, float) and math.isclose(a, b))

    return {key: (mine.get(key), ref[key]) for key in SIMULATE_KEYS if not same(mine.get(key), ref[key])}


def _simpler(case: tuple[list[list[int]], int, int]) -> Iterator[tuple[list[list[int]], int, int]]:
    seqs, block_size, capacity = case
    for i in range(len(seqs)):
        yield seqs[:i] + seqs[i + 1:], block_size, capacity
    for i, tokens in enumerate(seqs):
        for cut in sorted({block_size, 1}):
            if len(tokens) >= cut:
                yield seqs[:i] + [tokens[:-cut]] + seqs[i + 1:], block_size, capacity
    if capacity > 1:
        yield seqs, block_size, capacity - 1
    if block_size > 1:
        yield seqs, block_size - 1, capacity


def smallest_mismatch(fn: Callable[..., Any], trials: int = 300,
                      seed: int = 0) -> tuple[list[list[int]], int, int] | None:
    """The smallest disagreeing (token_sequences, block_size, capacity_blocks), or None."""
    rng = random.Random(seed)
    for _ in range(trials):
        seqs = [[rng.randrange(3) for _ in range(rng.randrange(0, 13))] for _ in range(rng.randrange(1, 7))]
        case = (seqs, rng.randrange(1, 4), rng.randrange(1, 9))
        if differences(fn, *case):
            improved = True
            while improved:
                improved = False
                for smaller in _simpler(case):
                    if differences(fn, *smaller):
                        case, improved = smaller, True
                        break
            return case
    return None


def check_against_library(namespace: Any, *, trials: int = 300,
                          lang: str | None = None) -> tuple[list[list[int]], int, int] | None:
    """What Step 6 calls (``check_against_library(globals())``): prints the result in the notebook's language
    and returns the smallest disagreeing case, or None."""
    if lang is None and isinstance(namespace, Mapping):
        lang = namespace.get("EDITION")
    en = lang == "en"
    fn = namespace.get("simulate_prefix_cache") if isinstance(namespace, Mapping) else namespace
    if not callable(fn):
        print("simulate_prefix_cache is not defined: run its cell first." if en else
              "找不到 simulate_prefix_cache：先运行定义它的单元格。 | simulate_prefix_cache is not defined: run its cell first.")
        return None
    try:
        mismatch = smallest_mismatch(fn, trials)
    except NotImplementedError:
        print("TODO 0 is not done yet: finish it, then run this cell." if en else
              "TODO 0 还没完成：完成后再运行这个单元格。 | TODO 0 is not done yet: finish it, then run this cell.")
        return None
    if mismatch is None:
        print(f"match: all fields equal the library's on {trials} random workloads." if en else
              f"一致 | match: {trials} 个随机 workload 上与参考库逐字段相同。 | all fields equal on {trials} random workloads.")
        return None
    seqs, block_size, capacity = mismatch
    head = "smallest disagreeing case" if en else "最小的不一致例子 | smallest disagreeing case"
    print(f"{head}: simulate_prefix_cache({seqs}, block_size={block_size}, capacity_blocks={capacity})")
    for key, (mine, ref) in differences(fn, seqs, block_size, capacity).items():
        print(f"  {key}: yours={mine!r} library={ref!r}")
    return mismatch
