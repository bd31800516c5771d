"""Rich tables for the terminal: the simulator's counts, the G0 / G1 summary, a hit-rate run, a comparison.

JSON output stays with the commands; this module only prints for people.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from rich.console import Console
from rich.table import Table

from ..core.sections import section
from ..core.evidence_records import EngineRow, agreement_brief
from ..core.interval_records import Interval, bounds
from ..core.paired_records import PairedSummary
from ..core.replica_records import PolicyPredictions, ReplicaRow
from . import format as f


def key_value_table(rows: Mapping[str, object], title: str) -> Table:
    table = Table(title=title, show_header=True, header_style="bold")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, v in rows.items():
        table.add_row(key, f.value(v))
    return table


def print_rows(title: str, columns: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
    table = Table(title=title)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    Console().print(table)


def simulation_table(result: Mapping[str, object], title: str, console: Console | None = None) -> None:
    shown = {k: v for k, v in result.items() if k not in {"per_request_hit_tokens"}}
    for key in ("capacity_blocks", "capacity_tokens"):
        if key in shown and shown[key] is None:
            shown[key] = "unlimited"
    (console or Console()).print(key_value_table(shown, title))


def interval(d: Interval | None) -> str:
    """``+12.3 [+4.5, +20.1]`` for a bootstrap or paired difference, or why there is none."""
    found = bounds(d)
    if found is None:
        return f"n/a ({(d.reason if d else None) or 'not measured'})"
    estimate, low, high = found
    return f"{estimate:+.2f} [{low:+.2f}, {high:+.2f}]"


def confidence_rows(s: PairedSummary) -> dict:
    """The G1-vs-G0 differences with their intervals (summaries from before the intervals show none)."""
    c = s.confidence
    if c is None:
        return {}
    level = f.num(c.level, "{:.0%}")
    return {"repeats (G0 / G1)": f"{f.value(s.repeats[0])} / {f.value(s.repeats[1])}",
            f"TTFT p50 gain ms [{level} CI]": interval(c.ttft_p50_gain_ms),
            f"TPOT p50 gain ms [{level} CI]": interval(c.tpot_p50_gain_ms),
            f"throughput gain tok/s [{level} CI]": interval(c.throughput_gain_tokens_per_s)}


def paired_rows(s: PairedSummary) -> dict:
    """The paired differences the decision reads, with the spread pairing removed and the engine clock beside."""
    p = s.paired
    if p is None:
        return {}
    level, rows = f.num(p.level, "{:.0%}"), {}
    for d, name in ((p.ttft_gain_ms, "TTFT"), (p.tpot_gain_ms, "TPOT"), (p.e2e_gain_ms, "E2E")):
        extra = "" if d.estimate is None or d.spread is None else (
            f" (p {f.num(d.spread.p_value, '{:.3g}')}; unpaired width {f.num(d.spread.unpaired_ci_width, '{:.1f}')}, "
            f"pairing removed {f.pct(d.spread_removed)})")
        rows[f"paired {name} gain ms [{level} CI]"] = interval(d) + extra
    signal = s.server_ttft_signal
    if signal is not None:
        rows["engine-clock TTFT vs client"] = f"{signal.agreement}: {signal.note}"
    return rows


def routing_rows(s: PairedSummary) -> dict:
    """G1's replicas: each one's hit rate measured / predicted, and each policy's predicted loss to the best."""
    r = s.routing
    if not isinstance(r, Mapping) or not r:
        return {}
    replicas = r.get("per_replica")
    rows = {f"G1 replica {f.value(x.get('replica'))} hit rate (measured / predicted)":
            f"{f.value(x.get('hit_rate'))} / {f.value(x.get('predicted_hit_rate'))} "
            f"({f.value(x.get('requests'))} requests)"
            for x in (replicas if isinstance(replicas, list) else []) if isinstance(x, Mapping)}
    lost = section(r, "predicted_lost_to_best")
    policy = f"{f.value(r.get('policy'))} x {f.value(r.get('replicas'))}"
    rows[f"routing {policy}: predicted hit rate lost to best"] = ", ".join(f"{name} {f.value(v)}"
                                                                         for name, v in lost.items())
    for name, entry in section(section(r, "measured_comparison"), "policies").items():
        m = entry if isinstance(entry, Mapping) else {}  # a damaged entry: every number n/a
        rows[f"measured {name}: hit rate (lost) / TTFT p50 ms (lost)"] = (
            f"{f.value(m.get('hit_rate'))} ({f.value(m.get('hit_rate_lost_to_best'))}) / "
            f"{f.value(m.get('ttft_p50_ms'))} ({f.value(m.get('ttft_p50_lost_to_best_ms'))})")
    return rows


