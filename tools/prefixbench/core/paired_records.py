"""The paired summary (``decision.paired``) as records: the overhead, the engine-clock signal, the decision, and
the whole summary around ``group_records.SideBySide``.

``decision.paired.summarize`` builds a ``PairedSummary``; ``to_json`` runs where it is written (the summary
manifest, ``paired_summary()`` for a notebook) and gives the keys in the order the files have always had, so
the files stay byte for byte what they were; ``from_json`` reads a summary's ``paired_summary`` back for the
report. The bootstrap intervals (``confidence``, ``paired``) and G1's replica rows (``routing``) are kept as
the mappings their modules write: the report reads a few keys of each, and each has its own shape per
difference.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from .group_records import SideBySide
from .interval_records import BootstrapDifferences, PairedDifferences
from .sections import section


@dataclass(frozen=True)
class Overhead:
    """G1's decode slowdown over G0 (``decision.paired.OVERHEAD_DEFINITION``); ``source`` says which clock."""

    definition: str
    source: str | None
    g0: float | None
    g1: float | None
    client_tpot_p50_ratio: float | None
    server_tpot_mean_ratio: float | None

    def to_json(self) -> dict:
        return {"definition": self.definition, "source": self.source, "g0": self.g0, "g1": self.g1,
                "client_tpot_p50_ratio": self.client_tpot_p50_ratio,
                "server_tpot_mean_ratio": self.server_tpot_mean_ratio}

    @classmethod
    def from_json(cls, data: Any) -> Overhead:
        d = data if isinstance(data, Mapping) else {}
        return cls(d.get("definition", ""), d.get("source"), d.get("g0"), d.get("g1"),
                   d.get("client_tpot_p50_ratio"), d.get("server_tpot_mean_ratio"))


@dataclass(frozen=True)
class ServerSignal:
    """The engine-clock TTFT gain beside the client's paired one, and whether they agree."""

    server_ttft_gain_ms: float | None
    client_paired_ttft_gain_ms: float | None
    basis: str
    agreement: str
    """``agree``, ``disagree``, ``client_unsure`` or ``unknown``."""
    note: str

    def to_json(self) -> dict:
        return {"server_ttft_gain_ms": self.server_ttft_gain_ms,
                "client_paired_ttft_gain_ms": self.client_paired_ttft_gain_ms, "basis": self.basis,
                "agreement": self.agreement, "note": self.note}

    @classmethod
    def from_json(cls, data: Any) -> ServerSignal | None:
        """``None`` for a summary written before the signal existed (absent, null or empty)."""
        if not isinstance(data, Mapping) or not data:
            return None
        return cls(data.get("server_ttft_gain_ms"), data.get("client_paired_ttft_gain_ms"), data.get("basis", ""),
                   data.get("agreement", "unknown"), data.get("note", ""))


@dataclass(frozen=True)
class Decision:
    """accept / tune / reject with its reason and next action; ``decision`` is ``None`` when a group failed.

    ``inputs``, ``checks`` and ``comparison`` are there only when the chapter's rule ran (both groups measured
    a hit rate and TTFT / TPOT); a ``tune`` for missing evidence or a failure has none."""

    status: str
    decision: str | None
    reason: str
    next_action: str
    inputs: Mapping | None = None
    checks: Mapping | None = None
    comparison: Mapping | None = None

    def with_note(self, note: str) -> Decision:
        """The same decision, its reason followed by ``note``."""
        return Decision(self.status, self.decision, f"{self.reason}; {note}", self.next_action, self.inputs,
                        self.checks, self.comparison)

    def to_json(self) -> dict:
        if self.inputs is None:
            return {"status": self.status, "decision": self.decision, "next_action": self.next_action,
                    "reason": self.reason}
        return {"status": self.status, "decision_inputs": self.inputs, "decision": self.decision,
                "reason": self.reason, "next_action": self.next_action, "checks": self.checks,
                "comparison": self.comparison}

    @classmethod
    def from_json(cls, data: Mapping) -> Decision:
        return cls(data.get("status", "unknown"), data.get("decision"), data.get("reason") or "",
                   data.get("next_action") or "", data.get("decision_inputs"), data.get("checks"),
                   data.get("comparison"))


@dataclass(frozen=True)
class Thresholds:
    """The decision's bounds (``None`` only where a file read back lacks one)."""

    min_hit_rate: float | None
    max_overhead: float | None


@dataclass(frozen=True)
class PairedSummary:
    """Both groups side by side, the overhead, the intervals, G1's replicas and the decision."""

    side: SideBySide
    overhead: Overhead
    thresholds: Thresholds
    evidence_level: str
    repeats: tuple[int | None, int | None]
    """Runs of G0 and of G1."""
    confidence: BootstrapDifferences | None
    """``decision.confidence.differences``: the unpaired bootstrap intervals (``None``: a summary from before
    them)."""
    paired: PairedDifferences | None
    """``decision.pairing.paired_differences``: the per-request G0 - G1 intervals the decision reads."""
    routing: Mapping | None
    server_ttft_signal: ServerSignal | None
    decision: Decision

    def to_json(self) -> dict:
        signal = self.server_ttft_signal.to_json() if self.server_ttft_signal is not None else None
        return {**self.side.to_json(), "overhead": self.overhead.to_json(),
                "thresholds": {"min_hit_rate": self.thresholds.min_hit_rate,
                               "max_overhead": self.thresholds.max_overhead},
                "evidence_level": self.evidence_level, "repeats": {"g0": self.repeats[0], "g1": self.repeats[1]},
                "confidence": self.confidence.to_json() if self.confidence is not None else {},
                "paired": self.paired.to_json() if self.paired is not None else {}, "routing": self.routing,
                "server_ttft_signal": signal, **self.decision.to_json()}

    @classmethod
    def from_json(cls, data: Mapping) -> PairedSummary:
        """A summary manifest's ``paired_summary``; sections an older summary lacks read as empty or ``None``."""
        thresholds, repeats = section(data, "thresholds"), section(data, "repeats")
        return cls(side=SideBySide.from_json(data), overhead=Overhead.from_json(data.get("overhead")),
                   thresholds=Thresholds(thresholds.get("min_hit_rate"), thresholds.get("max_overhead")),
                   evidence_level=data.get("evidence_level", ""), repeats=(repeats.get("g0"), repeats.get("g1")),
                   confidence=BootstrapDifferences.from_json(data.get("confidence")),
                   paired=PairedDifferences.from_json(data.get("paired")),
                   routing=data.get("routing") if isinstance(data.get("routing"), Mapping) else None,
                   server_ttft_signal=ServerSignal.from_json(data.get("server_ttft_signal")),
                   decision=Decision.from_json(data))
