"""Behind a router: where each request went, read from the replicas' KV events, and what the router believed.

- **Placement from KV events** (``KvPlacementWatch``): a subscriber on every replica's publisher (it must bind:
  ``"endpoint": "tcp://*:PORT"``) keeps what each replica stored. A request's *own* blocks are its full blocks
  that no other request of the run has (the random tail of a generated prompt): the replica that stored them
  computed the request, so it served it. This holds at any concurrency, where the request counters cannot tell
  requests apart. A request with no block of its own (every full block shared, or shorter than a block), or
  whose own blocks no replica or several replicas stored, has placement ``None`` with that reason: hits publish
  no ``BlockStored`` unless the request asked for ``kv_cache_report_mode``.
- **The router's own view** (``router_view``): ``vllm-router``'s ``/metrics`` (``--prometheus-port``) before and
  after the measured phase: ``vllm_router_processed_requests_total{worker}`` and
  ``vllm_router_policy_decisions_total{policy,worker}`` per replica, beside the requests each replica's own
  ``vllm:request_success`` counter counted. Where they differ, the router's belief is not what ran.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ..cache.blocks import BlockKeys
from ..core.live_records import CounterDelta
from ..measure import metrics as prom
from ..measure.kv_subscribe import KvEventSubscriber
from ..serve.router import loopback
from ..simulate.block_events import CLEARED_EVENT, STORED_EVENT

ROUTER_COUNTERS = {"processed": "vllm_router_processed_requests", "decisions": "vllm_router_policy_decisions"}


class KvPlacementWatch:
    """One KV-event subscriber per replica, started before the run (``start``) and read after it."""

    def __init__(self, endpoints: Sequence[str | None]):
        self.endpoints = [loopback(e) if e else None for e in endpoints]
        self.subscribers: list[KvEventSubscriber | None] = []

    def start(self) -> "KvPlacementWatch":
        self.subscribers = [KvEventSubscriber(e).start() if e else None for e in self.endpoints]
        for sub in self.subscribers:
            if sub is not None:
                sub.wait_connected(5.0)
        return self

    def stop(self) -> None:
        for sub in self.subscribers:
            if sub is not None:
                sub.stop()

    def stored_keys(self, keys: BlockKeys) -> list[set[int] | None]:
        """Per replica, the keys of the blocks it stored since its last ``AllBlocksCleared`` (``None``: no
        subscriber). Wait for the publishers to go quiet first (they run a step behind the answers)."""
        out: list[set[int] | None] = []
        for sub in self.subscribers:
            if sub is None:
                out.append(None)
                continue
            sub.settle(quiet_s=0.5, timeout_s=5.0)
            out.append(stored_since_clear(sub.batches, keys))
        return out

    def status(self) -> dict:
        return {"endpoints": self.endpoints,
                "batches": [len(s.batches) if s else None for s in self.subscribers],
                "gaps": [len(s.gaps) if s else None for s in self.subscribers],
                "errors": [e for s in self.subscribers if s for e in s.errors][:5]}


def stored_since_clear(batches: Sequence[Mapping], keys: BlockKeys) -> set[int]:
    """Keys of the blocks stored after the last ``AllBlocksCleared``, named like ``BlockKeys.of`` names a prompt's
    blocks (a block whose parent was stored before the subscription gets no key)."""
    flat = [event for batch in batches for event in batch["events"]]
    cleared = [i for i, event in enumerate(flat) if event.get("type") == CLEARED_EVENT]
    key_of: dict = {}
    stored: set[int] = set()
    for event in flat[cleared[-1] + 1 if cleared else 0:]:
        if event.get("type") != STORED_EVENT:
            continue
        size, tokens = event.get("block_size") or 0, event.get("token_ids") or []
        parent = event.get("parent_block_hash")
        key: int | None = None if parent is None else key_of.get(parent, -1)
        for i, block_hash in enumerate(event.get("block_hashes") or []):
            key = -1 if key == -1 or not size else keys.child(key, tokens[i * size:(i + 1) * size])
            key_of[block_hash] = key
            if key != -1:
                stored.add(key)
    return stored


def kv_placement(prompts: Sequence[Sequence[int]], stored: Sequence[set[int] | None],
                 block_size: int, keys: BlockKeys) -> tuple[list[int | None], list[str | None]]:
    """Each prompt's replica read from the blocks the replicas stored, and for each unknown one why."""
    chains = [keys.of(p, block_size) for p in prompts]
    owners: dict[int, int] = {}
    for chain in chains:
        for key in set(chain):
            owners[key] = owners.get(key, 0) + 1
    placement: list[int | None] = []
    reasons: list[str | None] = []
    for chain in chains:
        own = {k for k in chain if owners[k] == 1}
        if not own:
            placement.append(None)
            reasons.append("no full block of its own (every full block is shared with another request)")
            continue
        found = [r for r, keys_r in enumerate(stored) if keys_r is not None and own & keys_r]
        placement.append(found[0] if len(found) == 1 else None)
        reasons.append(None if len(found) == 1 else
                       ("no replica published its own blocks" if not found else
                        f"{len(found)} replicas published its own blocks"))
    return placement, reasons


