"""The hit-rate run as Markdown: every number with how to read it (the three hit rates, the rounding between
them, the verdict's thresholds), so a reader never has to guess. Also two runs side by side.

Each section is a function from the result to its lines; ``render_markdown`` only puts them in order.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ..core.attribution_records import AttributionSummary
from ..core.evidence_records import EngineRow, EvidenceAgreement, agreement_brief
from ..core.kv_event_records import KvEventSection
from ..core.live_records import ChatTemplateNote, Evidence, HitRates, Prediction, Speedup
from ..core.live_results import Verdict
from ..core.replica_records import Placement, ReplicaRow
from ..core.sections import section
from ..core.timeline_records import TimelineSection

from .format import ms, num, pct
from .live import attribution_lines


def render_markdown(result: Mapping) -> str:
    lines = ["# Prefix-cache hit-rate benchmark", ""]
    for render in (_header, _verdict, _hit_rates, _target_gap, _prediction, _evidence, _replicas, _engines,
                   _latency, _speedup, _chat_template, _warnings, _methodology):
        lines += render(result)
    return "\n".join(lines)


def _header(result: Mapping) -> list[str]:
    c, server, timing = result["config"], result.get("server") or {}, result.get("timing") or {}
    lines = []
    if result.get("status") != "ok":
        lines += [f"> **Status: {result.get('status')}**: {result.get('error') or ''}. Numbers below cover what "
                  "was measured before that.", ""]
    return lines + [
        "| Field | Value |", "| --- | --- |",
        f"| Model | `{c['model']}` |", f"| Endpoint | `{c['endpoint']}` |",
        f"| Backend | {server.get('backend') or 'unknown'} |",
        f"| Block size | {server.get('block_size') or 'unknown'} ({server.get('block_size_source') or 'n/a'}) |",
        f"| Workload | {c['workload']} (`{c['workload_id']}`) |",
        f"| Requests | {c['num_requests']} |",
        f"| Input / prefix length | {c['input_len'] or 'per file'} / {c['prefix_len'] or 'derived'} |",
        f"| Distinct prefixes | {c['prefix_num']} |",
        f"| Concurrency / rate | {c['concurrency'] or '-'} / {c['request_rate'] or '-'} |",
        f"| Prefill / cache reset | {'yes' if c['prefill'] else 'no'} / "
        f"{section(section(result, 'phases'), 'reset').get('status') or 'n/a'} |",
        f"| Setup / prefill / bench time | {num(timing.get('setup_s'), '{:.2f}s')} / "
        f"{num(timing.get('prefill_s'), '{:.2f}s')} / {num(timing.get('bench_s'), '{:.2f}s')} |", ""]


def _verdict(result: Mapping) -> list[str]:
    data = result.get("verdict")
    if not isinstance(data, Mapping):  # a run still going, or one that ended before its verdict
        return ["## Verdict: n/a", "", "", "Thresholds: ", ""]
    v = Verdict.from_json(data)
    lines = [f"## Verdict: {v.verdict}", ""] + [f"- {reason}" for reason in v.reasons]
    for check in v.latency_checks:
        lines.append(f"- latency check {check.check}: {'ok' if check.ok else 'FAILED'} ({check.value})")
    return lines + ["", f"Thresholds: {v.rules if 'rules' in data else ''}", ""]


def _hit_rates(result: Mapping) -> list[str]:
    rates = HitRates.from_json(section(result, "hit_rates"))
    prediction, measured = Prediction.from_json(section(result, "prediction")), _measured(result)
    lines = ["## Hit rates (token level)", "", "| | hit rate | hit tokens | query tokens | from |",
             "| --- | ---: | ---: | ---: | --- |",
             f"| Target | {pct(rates.target)} | | | {rates.target_basis} |",
             f"| Block-aligned target | {pct(rates.block_aligned_target)} | | | the target under the "
             "cache's rules (below) |",
             f"| Predicted | {pct(rates.predicted)} | {num(prediction.predicted_hit_tokens)} | "
             f"{num(prediction.predicted_query_tokens)} | simulator on the exact ids sent |",
             f"| Measured | {pct(rates.measured)} | {num(measured.hit_tokens)} | "
             f"{num(measured.query_tokens)} | {measured.hit_rate_evidence or 'n/a'} |", ""]
    if rates.measured is None:
        lines += [f"Measured is missing, not zero: {rates.measured_reason}", ""]
    return lines


def _evidence(result: Mapping) -> list[str]:
    """How the run knows: each source against the prediction, the timeline replay of overlapping requests, and why
    requests hit less than they share."""
    agreement = EvidenceAgreement.from_json(section(result, "evidence_agreement"))
    if agreement is None:  # nothing measured
        return []
    prediction, measured = Prediction.from_json(section(result, "prediction")), _measured(result)
    events = KvEventSection.from_json(section(result, "kv_events"))
    differ = agreement.requests_that_differ
    details = {
        "counters": f"{num(measured.hit_tokens)} hit tokens counted, {num(prediction.predicted_hit_tokens)} predicted",
        "cached_tokens": _requests(len(differ), "differs", "differ") + (f": {_ids(differ)}" if differ else ""),
        "kv_events": events.check.describe() if events is not None else None}
    sources = agreement.sources
    lines = ["## Evidence: does the server agree with the prediction?", "", "| source | agrees | detail |",
             "| --- | --- | --- |"]
    for source, agrees in sources.items():
        detail = details[source] if agrees is not None else agreement.reasons.get(source) or "not checked"
        lines.append(f"| {_SOURCE_NAMES[source]} | {_yes_no(agrees)} | {detail} |")
    lines += ["", _agreement_line(sources), ""]
    return lines + _timeline(TimelineSection.from_json(section(result, "timeline"))) + _attribution(result, agreement)


_SOURCE_NAMES = {"counters": "backend counters (total hit tokens)", "cached_tokens": "`cached_tokens` of each request",
                 "kv_events": "KV events, block by block"}


def _agreement_line(sources: Mapping[str, bool | None]) -> str:
    """A disagreement first, whatever else could not be checked; then what could not be checked."""
    disagree = [_SOURCE_NAMES[s] for s, agrees in sources.items() if agrees is False]
    missing = [_SOURCE_NAMES[s] for s, agrees in sources.items() if agrees is None]
    if disagree:
        return (f"Disagrees with the prediction: {', '.join(disagree)}."
                + (" The attribution below gives each differing request's cause." if sources["cached_tokens"] is False
                   else ""))
    if missing:
        return f"Every source checked agrees with the prediction; not checked: {', '.join(missing)} (n/a above)."
    return "Every source agrees with the prediction."


def _timeline(timeline: TimelineSection | None) -> list[str]:
    if timeline is None:
        return []
    lines = ["### Requests that overlapped: the engine's timeline", ""]
    if timeline.status != "ok":
        return lines + [f"Not replayed: {timeline.reason or 'no reason given'}.", ""]
    requests, unreported = len(timeline.requests), timeline.unreported
    if unreported == requests:
        return lines + ["Replayed at the arrivals the client observed, but the server reported no cached_tokens: no "
                        "request can be compared.", ""]
    outside = timeline.differ_outside_range
    lines += [f"Replayed at the arrivals the client observed: {num(timeline.requests_exact)} of "
              f"{requests - unreported} requests that reported cached_tokens exact"
              + (f" ({unreported} reported none)" if unreported else "")
              + f", {len(timeline.unsettled)} unsettled (the observations allow a range of hits), "
              f"{len(outside)} differ outside their range" + (f" ({_ids(outside)})." if outside else "."), ""]
    if timeline.kv_events is not None:
        lines += [f"KV events on the timeline: {timeline.kv_events.describe()}.", ""]
    return lines


def _attribution(result: Mapping, agreement: EvidenceAgreement) -> list[str]:
    """The attribution's summary, a level below the evidence; not for replicas (it models one shared cache)."""
    summary = AttributionSummary.of_result(result)
    if summary is None:
        return []
    if result.get("replicas"):
        return ["### Differences attributed", "", "Not shown for replicas: the attribution models one shared cache, "
                "so a token a request missed because it went to another replica would read as evicted.", ""]
    lines = [line.replace("## ", "### ", 1) if line.startswith("## ") else line for line in attribution_lines(summary)]
    if agreement.cached_tokens is None:
        lines += ["Requests without a cached_tokens figure are left out of the attribution.", ""]
    return lines


