"""G0 and G1 request by request: paired differences, their bootstrap interval over pairs, a permutation test.

Every request of the workload goes to both groups, so the two measurements of one request are a pair: request
``i`` of repeat ``r`` in G0 and the same request of the same repeat in G1 (matched by ``id``; rows without ids
by position). The difference ``d = G0 - G1`` of a pair is what caching changed for that request; a change of the
machine's load that hits both members of a pair (the interleaved schedule sends them back to back) cancels in
``d``, while the unpaired comparison keeps it as spread.

The resampling unit is a **block of pairs**: two consecutive requests, i.e. one ABBA block of the interleaved
schedule (``run.interleave``: request ``2k`` goes G0 first, request ``2k + 1`` G1 first). Whatever the order
costs the member sent second (measured on 2 cores: about twice the TTFT for a server that sat idle while the
other one served) cancels inside a block, so it widens nothing. A block's value is the mean of its pairs; the
statistic is the mean over repeats of the mean of the repeat's blocks (for an even number of requests, the
mean over all pairs). Its interval comes from the two-stage bootstrap: repeats drawn with replacement, then
blocks with replacement inside each drawn repeat, a block (and so each pair) always resampled whole. The
interval used for the decision is the bootstrap's normal interval from the *ideal* bootstrap variance (``B`` =
infinity, computed in closed form, so no Monte-Carlo error): ``estimate +- z * se``. A Monte-Carlo percentile
interval of the same bootstrap (``percentile_ci_*``) and the median pair difference are kept beside it.

Why the ideal variance: it makes the comparison with the unpaired interval exact. With ``R`` repeats, repeat
``r`` holding ``m_r`` blocks, per-repeat means ``mu_r`` and population (divisor ``m_r``) variances ``s2_r`` of
its block values::

    V(x) = (1/R) * [ (1/R) sum_r (mu_r - mean mu)^2 + (1/R) sum_r s2_r / m_r ]

is the bootstrap variance of the statistic for values ``x`` (law of total variance over the two stages).
Unpaired, G0 and G1 are resampled independently: ``V_u = V(x0) + V(x1)``. Paired: ``V_p = V(x0 - x1) =
V_u - 2 C / R`` with ``C = (1/R) sum_r (mu0_r - mean mu0)(mu1_r - mean mu1) + (1/R) sum_r c_r / m_r``, ``c_r`` the
within-repeat covariance of G0's and G1's block values. So **the paired interval is never wider than the
unpaired one exactly when C >= 0** (the two groups covary non-negatively across pairs and repeats), and is wider
when they covary negatively. This is not true in general of every estimator (the median of differences and
difference of medians estimate different things and obey no such order); it is the condition the property test
checks, in both directions. Back-to-back pairs make C clearly positive under load changes.

Permutation test: under "caching changes nothing", G0 and G1 are exchangeable inside each block (its two
orders cancel), so flipping the sign of any block's difference gives an equally likely statistic; ``p_value`` is
two-sided, over ``PERMUTATIONS`` seeded random flips (exact enumeration for at most ``EXACT_PAIRS`` blocks).
"""

from __future__ import annotations

import itertools
import random
import statistics
from dataclasses import replace
from typing import Mapping, Sequence

from ..core.interval_records import PairedDifferences, PairedInterval, PairedSpread

LEVEL = 0.95
RESAMPLES = 2000
PERMUTATIONS = 5000
EXACT_PAIRS = 12
SEED = 0
MIN_PAIRS = 2
BLOCK = 2
"""Pairs per resampling block: one ABBA block (AB then BA)."""

METHOD = ("paired: per-request differences G0 - G1 (pairs matched by request id within each repeat), grouped in "
          "blocks of two consecutive requests (one ABBA block); statistic the mean over repeats of the mean block "
          "difference; interval estimate +- z * se with se the ideal (closed-form) two-stage bootstrap over "
          "repeats, then blocks inside them; a Monte-Carlo percentile interval of the same bootstrap beside it; "
          "two-sided sign-flip permutation p-value over blocks")