def kv_record(placement: Sequence[int | None], reasons: Sequence[str | None], counted: Sequence[int | None] | None,
              status: Mapping) -> dict:
    """The KV-event placement beside the counters' (``counted``: ``None`` when the counters could not tell)."""
    known = sum(p is not None for p in placement)
    compared = [] if counted is None else [(k, c) for k, c in zip(placement, counted, strict=True)
                                           if k is not None and c is not None]
    return {"placement": list(placement), "confirmed": known, "requests": len(placement),
            "unconfirmed": [{"index": i, "reason": r} for i, r in enumerate(reasons) if r is not None][:20],
            "agrees_with_counters": None if not compared else all(k == c for k, c in compared),
            "compared_with_counters": len(compared), **status,
            "definition": "the replica that stored a request's own full blocks (ones no other request has) "
                          "computed it, so served it"}


def router_counts(snapshot: prom.Snapshot | None) -> dict | None:
    """``{"processed": {worker: n}, "decisions": {worker: n}, "succeeded": {worker: n}, "tree": {outcome: n}}``
    from one scrape of the router's /metrics (``succeeded``: its circuit breaker's success outcomes)."""
    if snapshot is None or not snapshot.ok:
        return None
    counts = {key: snapshot.by_label(name, "worker") for key, name in ROUTER_COUNTERS.items()}
    counts["succeeded"] = _where(snapshot, "vllm_router_cb_outcomes_total", "worker", outcome="success")
    counts["tree"] = _where(snapshot, "vllm_router_prefix_routing_decisions_total", "outcome")
    return counts


def _where(snapshot: prom.Snapshot, name: str, by: str, **match: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for labels, value in snapshot.samples.get(name, []):
        if all(labels.get(k) == v for k, v in match.items()):
            out[labels.get(by, "")] = out.get(labels.get(by, ""), 0.0) + value
    return out


def router_view(metrics_url: str, before: prom.Snapshot | None, after: prom.Snapshot | None,
                base_urls: Sequence[str | None], labels: Sequence[str], counted: Sequence[int | None]) -> dict:
    """What the router says it did in the measured phase, per replica, against each replica's own counter.

    ``counted`` holds the replicas' rows in order; a replica without a row, or whose counter did not answer, is in
    ``not_counted``, and then ``agrees`` is ``None`` (unknown) unless another replica already disagrees."""
    b, a = router_counts(before), router_counts(after)
    if a is None or b is None:
        failed = after if after is not None and not after.ok else before
        reason = (failed.error if failed is not None else None) or "not scraped"
        return {"metrics_url": metrics_url, "status": "unavailable", "reason": reason, "per_replica": None}
    rows, disagree, not_counted = [], [], []
    counted = [*counted, *[None] * (len(labels) - len(counted))]  # a replica with no row: its count is unknown
    for label, base, count in zip(labels, base_urls, counted, strict=True):
        row: dict[str, object] = {"label": label, "worker": base, "replica_counted": count}
        if count is None:
            not_counted.append(label)
        for key in (*ROUTER_COUNTERS, "succeeded"):
            row[f"router_{key}"] = _int(a[key].get(base or "", 0.0) - b[key].get(base or "", 0.0))
        if count is not None and row["router_processed"] != count:
            disagree.append(f"{label}: the router says {row['router_processed']} processed, the replica counted "
                            f"{count}")
        rows.append(row)
    foreign = sorted(set(a["processed"]) - {u for u in base_urls if u})
    return {"metrics_url": metrics_url, "status": "ok", "per_replica": rows,
            "agrees": False if disagree else None if not_counted else True, "disagreements": disagree,
            "not_counted": not_counted, "workers_not_replicas": foreign,
            "counters": router_counter_deltas(before, after),
            "prefix_tree": {k: _int(v - b["tree"].get(k, 0.0)) for k, v in a["tree"].items()
                            if v != b["tree"].get(k, 0.0)} or None,
            "definition": "deltas over the measured phase of vllm_router_processed_requests_total{worker}, "
                          "vllm_router_policy_decisions_total{worker} and vllm_router_cb_outcomes_total{worker, "
                          "outcome=success}, beside each replica's vllm:request_success; prefix_tree: "
                          "vllm_router_prefix_routing_decisions_total by outcome (the router's belief of a prefix "
                          "hit or miss)"}


def router_counter_deltas(before: prom.Snapshot | None, after: prom.Snapshot | None) -> dict:
    """Every ``vllm_router_*_total`` sample that moved in the phase, as ``name{label="value",...}`` -> delta
    (routing decisions by outcome, KV-routing inputs, cache-aware tree matches where the policy publishes them)."""
    if before is None or after is None or not before.ok or not after.ok:
        return {}
    def flat(snap: prom.Snapshot) -> dict[str, float]:
        return {f"{name}{{{','.join(f'{k}={v!r}' for k, v in sorted(labels.items()))}}}": value
                for name, rows in snap.samples.items() if name.startswith("vllm_router_") and name.endswith("_total")
                for labels, value in rows}
    old, new = flat(before), flat(after)
    return {key: _int(value - old.get(key, 0.0)) for key, value in sorted(new.items()) if value != old.get(key, 0.0)}


def _int(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def replica_request_counts(deltas: Sequence[CounterDelta | Mapping | None]) -> list[int | None]:
    """Finished requests each replica counted in the phase (``vllm:request_success`` delta)."""
    out: list[int | None] = []
    for delta in deltas:
        total = CounterDelta.of(delta).request_success
        out.append(int(total) if isinstance(total, (int, float)) else None)
    return out
