"""Tenant isolation: a request must never hit blocks another tenant's ``cache_salt`` cached.

vLLM keys a request's blocks by its ``cache_salt`` (the first block's extra keys, chained into every later one).
Two phases against a running server, every request alone (counters read after each):

1. **Probe**: one fresh prompt sent with salt a, a again, salt b, no salt, no salt again, b again. A request
   *may* hit only when an earlier one had its salt (no salt is a class of its own). PASS when every request that
   may not hit measured 0 cached tokens and every one that may measured some; FAIL names each cross-salt hit and
   the salts whose blocks it can have reused; UNKNOWN when nothing was measured or a same-salt repeat never hit
   (caching off: isolation is not shown).
2. **Cost**: a tenant workload (tenants x requests, one shared system prefix, unique suffixes, round robin), sent
   once with a salt per tenant and once unsalted on a fresh prefix: what salting costs in hit rate, predicted
   and measured.

The prediction is one block-model replay of every request in server order, the salt folded into the first
block's key (``workload.salts``), so it stays exact.
"""

from __future__ import annotations

import random
import secrets
import time
from typing import Callable, Mapping, Sequence

from ..core.live_results import IsolationVerdict, LiveRunResult, SaltedPhase, SaltingCost
from ..core.records import SCHEMA_ISOLATION
from ..core.request_rows import RequestRow
from ..core.progress import progress_bar
from ..measure import client
from . import live as lv

PROBE_STEPS = (("a", "salt a"), ("a", "salt a again"), ("b", "salt b"), (None, "no salt"),
               (None, "no salt again"), ("b", "salt b again"))
VOCAB = (10, 1000)


def run_isolation(*, endpoint: str, model: str, metrics: Sequence[dict], prompt_len: int = 401, tenants: int = 4,
                  requests_per_tenant: int = 4, shared_len: int | None = None, suffix_len: int = 64,
                  seed: int | None = None, reset_cache: bool = True, block_size: int | None = None,
                  kv_blocks: int | None = None, progress: bool = False, timeout_s: float = 300.0,
                  on_update: Callable[[dict], None] | None = None,
                  log: Callable[[str], None] = lambda _: None) -> LiveRunResult:
    """Probe and cost phases (module docstring); never raises for a server problem."""
    seed = secrets.randbelow(2**31) if seed is None else seed
    config = {"prompt_len": prompt_len, "tenants": tenants, "requests_per_tenant": requests_per_tenant,
              "shared_len": shared_len, "suffix_len": suffix_len, "seed": seed, "reset_cache": reset_cache,
              "api": "/v1/completions with token-id prompts and \"cache_salt\""}
    run = lv.start(SCHEMA_ISOLATION, endpoint=endpoint, model=model, metrics=metrics, config=config,
                   on_update=on_update, timeout_s=timeout_s, kv_blocks=kv_blocks)
    state: dict = {"plan": [], "counters": {}}

    def phases() -> None:
        lv.probe(run, block_size)
        lv.reset(run, reset_cache, log)
        state["plan"] = _plan(run, random.Random(seed), prompt_len=prompt_len, tenants=tenants,
                              per_tenant=requests_per_tenant, shared_len=shared_len, suffix_len=suffix_len)
        lv.measure(run, lambda: _send_all(run, state["plan"], state["counters"], progress))

    lv.finish(run, lv.guarded(run, phases))
    _assemble(run, state["plan"], state["counters"])
    return run.result


def _plan(run: lv.Live, rng: random.Random, *, prompt_len: int, tenants: int, per_tenant: int,
          shared_len: int | None, suffix_len: int) -> list[dict]:
    """Every request of both phases, in send order, with its phase, salt and prompt."""
    nonce = f"{rng.randrange(16**8):08x}"
    tokens = lambda n: [rng.randrange(*VOCAB) for _ in range(n)]  # noqa: E731
    probe = tokens(prompt_len)
    plan: list[dict] = [{"id": f"probe{i}", "phase": "probe", "label": label, "salt_class": salt,
                         "cache_salt": None if salt is None else f"{nonce}-{salt}", "prompt_token_ids": probe}
                        for i, (salt, label) in enumerate(PROBE_STEPS)]
    shared = shared_len if shared_len is not None else 3 * (run.server.get("block_size") or 128)
    run.result.config["shared_len"] = shared
    for phase in ("salted", "unsalted"):
        prefix = tokens(shared)
        for r in range(per_tenant):
            for t in range(tenants):
                plan.append({"id": f"{phase}-t{t}-r{r}", "phase": phase, "tenant": t, "label": f"tenant {t}",
                             "salt_class": f"tenant{t}" if phase == "salted" else None,
                             "cache_salt": f"{nonce}-tenant{t}" if phase == "salted" else None,
                             "prompt_token_ids": prefix + tokens(suffix_len)})
    return plan


def _send_all(run: lv.Live, plan: list[dict], per_request: dict[str, dict], progress: bool) -> None:
    """Each request alone, the counters settled after each one (so each row has its own counter delta, kept in
    ``per_request`` by id)."""
    t0, before = time.perf_counter(), run.before
    with progress_bar(len(plan), "isolation" if progress else None) as advance:
        for item in plan:
            spec = client.RequestSpec(item["id"], item["prompt_token_ids"], 1, item["cache_salt"])
            run.collected.append(lv.send_one(run, spec, t0))
            after = run.scrape(settle=True)
            hits, queries = lv.counter_pair(before, after, len(item["prompt_token_ids"]))
            per_request[item["id"]] = {"counter_hit_tokens": hits, "counter_query_tokens": queries}
            before = after
            advance()


