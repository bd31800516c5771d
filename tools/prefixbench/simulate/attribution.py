"""Per-request attribution: why a request hit less than its shared prefix, and why the server differed from the
prediction.

Two questions, per request (in the order the server received them):

- **lost**: of the tokens it shares with an earlier request, how many no cache could reuse and why: the
  partial block after the last shared full block (``block_alignment``), the last prompt token that vLLM always
  recomputes (``last_token_rule``), and blocks the predicted pool had evicted (``eviction``). A request that
  shares no full block with any earlier one is ``cold``.
- **difference** (measured ``cached_tokens`` minus predicted): the first block where the two disagree, and the
  cause that fits the run's timing: ``in_flight`` (the request that caches that block was still computing its
  prefill when this one arrived: both computed it), ``eviction`` (the server had evicted a block the sequential
  model kept: more requests held blocks at once), ``preemption`` (the same, while the server preempted),
  ``eviction_order`` (the server kept a block the model evicted), ``admission_order`` (a request sent later
  reached the server first), ``earlier_traffic`` (a block no request of the run had: the cache was not empty).
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ..cache.blocks import BlockKeys, max_hit_blocks

CAUSES = ("in_flight", "eviction", "preemption", "eviction_order", "admission_order", "earlier_traffic")


def attribute(prompts: Sequence[Sequence[int]], rows: Sequence[Mapping], block_size: int, *,
              earlier: Sequence[Sequence[int]] = (), preemptions: float | None = None) -> dict:
    """``rows`` (server order, one per prompt): ``id``, ``cached_tokens``, ``predicted_hit_tokens``,
    ``sent_at_s``, ``ttft_ms``. ``earlier``: prompts the cache saw first (the prefill phase), never rows.
    Returns ``{"requests": [...], "summary": {...}}``."""
    keys = BlockKeys()
    every = [*earlier, *prompts]
    every_rows = [{"id": f"prefill{k}"} for k in range(len(earlier))] + list(rows)
    every_keys = [keys.of(p, block_size) for p in every]
    seen: dict[int, int] = {}  # key -> the latest earlier request (index into every) whose prompt holds it
    out = []
    for i, prompt in enumerate(every):
        own = every_keys[i]
        if i >= len(earlier):
            row = every_rows[i]
            entry = {"id": row["id"], "predicted": row.get("predicted_hit_tokens"),
                     "measured": row.get("cached_tokens"),
                     **_lost(prompt, own, seen, every, block_size, row.get("predicted_hit_tokens"))}
            entry.update(_difference(i, own, seen, every_keys, every_rows, block_size, preemptions))
            out.append(entry)
        for key in own:
            seen[key] = i
    return {"requests": out, "summary": _summary(out)}


def _lost(prompt, own, seen, prompts, block_size: int, predicted: int | None) -> dict:
    shared = 0
    while shared < len(own) and own[shared] in seen:
        shared += 1
    cap = max_hit_blocks(len(prompt), block_size, True)
    holder = prompts[seen[own[shared - 1]]] if shared else None  # shares every full block up to there
    alignment = _common(prompt, holder, shared * block_size, block_size) if holder is not None else 0
    lost = {"block_alignment": alignment, "last_token_rule": max(shared - cap, 0) * block_size,
            "eviction": (min(shared, cap) * block_size - predicted) if predicted is not None else None}
    return {"shared_full_blocks": shared, "cold": shared == 0, "lost_tokens": lost}


def _common(a: Sequence[int], b: Sequence[int], start: int, limit: int) -> int:
    n = 0
    while n < limit and start + n < len(a) and start + n < len(b) and a[start + n] == b[start + n]:
        n += 1
    return n


def _difference(i: int, own, seen, prompt_keys, rows, block_size: int, preemptions) -> dict:
    row = rows[i]
    predicted, measured = row.get("predicted_hit_tokens"), row.get("cached_tokens")
    if predicted is None or measured is None:
        return {"difference": None, "cause": None, "detail": "not measured or not predicted"}
    if predicted == measured:
        return {"difference": 0, "cause": None, "detail": None}
    block = min(predicted, measured) // block_size
    key = own[block] if block < len(own) else None
    source = seen.get(key) if key is not None else None
    if measured < predicted:
        cause, detail = _missed(i, source, rows, block, preemptions)
    else:
        later = next((j for j in range(i + 1, len(rows)) if key in prompt_keys[j]), None) if key is not None else None
        cause, detail = _extra(i, source, later, rows, block)
    return {"difference": measured - predicted, "cause": cause, "detail": detail, "first_block": block}


def _missed(i: int, source: int | None, rows, block: int, preemptions) -> tuple[str, str]:
    here = rows[i]
    if source is not None and _prefill_done_at(rows[source]) is not None and here.get("sent_at_s") is not None \
            and _prefill_done_at(rows[source]) > here["sent_at_s"]:
        return "in_flight", (f"block {block} comes from {rows[source]['id']}, whose prefill was still running when "
                             f"{here['id']} arrived: both computed it")
    cause = "preemption" if preemptions else "eviction"
    return cause, (f"the server no longer held block {block} (from {rows[source]['id'] if source is not None else '?'})"
                   + (f"; {preemptions:g} preemptions in the run" if preemptions else
                      ": requests running together held more blocks than the sequential model assumes"))


def _extra(i: int, source: int | None, later: int | None, rows, block: int) -> tuple[str, str]:
    if source is not None:
        return "eviction_order", (f"the server still held block {block} (from {rows[source]['id']}), which the "
                                  "model had evicted: requests running together changed the free queue's order")
    if later is not None:
        return "admission_order", (f"block {block} comes from {rows[later]['id']}, sent after {rows[i]['id']} but "
                                   "scheduled first")
    return "earlier_traffic", f"no request of the run has block {block}: the cache held earlier traffic"


def _prefill_done_at(row: Mapping) -> float | None:
    if row.get("sent_at_s") is None or row.get("ttft_ms") is None:
        return None
    return row["sent_at_s"] + row["ttft_ms"] / 1000


def _summary(entries: Sequence[Mapping]) -> dict:
    differ = [e for e in entries if e.get("difference")]
    lost = {k: sum((e["lost_tokens"].get(k) or 0) for e in entries) for k in
            ("block_alignment", "last_token_rule", "eviction")}
    return {"requests": len(entries), "requests_that_differ": len(differ),
            "difference_tokens": sum(e["difference"] for e in differ),
            "by_cause": {c: sum(1 for e in differ if e["cause"] == c) for c in CAUSES},
            "cold_requests": sum(1 for e in entries if e["cold"]), "lost_tokens": lost}