def _requests(count: int, one: str, many: str) -> str:
    return f"{count} request {one}" if count == 1 else f"{count} requests {many}"


def _yes_no(agrees: bool | None) -> str:
    return "n/a" if agrees is None else "yes" if agrees else "**no**"


def _ids(ids: Sequence[str], shown: int = 10) -> str:
    return ", ".join(f"`{i}`" for i in ids[:shown]) + (f" and {len(ids) - shown} more" if len(ids) > shown else "")


def _measured(result: Mapping) -> Evidence:
    """The run's evidence; a run that failed before measuring has none (every field ``None``)."""
    return Evidence.from_json(section(result, "measured"))


def _target_gap(result: Mapping) -> list[str]:
    breakdown = section(section(result, "hit_rates"), "target_breakdown")
    lines = ["### Why the target and the server's truth differ", ""]
    if not breakdown.get("available"):
        return lines + [f"- {breakdown.get('reason', 'n/a')}", ""]
    if breakdown.get("steps"):
        for step in breakdown["steps"]:
            lines.append(f"- **{step['rule']}** ({num(step['points'], '{:+.2f}')} points): {step['explanation']}")
    else:
        lines.append("- nothing: the prefix is whole blocks and every prefix was prefilled")
    lines.append(f"- so a correct cache shows {pct(breakdown.get('expected_hit_rate'))} for the "
                 f"{pct(breakdown.get('target_hit_rate'))} asked for")
    return lines + [""]


