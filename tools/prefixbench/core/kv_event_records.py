"""The KV-event check: the blocks a vLLM server published (cached, reported as a hit, evicted) walked beside the
engine model's, to the first event that differs.

``simulate.block_events.compare_block_events`` builds a ``KvEventCheck``; ``hitrate`` writes it as its
``kv_events`` section with the publisher's address and errors (``KvEventSection``); the timeline replay of
overlapping requests writes its own walk with each differing request's cause (``TimelineEvents``,
``simulate.overlap_events``). Each writes the keys in the order the files always had and reads them back, for the
hit-rate report's evidence section, after ``core.records.validate`` has checked the fields it reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .flat_records import FlatRecord
from .sections import section


@dataclass(frozen=True)
class EventSide(FlatRecord):
    """One side's event at a divergence: its kind and the block it names ("request R block i", or why none)."""

    kind: str | None
    block: str | None


@dataclass(frozen=True)
class Divergence:
    """Where the two event lists first differ: the event's index, the request and block the model expected there,
    and each side's event (``None``: that list had ended)."""

    event: int | None = None
    request: str | None = None
    block: int | None = None
    expected: EventSide | None = None
    seen: EventSide | None = None

    def to_json(self) -> dict:
        return {"event": self.event, "request": self.request, "block": self.block,
                "expected": None if self.expected is None else self.expected.to_json(),
                "seen": None if self.seen is None else self.seen.to_json()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Divergence | None:
        if not isinstance(data, Mapping):
            return None
        expected, seen = section(data, "expected"), section(data, "seen")
        return cls(data.get("event"), data.get("request"), data.get("block"),
                   EventSide.from_json(expected) if expected else None, EventSide.from_json(seen) if seen else None)


@dataclass(frozen=True)
class KvEventCheck:
    """The server's KV events against the engine model's, event by event: ``agree`` / ``diverged`` /
    ``incomplete`` / ``not_comparable`` / ``not_run`` with the reason, and where they first diverged.

    A check that walked the events (``events_expected`` known) writes the counts, whether hits were published and
    the batches received; one that could not walk them (the engine model did not run) writes its status, reason
    and a null divergence only."""

    status: str | None
    reason: str | None
    events_expected: int | None = None
    events_seen: int | None = None
    """``None`` when the events could not be aligned (the cache was not reset)."""
    first_divergence: Divergence | None = None
    hits_published: bool | None = None
    """The server was asked to publish a hit as ``BlockStored`` (``cache.engine_pool``'s ``report_hits``)."""
    batches: int | None = None

    @property
    def walked(self) -> bool:
        return self.events_expected is not None

    def to_json(self) -> dict:
        divergence = None if self.first_divergence is None else self.first_divergence.to_json()
        if not self.walked:
            return {"status": self.status, "reason": self.reason, "first_divergence": divergence}
        return {"events_expected": self.events_expected, "events_seen": self.events_seen,
                "first_divergence": divergence, "hits_published": self.hits_published, "batches": self.batches,
                "status": self.status, "reason": self.reason}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> KvEventCheck | None:
        if not data:
            return None
        return cls(data.get("status"), data.get("reason"), data.get("events_expected"), data.get("events_seen"),
                   Divergence.from_json(data.get("first_divergence")), data.get("hits_published"),
                   data.get("batches"))

    def describe(self) -> str:
        """One line: what was compared and how it came out."""
        counted = f"{_count(self.events_seen)} events seen, {_count(self.events_expected)} expected"
        if self.status == "agree":
            return f"agree: {counted}"
        if self.status == "diverged":
            where = self.first_divergence or Divergence()
            return (f"diverged at event {_count(where.event)} (request {where.request or 'n/a'}, block "
                    f"{_count(where.block)}): expected {_event(where.expected)}, seen {_event(where.seen)}; "
                    f"{counted}")
        return f"{self.status or 'n/a'}: {self.reason or 'no reason given'}"


@dataclass(frozen=True)
class KvEventSection:
    """``hitrate``'s ``kv_events`` section: the address the publisher connected to, the first errors receiving
    its batches, and the check."""

    endpoint: str | None
    errors: Sequence[str]
    check: KvEventCheck

    def to_json(self) -> dict:
        return {"endpoint": self.endpoint, "errors": list(self.errors), **self.check.to_json()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> KvEventSection | None:
        check = KvEventCheck.from_json(data)
        if not data or check is None:
            return None
        errors = data.get("errors")
        return cls(data.get("endpoint"), list(errors) if isinstance(errors, list) else [], check)


@dataclass(frozen=True)
class EventCause(FlatRecord):
    """What the server's events say of a request whose hit differs from the timeline's: the cause, the first
    differing block, whether an event shows it, and the event named."""

    cause: str | None
    block: int | None
    confirmed: bool | None
    detail: str | None


_TIMELINE_KEYS = ("status", "reason", "first_divergence", "events_expected", "events_seen")
"""What the timeline writes of its walk, in the files' order (not whether hits were published, nor the batches)."""


@dataclass(frozen=True)
class TimelineEvents:
    """The timeline's KV events, replayed at the arrivals it inferred, against the server's (``check``), and each
    differing request's cause by name; a replay that did not run writes its status and reason only
    (``causes`` ``None``)."""

    check: KvEventCheck
    causes: Mapping[str, EventCause] | None = None

    def to_json(self) -> dict:
        walked = self.check.to_json()
        if self.causes is None:
            return {key: walked[key] for key in ("status", "reason")}
        return {**{key: walked[key] for key in _TIMELINE_KEYS},
                "causes": {name: cause.to_json() for name, cause in self.causes.items()}}

    @classmethod
    def not_run(cls, reason: str) -> TimelineEvents:
        return cls(KvEventCheck("not_run", reason))

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> TimelineEvents | None:
        check = KvEventCheck.from_json(data)
        if not data or check is None:
            return None
        causes = data.get("causes")
        return cls(check, {name: EventCause.from_json(cause) for name, cause in causes.items()
                           if isinstance(cause, Mapping)} if isinstance(causes, Mapping) else None)

    def describe(self) -> str:
        return self.check.describe()


def _count(value: int | None) -> str:
    return "n/a" if value is None else f"{value:,}"


def _event(event: EventSide | None) -> str:
    if event is None:
        return "none"
    return f"{event.kind or '?'} of {event.block or 'an unnamed block'}"