METRICS = {"ttft_ms": "ttft_gain_ms", "tpot_ms": "tpot_gain_ms", "e2e_ms": "e2e_gain_ms"}

Pairs = list[list[tuple[float, float]]]
"""One list per repeat of ``(g0_value, g1_value)``."""


def _rows(manifest: Mapping | None) -> list[list]:
    if not manifest:
        return []
    return [list(rep.get("requests") or []) if isinstance(rep, Mapping) else []
            for rep in (manifest.get("repeats") or [manifest])]


def _value(row: object, field: str) -> float | None:
    if not isinstance(row, Mapping) or row.get("status") != "ok":
        return None
    value = row.get(field)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _keyed(rows: list) -> dict:
    """Rows by request id; by position when a row has no id."""
    ids = [row.get("id") if isinstance(row, Mapping) else None for row in rows]
    if all(isinstance(i, str) for i in ids) and len(set(ids)) == len(ids):
        return dict(zip(ids, rows, strict=True))
    return dict(enumerate(rows))


def pair_values(g0: Mapping | None, g1: Mapping | None, field: str) -> Pairs:
    """Per repeat, the ``(G0, G1)`` values of ``field`` of every request that succeeded in both groups."""
    out: Pairs = []
    for rows0, rows1 in zip(_rows(g0), _rows(g1), strict=False):  # the repeats both groups ran
        k0, k1 = _keyed(rows0), _keyed(rows1)
        pairs = []
        for key, row0 in k0.items():
            a, b = _value(row0, field), _value(k1.get(key), field)
            if a is not None and b is not None:
                pairs.append((a, b))
        out.append(pairs)
    return [p for p in out if p]


def blocks_of(pairs: Pairs) -> Pairs:
    """Per repeat, each block of ``BLOCK`` consecutive pairs as one ``(mean G0, mean G1)`` (the last block of an
    odd count holds one pair)."""
    out: Pairs = []
    for rep in pairs:
        chunks = [rep[i:i + BLOCK] for i in range(0, len(rep), BLOCK)]
        out.append([(statistics.fmean(a for a, _ in c), statistics.fmean(b for _, b in c)) for c in chunks])
    return out


def _pop_var(values: Sequence[float]) -> float:
    return statistics.pvariance(values) if len(values) > 1 else 0.0


def _pop_cov(a: Sequence[float], b: Sequence[float]) -> float:
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    return sum((x - ma) * (y - mb) for x, y in zip(a, b, strict=True)) / len(a)


def ideal_bootstrap_variance(blocks: Sequence[Sequence[float]]) -> float:
    """The two-stage bootstrap variance of the mean of block means (blocks drawn, then values inside them)."""
    means = [statistics.fmean(b) for b in blocks]
    r = len(blocks)
    within = statistics.fmean(_pop_var(b) / len(b) for b in blocks)
    return (_pop_var(means) + within) / r


def pair_covariance(pairs: Pairs) -> float:
    """``C`` of the module docstring, over the blocks of ``pairs``: paired variance = unpaired variance - 2 C / R."""
    blocks = blocks_of(pairs)
    m0 = [statistics.fmean(a for a, _ in rep) for rep in blocks]
    m1 = [statistics.fmean(b for _, b in rep) for rep in blocks]
    between = _pop_cov(m0, m1)
    within = statistics.fmean(_pop_cov([a for a, _ in rep], [b for _, b in rep]) / len(rep) for rep in blocks)
    return between + within


def _statistic(blocks: Sequence[Sequence[float]]) -> float:
    return statistics.fmean(statistics.fmean(b) for b in blocks)


def _percentile(diffs: list[list[float]], level: float, resamples: int, seed: int) -> tuple[float, float]:
    rng = random.Random(seed)
    draws = sorted(_statistic([rng.choices(rep, k=len(rep)) for rep in rng.choices(diffs, k=len(diffs))])
                   for _ in range(resamples))
    low_at, high_at = (1 - level) / 2 * (resamples - 1), (1 - (1 - level) / 2) * (resamples - 1)
    return draws[round(low_at)], draws[round(high_at)]


