"""How sure a G1-vs-G0 difference is, as records: the unpaired bootstrap intervals (``decision.confidence``) and
the per-request paired ones (``decision.pairing``), each with the method that drew them.

The paired summary and each load point of a sweep hold them; ``to_json`` writes the keys in the files' order, in
both shapes an interval has: measured, or ``estimate`` ``None`` with the reason and only the counts beside it.
``from_json`` reads what a file holds (a missing key reads as ``None``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Mapping, Protocol


def _mapping(data: Any) -> Mapping:
    return data if isinstance(data, Mapping) else {}


class Interval(Protocol):
    """What a decision reads of either kind of interval."""

    @property
    def estimate(self) -> float | None: ...
    @property
    def ci_low(self) -> float | None: ...
    @property
    def ci_high(self) -> float | None: ...
    @property
    def includes_zero(self) -> bool | None: ...
    @property
    def reason(self) -> str | None: ...


def bounds(interval: Interval | None) -> tuple[float, float, float] | None:
    """``(estimate, ci_low, ci_high)`` of an interval that has its numbers, else ``None`` (too few values, or a
    file that lacks one): the one test every reader of an interval makes before it uses them."""
    if interval is None or interval.estimate is None or interval.ci_low is None or interval.ci_high is None:
        return None
    return interval.estimate, interval.ci_low, interval.ci_high


@dataclass(frozen=True)
class BootstrapInterval:
    """One unpaired difference (G0's statistic minus G1's, or G1 - G0 for throughput) with its percentile
    interval, and the values and repeats each group gave; ``estimate`` ``None`` with ``reason`` when a group had
    too few."""

    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    includes_zero: bool | None
    g0_values: int | None
    g1_values: int | None
    g0_repeats: int | None
    g1_repeats: int | None
    reason: str | None
    meaning: str | None = None
    """What the sign means (``differences`` adds it; ``None``: not written)."""

    def negated(self) -> BootstrapInterval:
        """G1 - G0 instead of G0 - G1 (throughput: more is better)."""
        found = bounds(self)
        if found is None:
            return self
        estimate, low, high = found
        return replace(self, estimate=-estimate, ci_low=-high, ci_high=-low)

    def to_json(self) -> dict:
        data = {"estimate": self.estimate, "ci_low": self.ci_low, "ci_high": self.ci_high,
                "includes_zero": self.includes_zero, "g0_values": self.g0_values, "g1_values": self.g1_values,
                "g0_repeats": self.g0_repeats, "g1_repeats": self.g1_repeats, "reason": self.reason}
        return data if self.meaning is None else {**data, "meaning": self.meaning}

    @classmethod
    def from_json(cls, data: Any) -> BootstrapInterval:
        data = _mapping(data)
        return cls(**{f.name: data.get(f.name) for f in fields(cls)})


@dataclass(frozen=True)
class BootstrapDifferences:
    """``decision.confidence.differences``: TTFT p50, TPOT p50 and output throughput, G1 against G0."""

    method: str | None
    level: float | None
    resamples: int | None
    seed: int | None
    ttft_p50_gain_ms: BootstrapInterval
    tpot_p50_gain_ms: BootstrapInterval
    throughput_gain_tokens_per_s: BootstrapInterval

    def to_json(self) -> dict:
        return {"method": self.method, "level": self.level, "resamples": self.resamples, "seed": self.seed,
                "ttft_p50_gain_ms": self.ttft_p50_gain_ms.to_json(),
                "tpot_p50_gain_ms": self.tpot_p50_gain_ms.to_json(),
                "throughput_gain_tokens_per_s": self.throughput_gain_tokens_per_s.to_json()}

    @classmethod
    def from_json(cls, data: Any) -> BootstrapDifferences | None:
        """``None`` for a file without the intervals (written before them) or with something else there."""
        if not isinstance(data, Mapping) or not data:
            return None
        return cls(data.get("method"), data.get("level"), data.get("resamples"), data.get("seed"),
                   BootstrapInterval.from_json(data.get("ttft_p50_gain_ms")),
                   BootstrapInterval.from_json(data.get("tpot_p50_gain_ms")),
                   BootstrapInterval.from_json(data.get("throughput_gain_tokens_per_s")))


@dataclass(frozen=True)
class PairedSpread:
    """A measured paired difference's detail: its standard error, the median pair, the blocks, the Monte-Carlo
    percentile interval, the unpaired interval of the same estimand, both widths, the share of the unpaired
    width the pairing removed, the pairs' covariance and the sign-flip p-value."""

    se: float
    median_difference: float
    blocks: int
    percentile_ci_low: float
    percentile_ci_high: float
    unpaired_se: float
    unpaired_ci_low: float
    unpaired_ci_high: float
    ci_width: float
    unpaired_ci_width: float
    spread_removed: float | None
    """``None`` when the unpaired interval has no width."""
    pair_covariance: float
    p_value: float

    def to_json(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, data: Mapping) -> PairedSpread | None:
        """``None`` for an interval written without its detail (too few pairs)."""
        if "se" not in data:
            return None
        values: dict[str, Any] = {f.name: data.get(f.name) for f in fields(cls)}
        return cls(**values)


