"""Multi-turn sessions against a running server: does prefix caching pay off when every turn resends the history?

``users`` sessions of ``turns`` turns (``workload.sessions``), at most ``concurrency`` sessions at once, each
session's turns one after another (a turn needs the tokens the server generated for the previous one, streamed
back as token ids). With ``concurrency == 1`` the counters are read after every turn, so each request has its own
counter delta beside its ``cached_tokens`` and its prediction; with more, the counters cover the whole phase.

Prediction: the engine model of vLLM's block pool when the pool size is known (generated-token blocks are cached,
as vLLM does): exact for sequential runs, an estimate in send order under concurrency; the teaching simulator
otherwise. Every difference is attributed per request (``simulate.attribution``: in flight, eviction, order).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Callable, Mapping, Sequence

from ..core.errors import InputError, require_int, require_number
from ..core.live_results import LiveRunResult
from ..core.sections import section
from ..core.progress import progress_bar
from ..core.records import SCHEMA_SESSIONS
from ..core.session_records import SessionRow, SessionsBaseline, TurnLine, TurnTtft, client_estimates
from ..decision.verdict import verdict
from ..measure import client
from ..workload import sessions as ws
from . import live as lv


def run_sessions(*, endpoint: str, model: str, metrics: Sequence[dict], plan: ws.SessionPlan, concurrency: int = 1,
                 think_time_s: float = 0.0, block_size: int | None = None, kv_blocks: int | None = None,
                 reset_cache: bool = True, baseline: Mapping | None = None, progress: bool = False,
                 timeout_s: float = 300.0, on_update: Callable[[dict], None] | None = None,
                 log: Callable[[str], None] = lambda _: None) -> LiveRunResult:
    """Send the sessions, read the counters, predict, attribute; never raises for a server problem."""
    if baseline is not None:
        check_baseline(baseline, "baseline")
    config = {**plan.to_dict(), "concurrency": concurrency, "think_time_s": think_time_s, "reset_cache": reset_cache,
              "api": "/v1/completions with token-id prompts; history = prompt + generated ids + new message"}
    run = lv.start(SCHEMA_SESSIONS, endpoint=endpoint, model=model, metrics=metrics, config=config,
                   on_update=on_update, timeout_s=timeout_s, kv_blocks=kv_blocks)
    state: dict[str, dict] = {"prompts": {}, "meta": {}, "counters": {}}

    def traffic() -> None:
        with progress_bar(plan.users * plan.turns, "sessions" if progress else None) as advance:
            client.run_loop(_drive(run, plan, concurrency, think_time_s, state, advance))

    def phases() -> None:
        lv.probe(run, block_size)
        _check_context(run, plan)
        lv.reset(run, reset_cache, log)
        lv.measure(run, traffic)

    lv.finish(run, lv.guarded(run, phases))
    _assemble(run, plan, state, lv.Sent(client.server_order(run.collected), state["prompts"], concurrency == 1),
              baseline)
    return run.result


def check_baseline(baseline: Mapping, where: str) -> Mapping:
    """What ``baseline_by_turn`` reads of the cache-off run, checked before any request is sent: a row without a
    turn, or a finished one without a TTFT, would otherwise crash the run after every request went out."""
    for key, kind in (("config", dict), ("requests", list)):
        if not isinstance(baseline.get(key), kind):
            raise InputError(f"{where}.{key}", f"must be a JSON {'object' if kind is dict else 'list'}")
    if baseline.get("server") is not None and not isinstance(baseline["server"], dict):
        raise InputError(f"{where}.server", "must be a JSON object or null")
    for i, row in enumerate(baseline["requests"]):
        at = f"{where}.requests[{i}]"
        if not isinstance(row, dict):
            raise InputError(at, "must be a JSON object")
        if "turn" not in row:
            raise InputError(f"{at}.turn", "is missing: each request row needs its turn")
        require_int(f"{at}.turn", row["turn"], minimum=0)
        if not isinstance(row.get("status"), str):
            raise InputError(f"{at}.status", f"must be a string, got {row.get('status')!r}")
        if row["status"] == "ok":
            require_number(f"{at}.ttft_ms", row.get("ttft_ms"), low=0.0)
    return baseline


def _check_context(run: lv.Live, plan: ws.SessionPlan) -> None:
    """The last turn must fit the server's context: a session cut short would measure something else."""
    longest, limit = ws.longest_prompt(plan) + plan.output_len, run.server.get("max_model_len")
    if limit is not None and longest > limit:
        raise InputError("--turns", f"the last turn needs {longest} tokens (prompt + output) but the server's "
                                    f"context is {limit}: fewer turns or shorter messages")


