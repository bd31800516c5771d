"""A live command's result (``sessions``, ``replay``, ``isolation``) loaded back into types for its report.

``core.records.validate`` has checked every field the report reads; ``LiveResult.from_json`` then reads each
section once, here, so that ``report.live`` reads attributes. A section a run could not produce (a failed run has
no prediction) is absent or null in the file: it loads as ``None``, or as an empty mapping for the command's own
sections, and the report prints ``n/a`` for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .sections import section
from .live_records import AttributionSummary, HitRates, Prediction


@dataclass(frozen=True)
class Server:
    backend: str | None
    block_size: int | None
    num_blocks: int | None
    max_model_len: int | None


@dataclass(frozen=True)
class LatencyCheck:
    """One latency check of a verdict: what was checked, the value it saw (``None``: not measured), passed."""

    check: str
    value: float | None
    ok: bool

    def to_json(self) -> dict:
        return {"check": self.check, "value": self.value, "ok": self.ok}


@dataclass(frozen=True)
class Verdict:
    """A run's verdict: ``decision.verdict`` writes GOOD / MARGINAL / POOR / UNKNOWN with the reference it was
    judged against, the gap, the latency checks and the rules; the live reports read the verdict and its reasons
    (``isolation`` writes its own PASS / FAIL with more keys, read the same way)."""

    verdict: str
    reasons: Sequence[str]
    reference: str | None = None
    """``predicted`` or ``target``; ``None`` when nothing was measured (the file then holds verdict, reasons and
    rules only)."""
    gap_points: float | None = None
    latency_checks: Sequence[LatencyCheck] = ()
    rules: str | None = None

    def to_json(self) -> dict:
        if self.reference is None:
            return {"verdict": self.verdict, "reasons": list(self.reasons), "rules": self.rules}
        return {"verdict": self.verdict, "reference": self.reference, "gap_points": self.gap_points,
                "reasons": list(self.reasons), "latency_checks": [c.to_json() for c in self.latency_checks],
                "rules": self.rules}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Verdict:
        return cls(data.get("verdict", "UNKNOWN"), data.get("reasons") or [], data.get("reference"),
                   data.get("gap_points"),
                   tuple(LatencyCheck(c["check"], c.get("value"), c["ok"]) for c in data.get("latency_checks") or []),
                   data.get("rules"))


@dataclass(frozen=True)
class LiveResult:
    """What every live report reads, and each command's own sections (``sections``, as written)."""

    status: str | None
    error: str | None
    config: Mapping[str, Any]
    server: Server
    reset_status: str
    warnings: Sequence[str]
    hit_rates: HitRates | None
    prediction: Prediction | None
    attribution: AttributionSummary | None
    verdict: Verdict
    requests: Sequence[Mapping[str, Any]]
    sections: Mapping[str, Any]
    """The whole result, for a command's own sections (``per_turn``, ``cost``, ``skipped`` ...)."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any], reset_missing: str) -> LiveResult:
        """``reset_missing``: what to show for a run that never got to the reset."""
        server, rates, prediction = section(data, "server"), data.get("hit_rates"), data.get("prediction")
        summary = section(data, "attribution").get("summary")
        return cls(
            status=data.get("status"), error=data.get("error"), config=section(data, "config"),
            server=Server(server.get("backend"), server.get("block_size"), server.get("num_blocks"),
                          server.get("max_model_len")),
            reset_status=section(section(data, "phases"), "reset").get("status", reset_missing),
            warnings=data.get("warnings") or [],
            hit_rates=HitRates.from_json(rates) if isinstance(rates, Mapping) else None,
            prediction=Prediction.from_json(prediction) if isinstance(prediction, Mapping) else None,
            attribution=AttributionSummary.from_json(summary) if summary else None,
            verdict=Verdict.from_json(section(data, "verdict")), requests=data.get("requests") or [],
            sections=data)

    def part(self, key: str) -> Mapping[str, Any]:
        """A command's own section (``cost``, ``skipped``, ``trace_hit_rate``, ``baseline`` ...), empty if absent."""
        return section(self.sections, key)

    def rows(self, key: str) -> Sequence[Mapping[str, Any]]:
        """A command's own list section (``per_turn``), empty if absent."""
        return self.sections.get(key) or []
