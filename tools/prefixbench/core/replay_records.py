"""``replay``'s own sections as records: the trace lines it could not send (``Skipped``) and the trace's own hit
rate beside the server's (``TraceHitRate``). ``run.replay`` builds them; the report reads a file back through
``from_json`` (``core.records.validate`` has checked the fields it reads)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .flat_records import FlatRecord

SKIPPED_REASON = "prompt + output longer than the server's context (never truncated)"


@dataclass(frozen=True)
class SkippedLine(FlatRecord):
    """One trace line left out: where it is in the file, its index among the lines, and its sizes."""

    line: str | None
    index: int | None
    prompt_tokens: int | None
    output_tokens: int | None


@dataclass(frozen=True)
class Skipped:
    """The trace lines too long for the server's context (``context_tokens``): skipped, never truncated."""

    requests: Sequence[SkippedLine]
    context_tokens: int | None
    reason: str | None = SKIPPED_REASON

    @property
    def count(self) -> int:
        return len(self.requests)

    def to_json(self) -> dict:
        return {"count": self.count, "context_tokens": self.context_tokens,
                "requests": [r.to_json() for r in self.requests], "reason": self.reason}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Skipped:
        """An absent section reads as nothing skipped (a run that ended before reading the trace)."""
        return cls([SkippedLine.from_json(r) for r in data.get("requests") or []], data.get("context_tokens"),
                   data.get("reason"))


@dataclass(frozen=True)
class TraceHitRate(FlatRecord):
    """The trace's own token hit rate (``traces.replay_trace``) at the paper's block size with an unbounded cache,
    over the requests the run sent: what the trace promises, beside what the server did."""

    block_tokens: int | None
    token_hit_rate: float | None
    requests: int | None
    capacity: str = "unbounded"
    note: str = "the trace's own hit rate at the paper's block size, on the requests sent"

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TraceHitRate:
        """The defaults stand in for a missing capacity or note (the report reads neither)."""
        return cls(data.get("block_tokens"), data.get("token_hit_rate"), data.get("requests"),
                   data.get("capacity") or "unbounded", data.get("note") or "")
