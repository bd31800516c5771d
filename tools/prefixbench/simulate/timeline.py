"""Timeline replay: the engine model steps through overlapping requests the way vLLM's scheduler does.

Send-order replay runs requests one at a time, so it is exact only when they ran one at a time. Here requests
overlap, and what they hit depends on the engine's steps. The loop follows ``Scheduler.schedule`` and
``Scheduler.update_from_output`` (``vllm/v1/core/sched/scheduler.py``, vLLM ``VLLM_VERSION_MODELLED``) with
the defaults a server runs (FCFS, chunked prefill on, no speculative decoding, no KV connector, watermark 0,
``long_prefill_token_threshold`` 0, ``scheduler_reserve_full_isl`` on):

- Each step has a token budget (``max_num_batched_tokens``). Running requests come first, in running order,
  each asking for ``num_tokens - num_computed_tokens`` (a prefill chunk or one decode token), capped by the
  budget. When their slots do not fit, the last running request is preempted (its blocks freed in reverse
  order, its computed tokens reset, put back at the head of the waiting queue) until they fit; a request that
  preempts itself stops the loop.
- Waiting requests are admitted only in a step that preempted nothing, in queue order, while budget and a
  sequence slot (``max_num_seqs``) are left. A new request looks its prompt up (at most ``num_tokens - 1``
  tokens, full blocks from block 0), and is admitted only if the blocks for its whole sequence fit
  (``full_sequence_must_fit``) and those of its first chunk do, counting hit blocks that sit in the free queue.
- Blocks are cached when their tokens are scheduled (``allocate_slots`` caches ``min(computed + new,
  num_tokens)`` tokens), not when computed.
- After the step, requests whose prefill is complete get one token each, in the step's schedule order
  (running first, then the newly admitted); one that reaches ``max_tokens`` is freed then, in that order.
- The hit a client is told (``cached_tokens``) is the lookup at a request's first admission; a preempted
  request looks up again on re-admission (it touches what it finds), but reports nothing new.

Not modelled: async scheduling with requests overlapping (``AsyncScheduler`` schedules one step ahead),
priority scheduling, a non-default watermark or long-prefill threshold.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Sequence

from ..cache.blocks import BlockKeys
from ..cache.engine_pool import REUSED, BlockEvent, Running, VllmBlockPool


@dataclass(frozen=True)
class TimelineRequest:
    prompt: Sequence[int]
    outputs: Sequence[int]
    """The generated token ids (``len`` is ``max_tokens``)."""
    arrival: int
    """The first step the request can be scheduled in (added to the waiting queue before it)."""


@dataclass(frozen=True)
class SchedulerSettings:
    block_size: int
    num_blocks: int
    max_num_seqs: int
    max_num_batched_tokens: int


@dataclass
class _Req:
    index: int
    spec: TimelineRequest
    keys: list[int]
    emitted: int = 0
    computed: int = 0
    running: Running | None = None
    preemptions: int = 0
    reported_hit: int | None = None
    first_token_step: int | None = None
    finish_step: int | None = None
    admitted_step: int | None = None
    admitted_event: int | None = None
    token_steps: list[int] = field(default_factory=list)

    @property
    def num_tokens(self) -> int:
        return len(self.spec.prompt) + self.emitted


@dataclass
class TimelineResult:
    hits: list[int | None]
    first_token_steps: list[int | None]
    finish_steps: list[int | None]
    preemptions: list[int]
    evictions: int
    admitted_steps: list[int | None] = field(default_factory=list)
    steps: int = 0
    events: list | None = None
    """With ``record_events``: the pool's KV events in order (``cache.engine_pool.BlockEvent``), and in
    ``admitted_events`` how many had happened when each request was first looked up."""
    admitted_events: list[int | None] = field(default_factory=list)
    schedule: list[list[tuple[int, int]]] = field(default_factory=list)
    """Per step, ``(request, tokens scheduled)`` in schedule order."""
    token_steps: list[list[int]] = field(default_factory=list)
    """Per request, the step each of its output tokens came out in."""
    pool: VllmBlockPool | None = None
    """The pool at the end (its ``events`` with ``record_events``)."""


class KeyCache:
    """Block keys of each request's KV tokens (prompt + all outputs but the last), computed once for many replays."""

    def __init__(self, block_size: int):
        self.block_size = block_size
        self.keys = BlockKeys()
        self._of: dict[tuple, list[int]] = {}

    def of(self, request: TimelineRequest) -> list[int]:
        tokens = (*request.prompt, *request.outputs[:-1])
        found = self._of.get(tokens)
        if found is None:
            found = self._of[tokens] = self.keys.of(list(tokens), self.block_size)
        return found


