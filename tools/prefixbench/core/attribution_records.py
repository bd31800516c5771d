"""The attribution of a measured phase (``simulate.attribution``): per request, what no cache could reuse and why,
and the cause of a difference between the server's ``cached_tokens`` and the prediction; then their summary.

``simulate.attribution.attribute`` builds an ``Attribution``; the result turns it into JSON when it is written
(``to_json``, the keys in the order the files always had); a report reads the summary back
(``AttributionSummary.of_result``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .flat_records import FlatRecord
from .sections import section

LOST_CAUSES = ("block_alignment", "last_token_rule", "eviction")
"""Why tokens a request shares with an earlier one were not reused, in the files' order."""


@dataclass(frozen=True)
class LostTokens(FlatRecord):
    """Shared tokens no cache could reuse: the partial block after the last shared full block, the last prompt
    token vLLM always recomputes, and what the predicted pool had evicted (``None``: nothing was predicted)."""

    block_alignment: int
    last_token_rule: int
    eviction: int | None


@dataclass(frozen=True)
class AttributedRequest:
    """One request of the measured phase (server order): how much it shares with earlier requests, what of that
    was lost and why, and, where the server's answer differs from the prediction, the first differing block and
    the cause that fits the run's timing."""

    id: str
    predicted: int | None
    measured: int | None
    shared_full_blocks: int
    cold: bool
    """It shares no full block with any earlier request."""
    lost_tokens: LostTokens
    difference: int | None
    """Measured minus predicted (``None``: one of them is missing)."""
    cause: str | None
    detail: str | None
    first_block: int | None = None
    """The first block where the two differ; written only for a request that differs."""

    def to_json(self) -> dict:
        out = {"id": self.id, "predicted": self.predicted, "measured": self.measured,
               "shared_full_blocks": self.shared_full_blocks, "cold": self.cold,
               "lost_tokens": self.lost_tokens.to_json(), "difference": self.difference, "cause": self.cause,
               "detail": self.detail}
        return out if self.first_block is None else {**out, "first_block": self.first_block}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AttributedRequest:
        return cls(data.get("id") or "?", data.get("predicted"), data.get("measured"),
                   data.get("shared_full_blocks") or 0, bool(data.get("cold")),
                   LostTokens.from_json(section(data, "lost_tokens")), data.get("difference"), data.get("cause"),
                   data.get("detail"), data.get("first_block"))


@dataclass(frozen=True)
class AttributionSummary:
    """Why requests hit less than they share, and the causes of the differences (``simulate.attribution``)."""

    requests: int
    requests_that_differ: int
    difference_tokens: int
    by_cause: Mapping[str, int]
    cold_requests: int | None
    lost_tokens: Mapping[str, int | None]

    def to_json(self) -> dict:
        out = {"requests": self.requests, "requests_that_differ": self.requests_that_differ,
               "difference_tokens": self.difference_tokens, "by_cause": dict(self.by_cause)}
        if self.cold_requests is not None:
            out["cold_requests"] = self.cold_requests
        return out | {"lost_tokens": dict(self.lost_tokens)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AttributionSummary:
        return cls(data["requests"], data["requests_that_differ"], data["difference_tokens"],
                   data.get("by_cause") or {}, data.get("cold_requests"), data.get("lost_tokens") or {})

    @classmethod
    def of_result(cls, result: Mapping[str, Any]) -> AttributionSummary | None:
        """The summary of a result's ``attribution`` section; ``None`` without one (a run without a block size)."""
        summary = section(section(result, "attribution"), "summary")
        return cls.from_json(summary) if summary else None

    @classmethod
    def of(cls, requests: Sequence[AttributedRequest], causes: Sequence[str]) -> AttributionSummary:
        """The requests' totals: those that differ by cause (every one of ``causes`` counted, zero included), the
        cold ones, and the lost tokens by reason (a request without a predicted eviction counts none there)."""
        differ = [r for r in requests if r.difference]
        return cls(requests=len(requests), requests_that_differ=len(differ),
                   difference_tokens=sum(r.difference or 0 for r in differ),
                   by_cause={c: sum(1 for r in differ if r.cause == c) for c in causes},
                   cold_requests=sum(1 for r in requests if r.cold),
                   lost_tokens={k: sum(getattr(r.lost_tokens, k) or 0 for r in requests) for k in LOST_CAUSES})


@dataclass(frozen=True)
class Attribution:
    """The ``attribution`` section: every request's attribution, in server order, and their summary."""

    requests: Sequence[AttributedRequest]
    summary: AttributionSummary

    def to_json(self) -> dict:
        return {"requests": [r.to_json() for r in self.requests], "summary": self.summary.to_json()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Attribution | None:
        """``None`` without a summary (a run without a block size writes null)."""
        summary = section(data, "summary")
        if not summary or data is None:
            return None
        rows = data.get("requests")
        return cls([AttributedRequest.from_json(r) for r in rows if isinstance(r, Mapping)]
                   if isinstance(rows, list) else [], AttributionSummary.from_json(summary))