@dataclass(frozen=True)
class PairedInterval:
    """One paired difference (mean over repeats of the mean block difference G0 - G1) with its interval, or
    ``estimate`` ``None`` with ``reason`` when fewer than two requests succeeded in both groups."""

    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    includes_zero: bool | None
    pairs: int | None
    repeats: int | None
    reason: str | None
    spread: PairedSpread | None = None
    """Written between ``includes_zero`` and ``pairs`` when measured."""
    meaning: str | None = None

    @property
    def spread_removed(self) -> float | None:
        return self.spread.spread_removed if self.spread is not None else None

    def to_json(self) -> dict:
        data = {"estimate": self.estimate, "ci_low": self.ci_low, "ci_high": self.ci_high,
                "includes_zero": self.includes_zero, **(self.spread.to_json() if self.spread is not None else {}),
                "pairs": self.pairs, "repeats": self.repeats, "reason": self.reason}
        return data if self.meaning is None else {**data, "meaning": self.meaning}

    @classmethod
    def from_json(cls, data: Any) -> PairedInterval:
        data = _mapping(data)
        return cls(data.get("estimate"), data.get("ci_low"), data.get("ci_high"), data.get("includes_zero"),
                   data.get("pairs"), data.get("repeats"), data.get("reason"), PairedSpread.from_json(data),
                   data.get("meaning"))


@dataclass(frozen=True)
class PairedDifferences:
    """``decision.pairing.paired_differences``: TTFT, TPOT and E2E, each paired request by request (positive:
    G1 is faster); the decision reads the TTFT one."""

    method: str | None
    level: float | None
    resamples: int | None
    permutations: int | None
    seed: int | None
    ttft_gain_ms: PairedInterval
    tpot_gain_ms: PairedInterval
    e2e_gain_ms: PairedInterval

    def gains(self) -> dict[str, PairedInterval]:
        """By the key the file holds each under."""
        return {"ttft_gain_ms": self.ttft_gain_ms, "tpot_gain_ms": self.tpot_gain_ms,
                "e2e_gain_ms": self.e2e_gain_ms}

    def to_json(self) -> dict:
        return {"method": self.method, "level": self.level, "resamples": self.resamples,
                "permutations": self.permutations, "seed": self.seed,
                **{key: gain.to_json() for key, gain in self.gains().items()}}

    @classmethod
    def from_json(cls, data: Any) -> PairedDifferences | None:
        """``None`` for a file without them (written before them) or with something else there."""
        if not isinstance(data, Mapping) or not data:
            return None
        return cls(data.get("method"), data.get("level"), data.get("resamples"), data.get("permutations"),
                   data.get("seed"), PairedInterval.from_json(data.get("ttft_gain_ms")),
                   PairedInterval.from_json(data.get("tpot_gain_ms")),
                   PairedInterval.from_json(data.get("e2e_gain_ms")))
