"""The timeline replay of requests that overlapped (``simulate.overlap``): each request's predicted hit at the
arrival the client's observations imply, beside the server's ``cached_tokens``, the totals, the requests left
unsettled, the KV events on the timeline and, with ``--twin vllm``, vLLM's own scheduler at the same arrivals.

``simulate.overlap.timeline_section`` builds a ``TimelineSection`` (``run.live.timeline`` one that did not run);
``hitrate`` writes it as its ``timeline`` section, the keys in the order the files always had, and the hit-rate
report reads it back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .flat_records import FlatRecord
from .kv_event_records import TimelineEvents


@dataclass(frozen=True)
class SchedulerAssumption(FlatRecord):
    """The scheduler limits the timeline steps with (the server publishes neither) and where they come from."""

    max_num_seqs: int | None
    max_num_batched_tokens: int | None
    source: str | None


@dataclass(frozen=True)
class TimelineRow:
    """One request of the measured phase: the timeline's hit, the server's, the arrival step it was placed at
    and, when the observations allow several, the range of hits (least, most)."""

    id: str
    predicted_hit_tokens: int | None
    cached_tokens: int | None
    arrival_step: int | None
    range: tuple[int, int] | None

    def to_json(self) -> dict:
        return {"id": self.id, "predicted_hit_tokens": self.predicted_hit_tokens, "cached_tokens": self.cached_tokens,
                "arrival_step": self.arrival_step, "range": None if self.range is None else list(self.range)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TimelineRow:
        span = data.get("range")
        return cls(data.get("id") or "?", data.get("predicted_hit_tokens"), data.get("cached_tokens"),
                   data.get("arrival_step"), (span[0], span[1]) if isinstance(span, list) and len(span) == 2 else None)


@dataclass(frozen=True)
class ReferenceReplay:
    """vLLM's own scheduler, driven in-process at the timeline's arrivals: its hits and how often they equal the
    timeline's and the server's; ``not_run`` with the reason writes those two only."""

    status: str
    reason: str | None = None
    model: str | None = None
    hits: Sequence[int | None] = ()
    agrees_with_timeline: int | None = None
    agrees_with_server: int | None = None

    def to_json(self) -> dict:
        if self.status != "ok":
            return {"status": self.status, "reason": self.reason}
        return {"status": self.status, "model": self.model, "hits": list(self.hits),
                "agrees_with_timeline": self.agrees_with_timeline, "agrees_with_server": self.agrees_with_server}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ReferenceReplay:
        hits = data.get("hits")
        return cls(data.get("status") or "?", data.get("reason"), data.get("model"),
                   list(hits) if isinstance(hits, list) else [], data.get("agrees_with_timeline"),
                   data.get("agrees_with_server"))


@dataclass(frozen=True)
class TimelineSection:
    """The ``timeline`` section. ``status`` ``ok``, or ``not_run`` with the reason (then nothing else is
    written)."""

    status: str | None
    reason: str | None = None
    model: str | None = None
    scheduler: SchedulerAssumption | None = None
    window_steps: int | None = None
    predicted_hit_tokens: int | None = None
    """The sum over the measured requests; ``None`` when one was not replayed."""
    requests_exact: int | None = None
    requests_that_differ: Sequence[str] = ()
    unsettled: Mapping[str, tuple[int, int] | None] = field(default_factory=dict)
    """Requests the observations leave unsettled -> the least and most hit they allow (``None``: a file read back
    whose range is not two numbers; the request is still counted)."""
    differ_outside_range: Sequence[str] = ()
    kv_events: TimelineEvents | None = None
    reference: ReferenceReplay | None = None
    """Written only when a reference model was asked for (``--twin vllm``)."""
    requests: Sequence[TimelineRow] = ()

    @classmethod
    def not_run(cls, reason: str) -> TimelineSection:
        return cls("not_run", reason)

    @property
    def unreported(self) -> int:
        """Requests the server reported no ``cached_tokens`` for (nothing to compare them with)."""
        return sum(1 for row in self.requests if row.cached_tokens is None)

    def to_json(self) -> dict:
        if self.status != "ok":
            return {"status": self.status, "reason": self.reason}
        out = {"status": self.status, "model": self.model,
               "scheduler": None if self.scheduler is None else self.scheduler.to_json(),
               "window_steps": self.window_steps, "predicted_hit_tokens": self.predicted_hit_tokens,
               "requests_exact": self.requests_exact, "requests_that_differ": list(self.requests_that_differ),
               "unsettled": {name: None if span is None else list(span) for name, span in self.unsettled.items()},
               "differ_outside_range": list(self.differ_outside_range),
               "kv_events": None if self.kv_events is None else self.kv_events.to_json()}
        if self.reference is not None:
            out["reference"] = self.reference.to_json()
        return out | {"requests": [row.to_json() for row in self.requests]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> TimelineSection | None:
        if not data:
            return None
        scheduler, reference, rows = data.get("scheduler"), data.get("reference"), data.get("requests")
        unsettled = data.get("unsettled")
        return cls(data.get("status"), data.get("reason"), data.get("model"),
                   SchedulerAssumption.from_json(scheduler) if isinstance(scheduler, Mapping) else None,
                   data.get("window_steps"), data.get("predicted_hit_tokens"), data.get("requests_exact"),
                   _names(data.get("requests_that_differ")),
                   {name: (span[0], span[1]) if isinstance(span, list) and len(span) == 2 else None
                    for name, span in unsettled.items()} if isinstance(unsettled, Mapping) else {},
                   _names(data.get("differ_outside_range")),
                   TimelineEvents.from_json(data.get("kv_events")),
                   ReferenceReplay.from_json(reference) if isinstance(reference, Mapping) else None,
                   [TimelineRow.from_json(row) for row in rows if isinstance(row, Mapping)]
                   if isinstance(rows, list) else [])


def _names(value: Any) -> list[str]:
    return list(value) if isinstance(value, list) else []
