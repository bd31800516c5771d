"""A live command's result (``hitrate``, ``sessions``, ``replay``, ``isolation``): built while its run fills it
in (``LiveRunResult``) and loaded back into types for its report (``LiveResult``).

``LiveRunResult`` holds the typed sections (``Prediction``, ``Evidence``, ``RequestRow`` ...) and turns them into
JSON only in ``to_json``, right before the result is written (while running, and at the end), in one key order
per command (``SECTIONS``) whichever path the run took: a run that failed before measuring writes the sections it
has in the same order as a measured one.

``core.records.validate`` has checked every field the report reads; ``LiveResult.from_json`` then reads each
section once, here, so that ``report.live`` reads attributes. A section a run could not produce (a failed run has
no prediction) is absent or null in the file: it loads as ``None``, or as an empty mapping for the command's own
sections, and the report prints ``n/a`` for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .records import SCHEMA_HITRATE, SCHEMA_ISOLATION, SCHEMA_REPLAY, SCHEMA_SESSIONS
from .sections import section
from .attribution_records import AttributionSummary
from .live_records import HitRates, Prediction

HEADER = ("schema", "status", "error", "started_at", "config", "warnings", "phases", "timing", "server")
"""Every live result begins with these, from the moment the run starts."""

SECTIONS: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    SCHEMA_HITRATE: (("chat_template",),
                     ("backend_counters", "measured", "replicas", "prediction", "kv_events", "hit_rates", "engines",
                      "summary", "speedup", "requests", "routing", "evidence_agreement", "attribution", "timeline",
                      "verdict")),
    SCHEMA_SESSIONS: ((), ("prediction", "hit_rates", "requests", "measured", "backend_counters", "summary",
                           "per_turn", "attribution", "baseline", "verdict")),
    SCHEMA_REPLAY: (("skipped",), ("prediction", "hit_rates", "requests", "measured", "backend_counters", "summary",
                                   "attribution", "trace_hit_rate", "verdict")),
    SCHEMA_ISOLATION: ((), ("prediction", "hit_rates", "requests", "isolation", "verdict", "cost")),
}
"""Each command's own sections: those its phases add while running (before ``environment`` and ``finished_at``)
and those the measured phase's evidence, prediction and verdict add after it; a section a run did not produce is
left out (``None`` is written as null: a section that exists and says nothing was measured)."""


def as_json(value: Any) -> Any:
    """A section as JSON: a record's ``to_json()``, a list of them, or JSON already."""
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, list):
        return [as_json(item) for item in value]
    return value


@dataclass
class LiveRunResult:
    """A live command's result while its run fills it in (``run.live``): the header every command shares, then
    the command's own sections (``put``), written in ``SECTIONS``' order."""

    schema: str
    started_at: str
    config: dict[str, Any]
    status: str = "running"
    """``running`` until ``run.live.finish``: then ok, partial, failed or interrupted."""
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    phases: dict[str, Any] = field(default_factory=dict)
    timing: dict[str, float] = field(default_factory=dict)
    server: dict[str, Any] = field(default_factory=dict)
    """What the probe read of the server (its published cache configuration, block and pool size, version)."""
    phase: str | None = None
    """The phase under way, written only while the run is under way."""
    environment: dict[str, Any] | None = None
    finished_at: str | None = None
    sections: dict[str, Any] = field(default_factory=dict)

    def put(self, **sections: Any) -> None:
        """Set the command's own sections (a name outside ``SECTIONS[schema]`` is a programming error)."""
        early, late = SECTIONS[self.schema]
        for name in sections:
            if name not in early and name not in late:
                raise KeyError(f"{self.schema} has no section {name!r}")
        self.sections.update(sections)

    def to_json(self) -> dict[str, Any]:
        early, late = SECTIONS[self.schema]
        data: dict[str, Any] = {key: getattr(self, key) for key in HEADER}
        data.update((name, as_json(self.sections[name])) for name in early if name in self.sections)
        if self.phase is not None:
            data["phase"] = self.phase
        if self.finished_at is not None:
            data.update(environment=self.environment, finished_at=self.finished_at)
        data.update((name, as_json(self.sections[name])) for name in late if name in self.sections)
        return data


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
class IsolationVerdict:
    """``isolation``'s verdict on its probe: PASS / FAIL / UNKNOWN, the requests that hit another salt's blocks,
    one reason per finding (``run.isolation.isolation_verdict``); the report reads it as a ``Verdict``."""

    verdict: str
    leaks: Sequence[str]
    reasons: Sequence[str]

    def to_json(self) -> dict:
        return {"verdict": self.verdict, "leaks": list(self.leaks), "reasons": list(self.reasons)}