def sign_flip_p_value(diffs: list[list[float]], permutations: int = PERMUTATIONS, seed: int = SEED) -> float:
    """Two-sided p-value of the statistic under random sign flips of whole pairs (exact for few pairs)."""
    flat = [(r, d) for r, rep in enumerate(diffs) for d in rep]
    sizes = [len(rep) for rep in diffs]

    def stat(signs: Sequence[int]) -> float:
        sums = [0.0] * len(diffs)
        for (r, d), s in zip(flat, signs, strict=True):
            sums[r] += s * d
        return abs(statistics.fmean(total / size for total, size in zip(sums, sizes, strict=True)))

    observed = stat([1] * len(flat)) - 1e-12 * (1 + abs(_statistic(diffs)))
    if len(flat) <= EXACT_PAIRS:
        flips = list(itertools.product((1, -1), repeat=len(flat)))
        return sum(stat(s) >= observed for s in flips) / len(flips)
    rng = random.Random(seed)
    hits = sum(stat([rng.choice((1, -1)) for _ in flat]) >= observed for _ in range(permutations))
    return (1 + hits) / (1 + permutations)


def _z(level: float) -> float:
    return statistics.NormalDist().inv_cdf(1 - (1 - level) / 2)


def paired_difference(pairs: Pairs, *, level: float = LEVEL, resamples: int = RESAMPLES,
                      permutations: int = PERMUTATIONS, seed: int = SEED) -> PairedInterval:
    """The paired difference G0 - G1 with its interval, the unpaired interval of the same estimand, the
    permutation p-value, and how much of the unpaired interval the pairing removed. Missing is ``None`` with
    the reason."""
    count = sum(map(len, pairs))
    if count < MIN_PAIRS:
        return PairedInterval(estimate=None, ci_low=None, ci_high=None, includes_zero=None, pairs=count,
                              repeats=len(pairs), reason=f"fewer than {MIN_PAIRS} requests succeeded in both groups; "
                                                         "nothing bounds the difference")
    blocks = blocks_of(pairs)
    diffs = [[a - b for a, b in rep] for rep in blocks]
    estimate, z = _statistic(diffs), _z(level)
    se = ideal_bootstrap_variance(diffs) ** 0.5
    se_unpaired = (ideal_bootstrap_variance([[a for a, _ in rep] for rep in blocks])
                   + ideal_bootstrap_variance([[b for _, b in rep] for rep in blocks])) ** 0.5
    low, high = estimate - z * se, estimate + z * se
    p_low, p_high = _percentile(diffs, level, resamples, seed)
    width, width_u = 2 * z * se, 2 * z * se_unpaired
    spread = PairedSpread(
        se=se, median_difference=statistics.median(a - b for rep in pairs for a, b in rep),
        blocks=sum(map(len, blocks)), percentile_ci_low=p_low, percentile_ci_high=p_high, unpaired_se=se_unpaired,
        unpaired_ci_low=estimate - z * se_unpaired, unpaired_ci_high=estimate + z * se_unpaired, ci_width=width,
        unpaired_ci_width=width_u, spread_removed=1 - width / width_u if width_u > 0 else None,
        pair_covariance=pair_covariance(pairs), p_value=sign_flip_p_value(diffs, permutations, seed))
    return PairedInterval(estimate=estimate, ci_low=low, ci_high=high, includes_zero=low <= 0 <= high, pairs=count,
                          repeats=len(pairs), reason=None, spread=spread)


def paired_differences(g0: Mapping | None, g1: Mapping | None, *, level: float = LEVEL,
                       resamples: int = RESAMPLES, seed: int = SEED) -> PairedDifferences:
    """TTFT, TPOT and E2E, each paired request by request (``*_gain_ms``: positive means G1 is faster)."""
    gains = {key: replace(paired_difference(pair_values(g0, g1, field), level=level, resamples=resamples, seed=seed),
                          meaning=f"mean over pairs of G0 {field} - G1 {field}; positive: G1 is faster")
             for field, key in METRICS.items()}
    return PairedDifferences(method=METHOD, level=level, resamples=resamples, permutations=PERMUTATIONS, seed=seed,
                             **gains)