def print_g0g1_report(summary: Mapping) -> None:
    Console().print(key_value_table(g0g1_rows(summary), title="prefix cache G0 / G1"))


def g0g1_rows(summary: Mapping) -> dict[str, object]:
    """The G0 / G1 summary's numbers and decision, one row each: the console table and ``report``'s Markdown."""
    paired = PairedSummary.from_json(section(summary, "paired_summary"))
    side, decision, config = paired.side, paired.decision, section(summary, "config")
    return {
        "model": config.get("model"),
        "requests / concurrency": f"{f.value(config.get('num_prompts'))} / {f.value(config.get('concurrency'))}",
        "TTFT p50 ms (G0 -> G1)": f.pair(side.g0_ttft_p50_ms, side.g1_ttft_p50_ms),
        "TPOT p50 ms (G0 -> G1)": f.pair(side.g0_tpot_p50_ms, side.g1_tpot_p50_ms),
        "throughput tok/s (G0 -> G1)": f.pair(side.g0_throughput_tokens_per_s, side.g1_throughput_tokens_per_s),
        "hit rate (evidence)": f"{f.value(side.hit_rate)} ({side.hit_rate_evidence})",
        "hit tokens measured / predicted": f"{f.value(side.hit_tokens)} / {f.value(side.predicted_hit_tokens)}",
        "TTFT speedup (bound 1/(1-h))": f"{f.value(side.ttft_speedup)} ({f.value(side.ttft_speedup_bound)})",
        "server TTFT mean ms (G0 -> G1)": f.pair(side.g0_server_ttft_mean_ms, side.g1_server_ttft_mean_ms),
        "overhead (TPOT slowdown)": f"{f.value(paired.overhead.g1)} ({paired.overhead.source})",
        **confidence_rows(paired),
        **paired_rows(paired),
        **routing_rows(paired),
        "peak memory MiB (G0 -> G1)": f.pair(side.g0_peak_memory_mib, side.g1_peak_memory_mib),
        "status": decision.status,
        "decision": decision.decision,
        "reason": decision.reason,
    }


def print_hitrate_table(result: Mapping, paths: Mapping) -> None:
    rates, prediction = result["hit_rates"], result.get("prediction") or {}
    s = result.get("summary") or {}
    rows = {
        "status": result["status"],
        "requests / errors": f"{s.get('requests', 0)} / {s.get('error_count', f.NA)}",
        "target hit rate": f.pct(rates["target"]),
        "block-aligned target": f.pct(rates["block_aligned_target"]),
        "predicted hit rate": f.pct(rates["predicted"]),
        "measured hit rate": f"{f.pct(rates['measured'])} ({rates['measured_evidence'] or rates['measured_reason']})",
        "measured - predicted tokens": prediction.get("difference_tokens"),
        "TTFT / TPOT / E2E p50 ms": " / ".join(f.ms(s.get(k)) for k in ("ttft_ms", "tpot_ms", "e2e_ms")),
        "evidence agrees": agreement_brief(result),
        "verdict": result["verdict"]["verdict"],
        "why": "; ".join(result["verdict"]["reasons"]),
        "report": paths.get("markdown"),
    }
    engines = [EngineRow.from_json(e) for e in result.get("engines") or []]
    if len(engines) > 2 and not result.get("replicas"):  # replicas get their own rows below
        for engine in engines:
            rows[f"engine {engine.engine}"] = f"{f.pct(engine.hit_rate)} ({engine.hit_tokens} / {engine.query_tokens})"
    for replica in map(ReplicaRow.from_json, result.get("replicas") or []):
        predicted = None if replica.prediction is None else replica.prediction.predicted_hit_tokens
        rows[f"replica {replica.label}"] = (f"{f.pct(replica.evidence.hit_rate)} ({replica.hit_tokens} / "
                                            f"{replica.query_tokens}; predicted {predicted})")
    policies = PolicyPredictions.from_json(section(result, "routing"))
    if policies is not None and policies.predicted_by_policy:
        rows["policies (block model)"] = ", ".join(f"{k} {f.pct(v)}" for k, v in policies.predicted_by_policy.items())
    Console(stderr=True).print(key_value_table(rows, title="prefix-cache hit rate"))
