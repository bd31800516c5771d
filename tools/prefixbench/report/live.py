"""Markdown for the live-traffic results (``sessions``, ``replay``, ``isolation``): what was sent, what the server
measured beside the prediction, and why they may differ. A value that was not measured prints ``n/a``."""

from __future__ import annotations

from typing import Mapping, Sequence

from .format import NA, num, pct, value
from .plot import save_figure


def _table(columns: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    lines += ["| " + " | ".join(c if isinstance(c, str) else value(c) for c in row) + " |" for row in rows]
    return lines + [""]


def _header(result: Mapping, title: str) -> list[str]:
    config, server = result.get("config") or {}, result.get("server") or {}
    lines = [f"# {title}", "", f"- status: **{result.get('status')}**" + (
        f" ({result['error']})" if result.get("error") else ""),
             f"- server: {config.get('endpoint')} model `{config.get('model')}`, backend {server.get('backend')}, "
             f"block size {value(server.get('block_size'))}, pool {value(server.get('num_blocks'))} blocks, "
             f"context {value(server.get('max_model_len'))} tokens",
             f"- cache reset: {((result.get('phases') or {}).get('reset') or {}).get('status', NA)}", ""]
    return lines


def _prediction(result: Mapping) -> list[str]:
    rates, prediction = result.get("hit_rates") or {}, result.get("prediction") or {}
    engine = prediction.get("engine_model") or {}
    model = ("vLLM block pool engine model (vLLM " + str(engine.get("vllm_version")) + ")" if engine.get("used")
             else f"the teaching simulator ({prediction.get('policy', NA)})"
             + (f": {engine['reason']}" if engine.get("reason") else ""))
    lines = ["## Hit rate: predicted vs measured", "",
             *_table(["", "value"], [
                 ["predicted", pct(rates.get("predicted"))], ["measured", pct(rates.get("measured"))],
                 ["measured evidence", str(rates.get("measured_evidence"))],
                 ["predicted hit tokens", prediction.get("predicted_hit_tokens")],
                 ["measured hit tokens", prediction.get("measured_hit_tokens")],
                 ["difference (measured - predicted)", prediction.get("difference_tokens")],
                 ["exact expected", str(prediction.get("exact_expected"))]]),
             f"Predicted with {model}."]
    if rates.get("measured_reason"):
        lines.append(f"Measured: {rates['measured_reason']}.")
    lines += [f"- caveat: {c}" for c in prediction.get("caveats") or []]
    return lines + [""]


def _warnings(result: Mapping) -> list[str]:
    warnings = result.get("warnings") or []
    return (["## Warnings", ""] + [f"- {w}" for w in warnings] + [""]) if warnings else []


def render_isolation(result: Mapping) -> str:
    verdict, cost = result.get("isolation") or {}, result.get("cost") or {}
    lines = _header(result, "Tenant isolation by cache_salt")
    lines += [f"## Verdict: {verdict.get('verdict', 'UNKNOWN')}", ""] + [f"- {r}" for r in verdict.get("reasons") or []]
    lines += ["", "## Probe (one prompt, each request alone)", ""]
    rows = [[r["label"], str(r["cache_salt"]), str(r["may_hit"]), r["cached_tokens"], r["counter_hit_tokens"],
             r["predicted_hit_tokens"]] for r in result.get("requests") or [] if r["phase"] == "probe"]
    lines += _table(["request", "cache_salt", "may hit", "cached_tokens", "counter hits", "predicted"], rows)
    if cost:
        lines += ["## What salting costs (a salt per tenant vs none)", ""]
        phases = [(name, cost[name] or {}) for name in ("unsalted", "salted")]
        lines += _table(["workload", "requests", "predicted", "measured"], [
            [name, c.get("requests"), pct(c.get("predicted_hit_rate")), pct(c.get("measured_hit_rate"))]
            for name, c in phases] + [["cost (points)", "", num(cost.get("predicted_cost_points"), "{:.2f}"),
                                       num(cost.get("measured_cost_points"), "{:.2f}")]])
    prediction = result.get("prediction") or {}
    lines += [f"Prediction: block model with the salt in the first block's key, policy {prediction.get('policy')}; "
              f"{prediction.get('requests_matching')} of {len(result.get('requests') or [])} requests measured "
              "exactly the predicted hit tokens.", ""]
    return "\n".join(lines + _warnings(result))


def _ms(v: float | None) -> str:
    return NA if v is None else f"{v:.1f}"


def render_sessions(result: Mapping) -> str:
    config = result.get("config") or {}
    lines = _header(result, f"Multi-turn sessions ({config.get('kind')}): is prefix caching paying off?")
    lines += [f"{config.get('users')} sessions x {config.get('turns')} turns, system prompt "
              f"{config.get('system_prompt_len')} tokens, {config.get('concurrency')} session(s) at once; each turn "
              "resends the history with the tokens the server generated.", ""]
    lines += [f"## Verdict: {(result.get('verdict') or {}).get('verdict', 'UNKNOWN')}", ""]
    lines += [f"- {r}" for r in (result.get("verdict") or {}).get("reasons") or []] + [""]
    lines += _prediction(result)
    lines += ["## Per turn", "", "The client estimate is what client-side benchmarks report as cached: the previous "
              "turn's prompt and output, blind to block boundaries and evictions.", ""]
    lines += _table(["turn", "requests", "prompt tokens", "predicted", "cached_tokens", "counters", "client estimate",
                     "TTFT p50 ms"],
                    [[t["turn"], t["requests"], t["prompt_tokens"], pct(t["predicted_hit_rate"]), pct(t["cached_rate"]),
                      pct(t["counter_hit_rate"]), pct(t["client_estimate_rate"]), _ms(t["ttft_ms_p50"])]
                     for t in result.get("per_turn") or []])
    lines += _attribution(result.get("attribution")) + _baseline(result.get("baseline"))
    prediction = result.get("prediction") or {}
    lines += [f"{prediction.get('requests_matching_cached_tokens')} of {len(result.get('requests') or [])} requests "
              "reported exactly the predicted hit tokens as cached_tokens.", ""]
    return "\n".join(lines + _warnings(result))


def _attribution(attribution: Mapping | None) -> list[str]:
    summary = (attribution or {}).get("summary")
    if not summary:
        return []
    causes = [[cause, count] for cause, count in (summary["by_cause"] or {}).items() if count]
    lines = ["## Differences attributed", "",
             f"{summary['requests_that_differ']} of {summary['requests']} requests differ from the prediction "
             f"({summary['difference_tokens']} tokens in all)." + (" By cause:" if causes else ""), ""]
    if causes:
        lines += _table(["cause", "requests"], causes)
    lost = summary["lost_tokens"] or {}
    lines += [f"Shared tokens no cache could reuse: {value(lost.get('block_alignment'))} in partial blocks, "
              f"{value(lost.get('last_token_rule'))} by the last-token rule, {value(lost.get('eviction'))} "
              "evicted.", ""]
    return lines


def _baseline(baseline: Mapping | None) -> list[str]:
    if not baseline:
        return []
    lines = ["## TTFT per turn: cache off (G0) vs on (G1)", ""]
    lines += _table(["turn", "G0 TTFT p50 ms", "G1 TTFT p50 ms", "speed-up"],
                    [[t["turn"], _ms(t["g0_ttft_ms_p50"]), _ms(t["g1_ttft_ms_p50"]),
                      NA if t["speedup"] is None else f"{t['speedup']:.2f}x"] for t in baseline.get("per_turn") or []])
    return lines + ([f"Warning: {baseline['warning']}", ""] if baseline.get("warning") else [])


def plot_sessions(result: Mapping, path) -> object:
    """TTFT p50 (G0 and G1 with a baseline) and hit rate (predicted, measured, client estimate) per turn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    turns = result.get("per_turn") or []
    if not turns:
        return None
    x = [t["turn"] for t in turns]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.plot(x, [t["ttft_ms_p50"] for t in turns], "o-", label="G1 (this run)")
    g0 = (result.get("baseline") or {}).get("per_turn") or []
    if g0:
        left.plot([t["turn"] for t in g0], [t["g0_ttft_ms_p50"] for t in g0], "s--", color="tab:gray",
                  label="G0 (cache off)")
    left.set(title="TTFT p50 per turn", xlabel="turn", ylabel="ms")
    left.legend()
    pct_of = lambda key: [None if t[key] is None else t[key] * 100 for t in turns]  # noqa: E731
    right.plot(x, pct_of("predicted_hit_rate"), "o-", color="tab:orange", label="predicted")
    right.plot(x, pct_of("cached_rate"), "x--", color="tab:green", label="measured (cached_tokens)")
    right.plot(x, pct_of("client_estimate_rate"), ":", color="tab:gray", label="client estimate")
    right.set(title="hit rate per turn", xlabel="turn", ylabel="%", ylim=(0, 105))
    right.legend()
    fig.tight_layout()
    return save_figure(fig, path)


def render_replay(result: Mapping) -> str:
    config, own, skipped = result.get("config") or {}, result.get("trace_hit_rate") or {}, result.get("skipped") or {}
    prediction = result.get("prediction") or {}
    lines = _header(result, f"Trace replay: {config.get('trace')}")
    lines += [f"{config.get('num_requests')} trace requests, {config.get('block_tokens')} tokens per trace block, "
              f"clock x{config.get('speed')}, outputs capped at {config.get('max_output_len')}, "
              f"{config.get('concurrency') or 'unlimited'} in flight.", ""]
    lines += [f"## Verdict: {(result.get('verdict') or {}).get('verdict', 'UNKNOWN')}", ""]
    lines += [f"- {r}" for r in (result.get("verdict") or {}).get("reasons") or []] + [""]
    lines += _prediction(result)
    if prediction.get("overlap_note"):
        lines += [f"Overlap: {prediction['overlap_note']}.", ""]
    evictions = prediction.get("predicted_evictions")
    lines += [("The predicted pool evicted nothing" if evictions == 0 else f"Evictions predicted: {value(evictions)}")
              + f"; predicted hit tokens that depend on arrival order: "
                f"{value(prediction.get('order_dependent_tokens'))}.", ""]
    lines += ["## The trace's own hit rate beside the server's", ""]
    lines += _table(["", "block", "hit rate"], [
        ["trace (paper's blocks, unbounded cache)", own.get("block_tokens"), pct(own.get("token_hit_rate"))],
        ["server, predicted", (result.get("server") or {}).get("block_size"),
         pct((result.get("hit_rates") or {}).get("predicted"))],
        ["server, measured", (result.get("server") or {}).get("block_size"),
         pct((result.get("hit_rates") or {}).get("measured"))]])
    lines += [f"## Skipped: {skipped.get('count', 0)}", "", f"{skipped.get('reason', '')} "
              f"(context {value(skipped.get('context_tokens'))} tokens).", ""]
    lines += [f"- {s['line']}: {s['prompt_tokens']} prompt + {s['output_tokens']} output tokens"
              for s in skipped.get("requests") or []] + [""]
    lines += _attribution(result.get("attribution"))
    return "\n".join(lines + _warnings(result))
