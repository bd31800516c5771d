"""Markdown for the live-traffic results (``sessions``, ``replay``, ``isolation``): what was sent, what the server
measured beside the prediction, and why they may differ. A value that was not measured prints ``n/a``."""

from __future__ import annotations

import os
from typing import Mapping, Sequence

from ..core.attribution_records import AttributionSummary
from ..core.live_records import EngineModel, HitRates, Prediction
from ..core.live_results import LiveResult, SaltingCost, Verdict
from ..core.replay_records import Skipped, TraceHitRate
from ..core.session_records import SessionsBaseline, TurnLine
from .format import NA, num, pct, value
from .plot import save_figure


def _table(columns: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    lines += ["| " + " | ".join(c if isinstance(c, str) else value(c) for c in row) + " |" for row in rows]
    return lines + [""]


def _load(result: Mapping) -> LiveResult:
    return LiveResult.from_json(result, reset_missing=NA)


def _header(result: LiveResult, title: str) -> list[str]:
    config, server = result.config, result.server
    lines = [f"# {title}", "", f"- status: **{result.status}**" + (f" ({result.error})" if result.error else ""),
             f"- server: {config.get('endpoint')} model `{config.get('model')}`, backend {server.backend}, "
             f"block size {value(server.block_size)}, pool {value(server.num_blocks)} blocks, "
             f"context {value(server.max_model_len)} tokens",
             f"- cache reset: {result.reset_status}", ""]
    return lines


def _prediction(result: LiveResult) -> list[str]:
    rates = result.hit_rates or HitRates("", None, None, None, None)
    prediction = result.prediction or Prediction()
    engine = prediction.engine_model or EngineModel(False, None)
    model = ("vLLM block pool engine model (vLLM " + str(engine.vllm_version) + ")" if engine.used
             else f"the teaching simulator ({prediction.policy or NA})"
             + (f": {engine.reason}" if engine.reason else ""))
    lines = ["## Hit rate: predicted vs measured", "",
             *_table(["", "value"], [
                 ["predicted", pct(rates.predicted)], ["measured", pct(rates.measured)],
                 ["measured evidence", str(rates.measured_evidence)],
                 ["predicted hit tokens", prediction.predicted_hit_tokens],
                 ["measured hit tokens", prediction.measured_hit_tokens],
                 ["difference (measured - predicted)", prediction.difference_tokens],
                 ["exact expected", str(prediction.exact_expected if result.prediction else None)]]),
             f"Predicted with {model}."]
    if rates.measured_reason:
        lines.append(f"Measured: {rates.measured_reason}.")
    lines += [f"- caveat: {c}" for c in prediction.caveats]
    return lines + [""]


def _warnings(result: LiveResult) -> list[str]:
    warnings = result.warnings
    return (["## Warnings", ""] + [f"- {w}" for w in warnings] + [""]) if warnings else []


def _verdict(verdict: Verdict) -> list[str]:
    return [f"## Verdict: {verdict.verdict}", ""] + [f"- {r}" for r in verdict.reasons]


def render_isolation(data: Mapping) -> str:
    result = _load(data)
    verdict, cost = Verdict.from_json(result.part("isolation")), SaltingCost.from_json(result.part("cost"))
    lines = _header(result, "Tenant isolation by cache_salt")
    lines += _verdict(verdict)
    lines += ["", "## Probe (one prompt, each request alone)", ""]
    rows = [[r["label"], str(r["cache_salt"]), str(r["may_hit"]), r["cached_tokens"], r["counter_hit_tokens"],
             r["predicted_hit_tokens"]] for r in result.requests if r["phase"] == "probe"]
    lines += _table(["request", "cache_salt", "may hit", "cached_tokens", "counter hits", "predicted"], rows)
    if cost is not None:
        lines += ["## What salting costs (a salt per tenant vs none)", ""]
        lines += _table(["workload", "requests", "predicted", "measured"], [
            [name, c.requests, pct(c.predicted_hit_rate), pct(c.measured_hit_rate)]
            for name, c in (("unsalted", cost.unsalted), ("salted", cost.salted))]
            + [["cost (points)", "", num(cost.predicted_cost_points, "{:.2f}"),
                num(cost.measured_cost_points, "{:.2f}")]])
    prediction = result.prediction or Prediction()
    lines += [f"Prediction: block model with the salt in the first block's key, policy {prediction.policy}; "
              f"{prediction.requests_matching} of {len(result.requests)} requests measured "
              "exactly the predicted hit tokens.", ""]
    return "\n".join(lines + _warnings(result))


def _ms(v: float | None) -> str:
    return NA if v is None else f"{v:.1f}"


def render_sessions(data: Mapping) -> str:
    result = _load(data)
    config = result.config
    lines = _header(result, f"Multi-turn sessions ({config.get('kind')}): is prefix caching paying off?")
    lines += [f"{config.get('users')} sessions x {config.get('turns')} turns, system prompt "
              f"{config.get('system_prompt_len')} tokens, {config.get('concurrency')} session(s) at once; each turn "
              "resends the history with the tokens the server generated.", ""]
    lines += _verdict(result.verdict) + [""]
    lines += _prediction(result)
    lines += ["## Per turn", "", "The client estimate is what client-side benchmarks report as cached: the previous "
              "turn's prompt and output, blind to block boundaries and evictions.", ""]
    lines += _table(["turn", "requests", "prompt tokens", "predicted", "cached_tokens", "counters", "client estimate",
                     "TTFT p50 ms"],
                    [[t.turn, t.requests, t.prompt_tokens, pct(t.predicted_hit_rate), pct(t.cached_rate),
                      pct(t.counter_hit_rate), pct(t.client_estimate_rate), _ms(t.ttft_ms_p50)]
                     for t in _turns(result)])
    lines += attribution_lines(result.attribution) + _baseline(SessionsBaseline.from_json(result.part("baseline")))
    prediction = result.prediction or Prediction()
    lines += [f"{prediction.requests_matching_cached_tokens} of {len(result.requests)} requests "
              "reported exactly the predicted hit tokens as cached_tokens.", ""]
    return "\n".join(lines + _warnings(result))


def attribution_lines(summary: AttributionSummary | None) -> list[str]:
    """The attribution's summary (``simulate.attribution``), for the live reports and the hit-rate one."""
    if summary is None:
        return []
    causes = [[cause, count] for cause, count in summary.by_cause.items() if count]
    lines = ["## Differences attributed", "",
             f"{summary.requests_that_differ} of {summary.requests} requests differ from the prediction "
             f"({summary.difference_tokens} tokens in all)." + (" By cause:" if causes else ""), ""]
    if causes:
        lines += _table(["cause", "requests"], causes)
    lost = summary.lost_tokens
    lines += [f"Shared tokens no cache could reuse: {value(lost.get('block_alignment'))} in partial blocks, "
              f"{value(lost.get('last_token_rule'))} by the last-token rule, {value(lost.get('eviction'))} "
              "evicted.", ""]
    return lines


def _turns(result: LiveResult) -> list[TurnLine]:
    return [TurnLine.from_json(t) for t in result.rows("per_turn")]


def _baseline(baseline: SessionsBaseline | None) -> list[str]:
    if baseline is None:
        return []
    lines = ["## TTFT per turn: cache off (G0) vs on (G1)", ""]
    lines += _table(["turn", "G0 TTFT p50 ms", "G1 TTFT p50 ms", "speed-up"],
                    [[t.turn, _ms(t.g0_ttft_ms_p50), _ms(t.g1_ttft_ms_p50),
                      NA if t.speedup is None else f"{t.speedup:.2f}x"] for t in baseline.per_turn])
    return lines + ([f"Warning: {baseline.warning}", ""] if baseline.warning else [])


def plot_sessions(result: Mapping, path: str | os.PathLike) -> object:
    """TTFT p50 (G0 and G1 with a baseline) and hit rate (predicted, measured, client estimate) per turn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    view = _load(result)
    turns = _turns(view)
    if not turns:
        return None
    x = [t.turn for t in turns]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.plot(x, [t.ttft_ms_p50 for t in turns], "o-", label="G1 (this run)")
    baseline = SessionsBaseline.from_json(view.part("baseline"))
    if baseline is not None and baseline.per_turn:
        g0 = baseline.per_turn
        left.plot([t.turn for t in g0], [t.g0_ttft_ms_p50 for t in g0], "s--", color="tab:gray",
                  label="G0 (cache off)")
    left.set(title="TTFT p50 per turn", xlabel="turn", ylabel="ms")
    left.legend()
    pct_of = lambda rates: [None if r is None else r * 100 for r in rates]  # noqa: E731
    right.plot(x, pct_of(t.predicted_hit_rate for t in turns), "o-", color="tab:orange", label="predicted")
    right.plot(x, pct_of(t.cached_rate for t in turns), "x--", color="tab:green", label="measured (cached_tokens)")
    right.plot(x, pct_of(t.client_estimate_rate for t in turns), ":", color="tab:gray", label="client estimate")
    right.set(title="hit rate per turn", xlabel="turn", ylabel="%", ylim=(0, 105))
    right.legend()
    fig.tight_layout()
    return save_figure(fig, path)


def render_replay(data: Mapping) -> str:
    result = _load(data)
    config = result.config
    own, skipped = TraceHitRate.from_json(result.part("trace_hit_rate")), Skipped.from_json(result.part("skipped"))
    prediction = result.prediction or Prediction()
    rates = result.hit_rates or HitRates("", None, None, None, None)
    lines = _header(result, f"Trace replay: {config.get('trace')}")
    lines += [f"{config.get('num_requests')} trace requests, {config.get('block_tokens')} tokens per trace block, "
              f"clock x{config.get('speed')}, outputs capped at {config.get('max_output_len')}, "
              f"{config.get('concurrency') or 'unlimited'} in flight.", ""]
    lines += _verdict(result.verdict) + [""]
    lines += _prediction(result)
    if prediction.overlap_note:
        lines += [f"Overlap: {prediction.overlap_note}.", ""]
    evictions = prediction.predicted_evictions
    lines += [("The predicted pool evicted nothing" if evictions == 0 else f"Evictions predicted: {value(evictions)}")
              + f"; predicted hit tokens that depend on arrival order: "
                f"{value(prediction.order_dependent_tokens)}.", ""]
    lines += ["## The trace's own hit rate beside the server's", ""]
    lines += _table(["", "block", "hit rate"], [
        ["trace (paper's blocks, unbounded cache)", own.block_tokens, pct(own.token_hit_rate)],
        ["server, predicted", result.server.block_size, pct(rates.predicted)],
        ["server, measured", result.server.block_size, pct(rates.measured)]])
    lines += [f"## Skipped: {skipped.count}", "", f"{skipped.reason or ''} "
              f"(context {value(skipped.context_tokens)} tokens).", ""]
    lines += [f"- {s.line}: {s.prompt_tokens} prompt + {s.output_tokens} output tokens"
              for s in skipped.requests] + [""]
    lines += attribution_lines(result.attribution)
    return "\n".join(lines + _warnings(result))