async def _drive(run: lv.Live, plan: ws.SessionPlan, concurrency: int, think_time_s: float, state: dict,
                 advance: Callable[[], None]) -> None:
    """Every session, at most ``concurrency`` at once; a session's turns in order."""
    gate, t0 = asyncio.Semaphore(concurrency), time.perf_counter()
    counted = {"before": run.before}

    async def session(user: int) -> None:
        async with gate:
            prompt = ws.first_prompt(plan, user)
            for turn in range(plan.turns):
                spec = client.RequestSpec(f"u{user}t{turn}", prompt, plan.output_len)
                state["prompts"][spec.id], state["meta"][spec.id] = prompt, {"user": user, "turn": turn}
                result = await lv.send_async(run, spec, t0)
                run.collected.append(result)
                if concurrency == 1:
                    await asyncio.to_thread(_count_turn, run, state, counted, spec.id, len(prompt))
                advance()
                if not _can_go_on(run, result, plan, turn):
                    return
                assert result.output_token_ids is not None  # _can_go_on ends a session without them
                prompt = ws.next_prompt(plan, user, turn + 1, prompt, result.output_token_ids)
                if think_time_s:
                    await asyncio.sleep(think_time_s)

    await asyncio.gather(*(session(u) for u in range(plan.users)))


def _count_turn(run: lv.Live, state: dict, counted: dict, request_id: str, sent_prompt_tokens: int) -> None:
    after = run.scrape(settle=True)
    hits, queries = lv.counter_pair(counted["before"], after, sent_prompt_tokens)
    state["counters"][request_id] = {"counter_hit_tokens": hits, "counter_query_tokens": queries}
    counted["before"] = after


def _can_go_on(run: lv.Live, result: client.RequestResult, plan: ws.SessionPlan, turn: int) -> bool:
    """A session goes on only with the tokens its last turn generated; otherwise it ends here, and says why."""
    if turn + 1 >= plan.turns:
        return False
    if result.status != "ok":
        run.warn(f"{result.id} failed, so its session ended there ({plan.turns - turn - 1} turns not sent)")
        return False
    if result.output_token_ids is None:
        run.warn(f"{result.id}: the server streamed no generated token ids (vLLM: \"return_token_ids\"), so its "
                 "session ended there: a later turn must resend exactly what was generated")
        return False
    return True


def _assemble(run: lv.Live, plan: ws.SessionPlan, state: dict, sent: lv.Sent, baseline: Mapping | None) -> None:
    result, ordered = run.result, sent.ordered
    found, delta = lv.measured(run, ordered)
    prediction, per_id, _ = lv.predict(run, sent, found, delta)
    extra = {i: {**state["meta"][i], **state["counters"].get(i, {})} for i in state["meta"]}
    rows = client_estimates(lv.request_rows(ordered, per_id, extra))
    prediction.requests_matching_cached_tokens = sum(r.row.cached_tokens == r.row.predicted_hit_tokens for r in rows)
    rates, summary = lv.hit_rates(prediction, found), client.aggregates(ordered, result.timing.get("bench_s") or 0.0)
    turns = per_turn(rows, plan.turns)
    if run.server.get("caching_enabled") is False:
        turns = [line.caching_off("prefix caching is off") for line in turns]
    result.put(prediction=prediction, hit_rates=rates, requests=rows, measured=found, backend_counters=delta,
               summary=summary, per_turn=turns, attribution=lv.attribution(run, sent, [r.row for r in rows], delta),
               baseline=baseline_by_turn(rows, baseline, plan) if baseline else None, verdict=verdict(rates, summary))


def per_turn(rows: Sequence[SessionRow], turns: int) -> list[TurnLine]:
    """One line per turn number over all sessions: prompt tokens, hits predicted / measured, TTFT."""
    out = []
    for turn in range(turns):
        mine = [r for r in rows if r.turn == turn and r.row.ok]
        prompt = sum(r.row.sent_prompt_tokens for r in mine)
        counts = (lv.known_total(r.row.predicted_hit_tokens for r in mine),
                  lv.known_total(r.row.cached_tokens for r in mine),
                  lv.known_total(r.counter_hit_tokens for r in mine),
                  lv.known_total(r.client_estimate_tokens for r in mine))
        predicted, cached, counted, estimate = (count / prompt if count is not None and prompt else None
                                                for count in counts)
        ttfts = [r.row.ttft_ms for r in mine if r.row.ttft_ms is not None]
        out.append(TurnLine(turn + 1, len(mine), prompt, *counts, statistics.median(ttfts) if ttfts else None,
                            predicted, cached, counted, estimate))
    return out


def baseline_by_turn(rows: Sequence[SessionRow], baseline: Mapping, plan: ws.SessionPlan) -> SessionsBaseline:
    """TTFT p50 per turn: the cache-off run (G0) beside this one (G1), and whether they ran the same sessions
    (``baseline``: a sessions result, checked by ``check_baseline``)."""
    g0_rows = [SessionRow.from_json(r) for r in baseline["requests"]]
    out = []
    for turn in sorted({r.turn for r in rows} | {r.turn for r in g0_rows}):
        g0 = [r.row.ttft_ms for r in g0_rows if r.turn == turn and r.row.ok and r.row.ttft_ms is not None]
        g1 = [r.row.ttft_ms for r in rows if r.turn == turn and r.row.ok and r.row.ttft_ms is not None]
        a, b = (statistics.median(g0) if g0 else None), (statistics.median(g1) if g1 else None)
        out.append(TurnTtft(turn + 1, a, b, a / b if a is not None and b else None))
    differ = [k for k, v in plan.to_dict().items() if baseline["config"].get(k) != v]
    return SessionsBaseline(out, baseline["config"].get("endpoint"), section(baseline, "server").get("caching_enabled"),
                            f"the baseline ran other sessions ({', '.join(differ)} differ): not like for like"
                            if differ else None)