@dataclass(frozen=True)
class SaltedPhase:
    """One tenant workload of ``isolation``'s cost phase: its hit rate predicted and measured (``None``: not
    every request finished, or one had no figure)."""

    requests: int | None
    """``None`` only where a file read back lacks it."""
    query_tokens: int | None
    predicted_hit_rate: float | None
    measured_hit_rate: float | None

    def to_json(self) -> dict:
        return {"requests": self.requests, "query_tokens": self.query_tokens,
                "predicted_hit_rate": self.predicted_hit_rate, "measured_hit_rate": self.measured_hit_rate}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SaltedPhase:
        return cls(data.get("requests"), data.get("query_tokens"), data.get("predicted_hit_rate"),
                   data.get("measured_hit_rate"))


@dataclass(frozen=True)
class SaltingCost:
    """What a salt per tenant costs against no salt, in hit-rate points (unsalted - salted), predicted and
    measured (``run.isolation.salting_cost`` builds it with ``of``; a file is read back as written)."""

    salted: SaltedPhase
    unsalted: SaltedPhase
    predicted_cost_points: float | None
    measured_cost_points: float | None

    @classmethod
    def of(cls, salted: SaltedPhase, unsalted: SaltedPhase) -> SaltingCost:
        def points(a: float | None, b: float | None) -> float | None:
            return (a - b) * 100 if a is not None and b is not None else None

        return cls(salted, unsalted, points(unsalted.predicted_hit_rate, salted.predicted_hit_rate),
                   points(unsalted.measured_hit_rate, salted.measured_hit_rate))

    def to_json(self) -> dict:
        return {"salted": self.salted.to_json(), "unsalted": self.unsalted.to_json(),
                "predicted_cost_points": self.predicted_cost_points,
                "measured_cost_points": self.measured_cost_points}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SaltingCost | None:
        """``None`` for a result without the section."""
        if not data:
            return None
        return cls(SaltedPhase.from_json(section(data, "salted")), SaltedPhase.from_json(section(data, "unsalted")),
                   data.get("predicted_cost_points"), data.get("measured_cost_points"))


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
        return cls(
            status=data.get("status"), error=data.get("error"), config=section(data, "config"),
            server=Server(server.get("backend"), server.get("block_size"), server.get("num_blocks"),
                          server.get("max_model_len")),
            reset_status=section(section(data, "phases"), "reset").get("status", reset_missing),
            warnings=data.get("warnings") or [],
            hit_rates=HitRates.from_json(rates) if isinstance(rates, Mapping) else None,
            prediction=Prediction.from_json(prediction) if isinstance(prediction, Mapping) else None,
            attribution=AttributionSummary.of_result(data),
            verdict=Verdict.from_json(section(data, "verdict")), requests=data.get("requests") or [],
            sections=data)

    def part(self, key: str) -> Mapping[str, Any]:
        """A command's own section (``cost``, ``skipped``, ``trace_hit_rate``, ``baseline`` ...), empty if absent."""
        return section(self.sections, key)

    def rows(self, key: str) -> Sequence[Mapping[str, Any]]:
        """A command's own list section (``per_turn``), empty if absent."""
        return self.sections.get(key) or []
