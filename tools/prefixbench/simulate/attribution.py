"""Per-request attribution: why a request hit less than its shared prefix, and why the server differed from the
prediction.

Two questions, per request (in the order the server received them):

- **lost**: of the tokens it shares with an earlier request, how many no cache could reuse and why: the
  partial block after the last shared full block (``block_alignment``), the last prompt token that vLLM always
  recomputes (``last_token_rule``), and blocks the predicted pool had evicted (``eviction``). A request that
  shares no full block with any earlier one is ``cold``.
- **difference** (measured ``cached_tokens`` minus predicted): the first block where the two disagree, and the
  cause that fits the run's timing: ``in_flight`` (this request was scheduled before, or in the same step as,
  the request that caches that block: both computed it), ``eviction`` (the block had been cached before this
  request was scheduled, and the server evicted it in between: more requests held blocks at once),
  ``preemption`` (the same, while the server preempted), ``eviction_order`` (the server kept a block the model
  evicted), ``admission_order`` (a request sent later reached the server first), ``earlier_traffic`` (a block no
  request of the run had: the cache was not empty).

vLLM caches a block when its tokens are *scheduled* (``KVCacheManager.allocate_slots``), so being sent while the
source still computes is not enough to miss it: a request scheduled in a later step, or later in the same step,
hits. A prompt block of the source is cached in the step that emits the source's first token; a block of its
generated tokens that needs ``n`` of them is cached ``n`` steps later (one step is the run's median inter-token
gap). A request's own lookup happens in the step that emits its first token. A miss is ``in_flight`` when that
lookup came at least half a step before the source cached the block, else ``eviction`` (or ``preemption``).

Blocks are keyed over everything that gets KV: an earlier request's prompt *and* its generated tokens (all but
the last, from ``output_token_ids``), so a multi-turn prompt that resends an answer is attributed to the request
that generated it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, NamedTuple, Sequence

from ..cache.blocks import BlockKeys, max_hit_blocks
from ..core.attribution_records import Attribution, AttributedRequest, AttributionSummary, LostTokens
from ..core.request_rows import RequestRow, rows_of

CAUSES = ("in_flight", "eviction", "preemption", "eviction_order", "admission_order", "earlier_traffic")


def attribute(prompts: Sequence[Sequence[int]], rows: Sequence[RequestRow | Mapping], block_size: int, *,
              earlier: Sequence[Sequence[int]] = (), preemptions: float | None = None) -> Attribution:
    """``rows`` (server order, one per prompt): ``id``, ``cached_tokens``, ``predicted_hit_tokens``,
    ``sent_at_s``, ``ttft_ms``. ``earlier``: prompts the cache saw first (the prefill phase), never rows."""
    keys = BlockKeys()
    every = [*earlier, *prompts]
    every_rows = [RequestRow(f"prefill{k}", k) for k in range(len(earlier))] + rows_of(rows)
    with_kv = [list(p) + _generated(r) for p, r in zip(every, every_rows, strict=True)]  # all that gets KV, outputs too
    kv_keys = [keys.of(t, block_size) for t in with_kv]
    # the prompt's blocks lead its KV's
    every_keys = [k[:len(p) // block_size] for k, p in zip(kv_keys, every, strict=True)]
    timing = _Timing(every_rows, [len(p) for p in every], block_size)
    seen: dict[int, int] = {}  # key -> the latest earlier request (index into every) whose KV holds it
    out = []
    for i, prompt in enumerate(every):
        own = every_keys[i]
        if i >= len(earlier):
            row = every_rows[i]
            shared, lost = _lost(prompt, own, seen, with_kv, block_size, row.predicted_hit_tokens)
            differs = _difference(_Request(i, own), _Seen(seen, kv_keys), timing, preemptions)
            out.append(AttributedRequest(row.id, row.predicted_hit_tokens, row.cached_tokens, shared, shared == 0,
                                         lost, difference=differs.difference, cause=differs.cause,
                                         detail=differs.detail, first_block=differs.first_block))
        for key in kv_keys[i]:
            seen[key] = i
    return Attribution(out, AttributionSummary.of(out, CAUSES))


def _generated(row: RequestRow) -> list[int]:
    """The generated tokens that got KV (all but the last), when the server streamed them back."""
    ids = row.output_token_ids
    return list(ids[:-1]) if isinstance(ids, list) and all(isinstance(t, int) for t in ids) else []


class _Timing:
    """When each request's first token came out, and how close two of them must be to share a step."""

    def __init__(self, rows: Sequence[RequestRow], prompt_lengths: Sequence[int], block_size: int):
        self.rows, self.prompt_lengths, self.block_size = rows, prompt_lengths, block_size
        gaps = sorted(r.itl_ms_mean for r in rows if isinstance(r.itl_ms_mean, (int, float)))
        self.step_s = gaps[len(gaps) // 2] / 1000 if gaps else 0.0  # the median inter-token gap, in seconds

    def first_token_at(self, i: int) -> float | None:
        row = self.rows[i]
        if row.sent_at_s is None or row.ttft_ms is None:
            return None
        return row.sent_at_s + row.ttft_ms / 1000

    def looked_up_before_cached(self, i: int, source: int, block: int) -> bool:
        """Request ``i`` was looked up at least half a step before ``source`` cached its block ``block``."""
        here, there = self.first_token_at(i), self.first_token_at(source)
        if here is None or there is None:
            return False
        generated = max((block + 1) * self.block_size - self.prompt_lengths[source], 0)
        return here < there + (generated - 0.5) * self.step_s


def _lost(prompt: Sequence[int], own: Sequence[int], seen: Mapping[int, int], prompts: Sequence[Sequence[int]],
          block_size: int, predicted: int | None) -> tuple[int, LostTokens]:
    """The full blocks the request shares with earlier ones, and the shared tokens no cache could reuse."""
    shared = 0
    while shared < len(own) and own[shared] in seen:
        shared += 1
    cap = max_hit_blocks(len(prompt), block_size, True)
    holder = prompts[seen[own[shared - 1]]] if shared else None  # shares every full block up to there
    alignment = _common(prompt, holder, shared * block_size, block_size) if holder is not None else 0
    return shared, LostTokens(alignment, max(shared - cap, 0) * block_size,
                              (min(shared, cap) * block_size - predicted) if predicted is not None else None)


def _common(a: Sequence[int], b: Sequence[int], start: int, limit: int) -> int:
    n = 0
    while n < limit and start + n < len(a) and start + n < len(b) and a[start + n] == b[start + n]:
        n += 1
    return n


@dataclass(frozen=True)
class _Request:
    """The request being attributed: its index (into every request, the earlier ones first) and its prompt's
    block keys."""

    index: int
    keys: Sequence[int]


@dataclass(frozen=True)
class _Seen:
    """What the requests before hold: ``holder`` maps a block key to the latest one whose KV holds it; ``kv_keys``
    are every request's keys over its prompt and generated tokens."""

    holder: Mapping[int, int]
    kv_keys: Sequence[Sequence[int]]


class _Difference(NamedTuple):
    """Measured minus predicted, its cause, the detail and the first differing block."""

    difference: int | None
    cause: str | None
    detail: str | None
    first_block: int | None


def _difference(request: _Request, seen: _Seen, timing: _Timing, preemptions: float | None) -> _Difference:
    i, own, rows = request.index, request.keys, timing.rows
    row = rows[i]
    predicted, measured = row.predicted_hit_tokens, row.cached_tokens
    if predicted is None or measured is None:
        return _Difference(None, None, "not measured or not predicted", None)
    if predicted == measured:
        return _Difference(0, None, None, None)
    block = min(predicted, measured) // timing.block_size
    key = own[block] if block < len(own) else None
    source = seen.holder.get(key) if key is not None else None
    if measured < predicted:
        cause, detail = _missed(i, source, timing, block, preemptions)
    else:
        later = next((j for j in range(i + 1, len(rows)) if key in seen.kv_keys[j]), None) \
            if key is not None else None
        cause, detail = _extra(i, source, later, rows, block)
    return _Difference(measured - predicted, cause, detail, block)


def _missed(i: int, source: int | None, timing: _Timing, block: int, preemptions: float | None) -> tuple[str, str]:
    rows = timing.rows
    here = rows[i]
    if source is not None and timing.looked_up_before_cached(i, source, block):
        return "in_flight", (f"block {block} comes from {rows[source].id}, which had not cached it yet when "
                             f"{here.id} was scheduled: both computed it")
    cause = "preemption" if preemptions else "eviction"
    return cause, (f"the server no longer held block {block} (from {rows[source].id if source is not None else '?'})"
                   + (f"; {preemptions:g} preemptions in the run" if preemptions else
                      ": requests running together held more blocks than the sequential model assumes"))


def _extra(i: int, source: int | None, later: int | None, rows: Sequence[RequestRow],
           block: int) -> tuple[str, str]:
    if source is not None:
        return "eviction_order", (f"the server still held block {block} (from {rows[source].id}), which the "
                                  "model had evicted: requests running together changed the free queue's order")
    if later is not None:
        return "admission_order", (f"block {block} comes from {rows[later].id}, sent after {rows[i].id} but "
                                   "scheduled first")
    return "earlier_traffic", f"no request of the run has block {block}: the cache held earlier traffic"