def _prediction(result: Mapping) -> list[str]:
    prediction = Prediction.from_json(section(result, "prediction"))
    rates = HitRates.from_json(section(result, "hit_rates"))
    lines = ["### Prediction against measurement", ""]
    if not prediction.available:
        return lines + [f"- no prediction: {prediction.reason}", ""]
    exact = prediction.exact_expected
    lines += [f"- measured - predicted = {num(prediction.difference_tokens, '{:+,}')} tokens "
              f"({num(rates.measured_minus_predicted_points, '{:+.3f}')} points)",
              f"- exact match expected: {'yes' if exact else 'no'}"
              + ("" if exact else " (" + "; ".join(prediction.caveats) + ")"),
              f"- predicted hits from blocks cached during the measured phase itself: "
              f"{num(prediction.in_phase_reuse_tokens)} tokens (only these depend on timing)"]
    if prediction.query_tokens_note:
        lines.append(f"- {prediction.query_tokens_note}")
    return lines + [""]


def _replicas(result: Mapping) -> list[str]:
    """Per replica counters and prediction, then how the placement compares with each client policy."""
    replicas = result.get("replicas")
    if not replicas:
        return []
    routing = Placement.from_json(section(result, "routing"))
    who = f"the client, `{routing.policy}`" if routing.mode == "client" else f"the router `{routing.router}`"
    lines = [f"## Replicas (placed by {who})", "",
             "| replica | requests | measured hit rate | hit tokens | query tokens | predicted hit tokens | matches |",
             "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in map(ReplicaRow.from_json, replicas):
        p = r.prediction or Prediction.unpredicted("n/a")
        lines.append(f"| {r.label} | {num(r.requests)} | {pct(r.evidence.hit_rate)} | {num(r.hit_tokens)} "
                     f"| {num(r.query_tokens)} | {num(p.predicted_hit_tokens)} | "
                     f"{p.matches_measured if p.matches_measured is not None else p.reason or 'n/a'} |")
    lines.append("")
    if routing.placement_reason:
        lines += [f"- placement unknown: {routing.placement_reason}"]
    spread = routing.prefix_spread
    if spread:
        lines += [f"- prefix groups ran on {num(spread.mean, '{:.2f}')} replicas on average ({spread.DEFINITION})"]
    policies = routing.policies
    if policies is not None and policies.predicted_by_policy:
        lines += ["- block model on the same requests: "
                  + ", ".join(f"{k} {pct(v)}" for k, v in policies.predicted_by_policy.items())
                  + f"; one shared pool {pct(policies.predicted_single_pool)}",
                  f"- measured against the best policy ({policies.best_policy}): "
                  f"{num(_points(policies.measured_lost_to_best_policy), '{:+.2f}')} points lost; against one "
                  f"pool: {num(_points(policies.measured_lost_to_single_pool), '{:+.2f}')} points "
                  f"({policies.MODEL_NOTE})"]
    return lines + [""]


def _points(share: float | None) -> float | None:
    return None if share is None else share * 100


def _engines(result: Mapping) -> list[str]:
    engines, lines = [EngineRow.from_json(e) for e in result.get("engines") or []], []
    if len(engines) > 2:
        lines += ["## Per engine", "", "| engine | hit rate | hit tokens | query tokens |",
                  "| --- | ---: | ---: | ---: |"]
        lines += [f"| {e.engine} | {pct(e.hit_rate)} | {num(e.hit_tokens)} | {num(e.query_tokens)} |" for e in engines]
        lines.append("")
    gauge = section(result, "server").get("sglang_cache_hit_rate_gauge")
    if gauge:
        lines += [f"SGLang gauge `sglang:cache_hit_rate` after the run: {gauge['value_after']}. {gauge['note']}.", ""]
    return lines


def _latency(result: Mapping) -> list[str]:
    summary = result.get("summary") or {}
    lines = ["## Latency (client clock, ms)", "", "| metric | p50 | p90 | p99 | mean |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for key, name in (("ttft_ms", "TTFT"), ("tpot_ms", "TPOT"), ("itl_ms", "ITL"), ("e2e_ms", "E2E")):
        stats = summary.get(key)
        lines.append(f"| {name} | {ms(stats)} | {ms(stats, 'p90')} | {ms(stats, 'p99')} | {ms(stats, 'mean')} |")
    return lines + ["", f"Requests {summary.get('requests', 'n/a')}, successful {summary.get('successful', 'n/a')}, "
                    f"errors {summary.get('error_count', 'n/a')}; output throughput "
                    f"{num(summary.get('throughput_tokens_per_s'), '{:.1f}')} tok/s.", ""]


def _speedup(result: Mapping) -> list[str]:
    sp = Speedup.from_json(result.get("speedup")) or Speedup(None, "", None)
    measured = (f" ({sp.reason})" if sp.reason else
                f" ({num(sp.baseline_ttft_p50_ms, '{:.1f}')} ms -> {num(sp.ttft_p50_ms, '{:.1f}')} ms)")
    lines = ["## Speed-up", "",
             f"- theoretical prefill speed-up 1/(1-h) at the measured h: {num(sp.ttft_speedup_bound, '{:.2f}x')}",
             f"- measured TTFT p50 speed-up against the cache-off baseline: "
             f"{num(sp.measured_ttft_speedup, '{:.2f}x')}" + measured]
    if sp.warning:
        lines.append(f"- warning: {sp.warning}")
    return lines + [""]


def _chat_template(result: Mapping) -> list[str]:
    note = ChatTemplateNote.from_json(section(result, "chat_template"))  # absent: every field None
    lines = ["## Prompts and the chat template", "",
             "Prompts are token ids sent to `/v1/completions`, so the server sees exactly the ids the prediction "
             "used: no chat template, no re-tokenization."]
    if note.explanation:
        lines.append(f"With `{note.tokenizer}`: {note.explanation}.")
    elif note.reason:
        lines.append(f"Chat template: {note.reason}.")
    return lines + [""]


def _warnings(result: Mapping) -> list[str]:
    return ["## Warnings", ""] + [f"- {w}" for w in result["warnings"]] + [""] if result.get("warnings") else []


def _methodology(result: Mapping) -> list[str]:
    return ["## Methodology", "",
            "- Hit rates are token level: hit tokens / prompt tokens of the measured phase. Measured comes from the "
            "server's counter deltas (vLLM `prefix_cache_hits/queries`, older `gpu_prefix_cache_*`; SGLang "
            "`cached_tokens/prompt_tokens`), snapshot after the prefill and after the last request.",
            "- Predicted: the prefix-cache simulator (LRU, last prompt token always recomputed) on the same ids in "
            "send order, prefill first and not counted, with the server's block size and capacity.",
            "- TTFT: send to first token; TPOT: (last - first token) / (tokens - 1); E2E: send to end of stream.",
            ""]


def render_compare(a: Mapping, b: Mapping, names: tuple[str, str]) -> tuple[list[tuple[str, str, str]], str]:
    """Rows ``(metric, a, b)`` and the same as a Markdown table."""
    def row(r: Mapping) -> dict:
        s, rates = section(r, "summary"), section(r, "hit_rates")
        return {
            "model": r["config"]["model"], "backend": section(r, "server").get("backend") or "unknown",
            "workload": r["config"]["workload_id"], "status": r.get("status"),
            "requests / errors": f"{s.get('requests', 'n/a')} / {s.get('error_count', 'n/a')}",
            "target": pct(rates.get("target")), "block-aligned target": pct(rates.get("block_aligned_target")),
            "predicted": pct(rates.get("predicted")), "measured": pct(rates.get("measured")),
            "evidence agrees": agreement_brief(r),
            "verdict": section(r, "verdict").get("verdict", "n/a"),
            "TTFT p50 ms": ms(s.get("ttft_ms")), "TPOT p50 ms": ms(s.get("tpot_ms")),
            "E2E p50 ms": ms(s.get("e2e_ms")),
            "output tok/s": num(s.get("throughput_tokens_per_s"), "{:.1f}"),
        }
    ra, rb = row(a), row(b)
    rows = [(k, str(ra[k]), str(rb[k])) for k in ra]
    md = [f"| metric | {names[0]} | {names[1]} |", "| --- | --- | --- |"] + [f"| {k} | {x} | {y} |" for k, x, y in rows]
    if ra["workload"] != rb["workload"]:
        md.append("\nThe two runs used different workloads: compare their hit rates with their own predictions.")
    return rows, "\n".join(md) + "\n"