class _Timeline:
    def __init__(self, requests: Sequence[TimelineRequest], settings: SchedulerSettings, keep_schedule: bool,
                 keys: KeyCache | None = None, record_events: bool = False, report_hits: bool = False):
        self.s = settings
        keys = keys or KeyCache(settings.block_size)
        self.pool = VllmBlockPool(settings.num_blocks, settings.block_size, keys.keys, record_events=record_events,
                                  report_hits=report_hits)
        self.reqs = [_Req(i, r, keys.of(r)) for i, r in enumerate(requests)]
        self.arrivals = deque(sorted(self.reqs, key=lambda r: (r.spec.arrival, r.index)))
        self.waiting: deque[_Req] = deque()
        self.running: list[_Req] = []
        self.step = 0
        self.schedule: list[list[tuple[int, int]]] | None = [] if keep_schedule else None

    def _blocks_for(self, req: _Req, tokens: int, hits: list[int]) -> int:
        """Blocks ``allocate_slots`` must take from the free queue for ``tokens`` slots (hits in it count)."""
        held = len(req.running.blocks) if req.running is not None else len(hits)
        evictable = 0 if req.running is not None else self.pool.evictable(hits)
        return max(-(-tokens // self.s.block_size) - held, 0) + evictable

    def _free(self, req: _Req) -> None:
        """Its blocks back to the free queue, in reverse order (finished or preempted)."""
        assert req.running is not None, "only a running request holds blocks"
        self.pool.finish(req.running)
        req.running = None

    def _preempt(self, req: _Req) -> None:
        self._free(req)
        req.computed = 0
        req.preemptions += 1
        self.waiting.appendleft(req)

    def _schedule_running(self, scheduled: list[tuple[_Req, int]], budget: int) -> tuple[int, bool]:
        preempted, i = False, 0
        while i < len(self.running) and budget > 0:
            req = self.running[i]
            new = min(req.num_tokens - req.computed, budget)
            if new <= 0:
                i += 1
                continue
            while self._blocks_for(req, req.computed + new, []) > self.pool.free_blocks():
                victim = self.running.pop()
                self._preempt(victim)
                preempted = True
                if victim is req:
                    break
            if req.running is None:
                break
            self.pool.step(req.running, new)
            req.computed += new
            scheduled.append((req, new))
            budget -= new
            i += 1
        return budget, preempted

    def _admit_waiting(self, scheduled: list[tuple[_Req, int]], budget: int) -> None:
        while budget > 0 and self.waiting and len(self.running) < self.s.max_num_seqs:
            req = self.waiting[0]
            hits = self.pool.lookup(req.keys, req.num_tokens - 1)
            if self.pool.report_hits and self.pool.events is not None:
                # vLLM publishes a lookup's hits each time it looks, admitted or not (``kv_cache_report_mode``)
                self.pool.events.extend(BlockEvent(REUSED, req.keys[i], req.index, i) for i in range(len(hits)))
            hit_tokens = len(hits) * self.s.block_size
            new = min(req.num_tokens - hit_tokens, budget)
            free = self.pool.free_blocks()
            if self._blocks_for(req, req.num_tokens, hits) > free or \
                    self._blocks_for(req, hit_tokens + new, hits) > free:
                break
            self.waiting.popleft()
            if req.reported_hit is None:
                req.reported_hit, req.admitted_step = hit_tokens, self.step
                req.admitted_event = None if self.pool.events is None else len(self.pool.events)
            req.running = self.pool.touch(req.keys, hits, len(req.spec.prompt) + len(req.spec.outputs) - 1,
                                          req.index)
            self.pool.step(req.running, new)
            req.computed = hit_tokens + new
            self.running.append(req)
            scheduled.append((req, new))
            budget -= new

    def _update_from_output(self, scheduled: list[tuple[_Req, int]]) -> None:
        finished = []
        for req, _ in scheduled:
            if req.computed < req.num_tokens:
                continue  # a prefill chunk: nothing sampled
            req.emitted += 1
            req.token_steps.append(self.step)
            if req.first_token_step is None:
                req.first_token_step = self.step
            if req.emitted >= len(req.spec.outputs):
                req.finish_step = self.step
                self._free(req)
                finished.append(req)
        for req in finished:
            self.running.remove(req)

    def run(self, until: int | None = None, watch: "_Req | None" = None) -> None:
        """Step until nothing is left, or up to step ``until`` (exclusive), or until ``watch`` has finished."""
        while self.arrivals or self.waiting or self.running:
            if watch is not None and watch.finish_step is not None:
                return
            if not self.waiting and not self.running:  # idle: nothing happens until the next arrival
                nxt = self.arrivals[0].spec.arrival
                self.step = max(self.step, nxt if until is None else min(nxt, until))
            if until is not None and self.step >= until:
                return
            self._one_step()
        if until is not None:
            self.step = max(self.step, until)

    def _one_step(self) -> None:
        while self.arrivals and self.arrivals[0].spec.arrival <= self.step:
            self.waiting.append(self.arrivals.popleft())
        scheduled: list[tuple[_Req, int]] = []
        budget, preempted = self._schedule_running(scheduled, self.s.max_num_batched_tokens)
        if not preempted:
            self._admit_waiting(scheduled, budget)
        if self.schedule is not None:
            self.schedule.append([(req.index, n) for req, n in scheduled])
        self._update_from_output(scheduled)
        self.step += 1

    def add(self, request: TimelineRequest, keys: KeyCache) -> "_Req":
        """Queue one more request; it must not arrive before the steps already run."""
        assert request.arrival >= self.step, "a request cannot arrive in a step already run"
        req = _Req(len(self.reqs), request, keys.of(request))
        self.reqs.append(req)
        self.arrivals.append(req)  # arrivals come in order: the queue stays sorted
        return req


class Stepper:
    """A timeline that grows one request at a time, for arrival searches: the requests placed so far run up to a
    step once, and each trial copies that state and runs one more request to its end (instead of replaying
    everything from step 0 per trial: the searches stay linear in the requests)."""

    def __init__(self, settings: SchedulerSettings, keys: KeyCache):
        self.keys = keys
        self.base = _Timeline([], settings, False, keys)

    def advance(self, step: int) -> None:
        """Run the placed requests up to ``step`` (each later trial and placement arrives at or after it)."""
        self.base.run(until=step)

    def place(self, request: TimelineRequest) -> bool:
        """Queue ``request``; whether the engine was idle when it came (nothing running or waiting): then it
        starts a step at once, and a request that comes after it cannot join that step."""
        self.advance(request.arrival)
        base = self.base
        idle = not base.running and not base.waiting and not any(r.spec.arrival <= request.arrival
                                                                 for r in base.arrivals)
        base.add(request, self.keys)
        return idle

    def trial(self, request: TimelineRequest) -> "_Req":
        """``request`` added to a copy of the current state and run until it finishes (its hit, its steps)."""
        twin = self._copied()
        req = twin.add(request, self.keys)
        twin.run(watch=req)
        return req

    def copy(self) -> "Stepper":
        """An independent stepper at the same state (to try requests in another order later)."""
        other = Stepper.__new__(Stepper)
        other.keys, other.base = self.keys, self._copied()
        return other

    def _copied(self) -> "_Timeline":
        import copy

        shared = {id(self.base.pool.keys): self.base.pool.keys, id(self.base.s): self.base.s}
        for req in self.base.reqs:
            if req.finish_step is not None and req.running is None:
                shared[id(req)] = req  # finished: nothing in the trial touches it again
            shared[id(req.keys)] = req.keys
            shared[id(req.spec)] = req.spec
        reqs, self.base.reqs = self.base.reqs, []  # the results list: a copy needs only its length
        try:
            twin = copy.deepcopy(self.base, shared)
        finally:
            self.base.reqs = reqs
        twin.reqs = list(reqs)
        return twin


def replay_timeline(requests: Sequence[TimelineRequest], settings: SchedulerSettings, *,
                    keep_schedule: bool = False, keys: KeyCache | None = None,
                    record_events: bool = False, report_hits: bool = False) -> TimelineResult:
    """Every request's reported hit, first-token and finish step, stepping the engine as vLLM's scheduler does
    (``report_hits``: each lookup's hits published too, as vLLM does for ``kv_cache_report_mode`` full)."""
    timeline = _Timeline(requests, settings, keep_schedule, keys, record_events, report_hits)
    timeline.run()
    reqs = timeline.reqs
    return TimelineResult(hits=[r.reported_hit for r in reqs], first_token_steps=[r.first_token_step for r in reqs],
                          finish_steps=[r.finish_step for r in reqs], preemptions=[r.preemptions for r in reqs],
                          evictions=timeline.pool.evictions, admitted_steps=[r.admitted_step for r in reqs],
                          steps=timeline.step, schedule=timeline.schedule or [], events=timeline.pool.events,
                          admitted_events=[r.admitted_event for r in reqs],
                          token_steps=[r.token_steps for r in reqs], pool=timeline.pool)


@dataclass(frozen=True)
class Observed:
    """What a client sees of one request, in send order: its tokens and the engine steps its first and last
    token came out in (a stream's tokens, each mapped to the step that produced it)."""

    prompt: Sequence[int]
    outputs: Sequence[int]
    first_token_step: int
    finish_step: int


@dataclass
class ObservedReplay:
    """The timeline replay of observed requests: hits, the arrivals it inferred, and what they leave open."""

    hits: list[int | None]
    arrivals: list[int | None]
    """The latest arrival step that reproduces each request's observed first and last token; ``None``: none does."""
    unsettled: dict[int, tuple[int, int]]
    """Requests whose hit depends on an arrival the observations cannot settle: ``index -> (least, most)``."""
    unexplained: list[int]
    """Requests no arrival reproduces (the server ran something this model does not)."""


MAX_WAIT_STEPS = 256
"""How far before its first token a request's arrival is searched for (an arrival further back is inferred as
the earliest searched step)."""


def replay_observed(observed: Sequence[Observed], settings: SchedulerSettings) -> ObservedReplay:
    """Infer each request's arrival from what a client observed, then replay the timeline.

    Requests reach the waiting queue in send order, and a request's own steps depend only on the requests sent
    before it (they are ahead of it in the queue and in the running list; a later one can be preempted for it,
    never the reverse), so arrivals are settled one request at a time: the latest step, from its first token
    back, at which the replay of it and everything before it gives both its observed steps. Arrivals just below
    that one that reproduce the same steps are tried too: where they give the request another hit, it is
    reported as unsettled with the range.
    """
    arrivals: list[int] = []
    unsettled: dict[int, tuple[int, int]] = {}
    unexplained: list[int] = []
    keys = KeyCache(settings.block_size)
    stepper = Stepper(settings, keys)
    for k, obs in enumerate(observed):
        low = max(arrivals[-1] if arrivals else 0, obs.first_token_step - MAX_WAIT_STEPS)
        stepper.advance(low)
        found: int | None = None
        hits: set[int] = set()
        for arrival in range(obs.first_token_step, low - 1, -1):
            tried = stepper.trial(TimelineRequest(obs.prompt, obs.outputs, arrival))
            if (tried.first_token_step, tried.finish_step) != (obs.first_token_step, obs.finish_step):
                if found is not None:
                    break
                continue
            found = arrival if found is None else found
            if tried.reported_hit is not None:
                hits.add(tried.reported_hit)
            if tried.admitted_step == obs.first_token_step:
                break  # admitted in the step of its first token: any earlier arrival that reproduces waited
        if found is None:
            unexplained.append(k)
            found = max(obs.first_token_step, low)
        if len(hits) > 1:
            unsettled[k] = (min(hits), max(hits))
        stepper.place(TimelineRequest(obs.prompt, obs.outputs, found))
        arrivals.append(found)
    final = replay_timeline([TimelineRequest(o.prompt, o.outputs, a) for o, a in zip(observed, arrivals, strict=True)],
                            settings, keys=keys)
    return ObservedReplay(final.hits, [None if k in unexplained else a for k, a in enumerate(arrivals)],
                          unsettled, unexplained)