def _assemble(run: lv.Live, plan: list[dict], counters: Mapping[str, dict]) -> None:
    by_id = {p["id"]: p for p in plan}
    sent = lv.Sent(client.server_order(run.collected), {i: p["prompt_token_ids"] for i, p in by_id.items()},
                   True, {i: p["cache_salt"] for i, p in by_id.items()})
    ordered = sent.ordered
    found, _ = lv.measured(run, ordered)
    prediction, per_id, _ = lv.predict(run, sent, found, None)
    extra = {r.id: {**_row_extra(by_id[r.id]), **counters.get(r.id, {})} for r in ordered}
    rows = [r.with_columns(measured_hit_tokens=_measured_tokens(r)) for r in lv.request_rows(ordered, per_id, extra)]
    rows = _with_may_hit(rows)
    prediction.requests_matching = sum(r.columns["measured_hit_tokens"] == r.predicted_hit_tokens for r in rows)
    found_isolation = isolation_verdict([r for r in rows if r.columns["phase"] == "probe"])
    run.result.put(prediction=prediction, hit_rates=lv.hit_rates(prediction, found), requests=rows,
                   isolation=found_isolation, verdict=found_isolation, cost=salting_cost(rows))


def _row_extra(item: dict) -> dict:
    return {k: item.get(k) for k in ("phase", "label", "tenant", "cache_salt", "salt_class")}


def _measured_tokens(row: RequestRow) -> int | None:
    """A request's hits from the server: its counter delta when usable, else its ``cached_tokens``."""
    counted = row.columns.get("counter_hit_tokens")
    return counted if counted is not None else row.cached_tokens


def _with_may_hit(rows: Sequence[RequestRow]) -> list[RequestRow]:
    """``may_hit``: an earlier request of the same phase had this salt (or, like this one, none)."""
    seen: dict[str, set] = {}
    out = []
    for row in rows:
        classes = seen.setdefault(row.columns["phase"], set())
        out.append(row.with_columns(may_hit=row.columns["salt_class"] in classes if row.ok else None))
        classes.add(row.columns["salt_class"])
    return out


def isolation_verdict(rows: Sequence[RequestRow], expected: int = len(PROBE_STEPS)) -> IsolationVerdict:
    """PASS / FAIL / UNKNOWN for the probe rows (module docstring), with one reason per finding; fewer than
    ``expected`` rows (an interrupted run) can FAIL but never PASS."""
    shown = lambda s: "no salt" if s is None else f"salt {s}"  # noqa: E731
    done = [r for r in rows if r.ok]
    hit = lambda r: r.columns.get("measured_hit_tokens")  # noqa: E731
    salt = lambda r: r.columns.get("salt_class")  # noqa: E731
    leaks, reasons = [], []
    for i, row in enumerate(done):
        if not row.columns.get("may_hit") and (hit(row) or 0) > 0:
            others = sorted({shown(salt(r)) for r in done[:i] if salt(r) != salt(row)})
            leaks.append(row.id)
            source = (f"it reused blocks of {', '.join(others)}" if others else
                      "no other salt was sent before it, so the blocks come from before the run (the cache was "
                      "not empty)")
            reasons.append(f"{row.id} ({row.columns.get('label')}) hit {hit(row)} tokens though it is the first "
                           f"request with {shown(salt(row))}: {source}")
    if leaks:
        return IsolationVerdict("FAIL", leaks, reasons)
    if len(rows) < expected:
        return IsolationVerdict("UNKNOWN", [], [f"only {len(rows)} of {expected} probe requests were sent: isolation "
                                                "is not shown"])
    if len(done) < len(rows) or any(hit(r) is None for r in done):
        return IsolationVerdict("UNKNOWN", [], ["some probe requests failed or reported neither cached_tokens nor "
                                                "counters"])
    missed = [r.id for r in done if r.columns.get("may_hit") and hit(r) == 0]
    if missed:
        return IsolationVerdict("UNKNOWN", [], [f"same-salt repeats {', '.join(missed)} did not hit: caching is off or "
                                                "the prompt is shorter than a block, so isolation is not shown"])
    return IsolationVerdict("PASS", [], ["only requests with an earlier request of the same salt hit; every other one "
                                         "hit 0 tokens"])


def salting_cost(rows: Sequence[RequestRow]) -> SaltingCost:
    """Hit rate of the tenant workload with a salt per tenant and without salts, predicted and measured."""
    def phase(name: str) -> SaltedPhase:
        mine = [r for r in rows if r.columns.get("phase") == name]
        queries = sum(r.sent_prompt_tokens for r in mine)
        measured = [r.columns.get("measured_hit_tokens") for r in mine]
        predicted = [r.predicted_hit_tokens for r in mine]
        complete = bool(mine) and all(r.ok for r in mine)
        return SaltedPhase(len(mine), queries, _rate(predicted, queries, complete), _rate(measured, queries, complete))

    return SaltingCost.of(salted=phase("salted"), unsalted=phase("unsalted"))


def _rate(hits: Sequence[int | None], queries: int, complete: bool) -> float | None:
    """Hit tokens over query tokens when every request finished and has its figure."""
    total = lv.known_total(hits)
    return total / queries if complete and total is not None else None
