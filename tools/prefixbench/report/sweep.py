"""A sweep for people: the per-point table, the headline, and the two plots (TTFT p90 against throughput with
repeats as error bars; goodput against load)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from ..core.sweep_records import GroupAtPoint, LoadPoint, Spread, SweepHeadline, points_of
from . import format as f
from .plot import save_figure
from .tables import interval

COLUMNS = ["load", "G0 TTFT p90 ms", "G1 TTFT p90 ms", "G0 req/s", "G1 req/s", "G0 goodput/s", "G1 goodput/s",
           "G1 hit rate", "TTFT p50 gain ms [95% CI]"]


def _load_text(load: LoadPoint) -> str:
    """``concurrency 4``; a file read back may hold no number there."""
    value = load.value
    return f"{load.kind} {value:g}" if isinstance(value, (int, float)) else f"{load.kind} {f.value(value)}"


def _ttft_p90(side: GroupAtPoint | None) -> float | None:
    ttft = side.metrics.ttft_ms if side else None
    return ttft.p90 if ttft else None


def sweep_rows(sweep: Mapping) -> list[list[str]]:
    rows = []
    for p in points_of(sweep):
        comparison = p.comparison.ttft_p50_gain_ms if p.comparison else None
        both = [f.value(metric(side)) for metric in (_ttft_p90,
                                                     lambda s: s.metrics.request_throughput_per_s if s else None,
                                                     lambda s: s.metrics.goodput_per_s if s else None)
                for side in (p.g0, p.g1)]
        rows.append([_load_text(p.load), *both, f.value(p.g1.hit.hit_rate if p.g1 else None),
                     interval(comparison) if comparison else "n/a"])
    return rows


def headline_text(sweep: Mapping) -> str:
    h = SweepHeadline.from_json(sweep.get("headline"))
    if h is None or h.status != "ok":
        return f"headline: n/a ({(h and h.reason) or 'the sweep did not finish'})"

    def side(name: str) -> str:
        g = h.side(name)
        if not g:
            return f"{name.upper()} sustains no point"
        more = " (the highest load swept)" if g.at_highest_load_swept else ""
        return f"{name.upper()} sustains {_load_text(g.load)}{more} at {f.value(g.goodput_per_s)} good req/s"

    slo = ", ".join(f"{name.upper()} <= {limit:g} ms" for name, limit in (("ttft", h.ttft_slo_ms),
                                                                            ("tpot", h.tpot_slo_ms))
                    if limit is not None)
    gain, there = h.capacity_gain, h.goodput_ratio_at_g1_limit
    attained = f.NA if h.attainment_required is None else format(h.attainment_required, ".0%")
    return (f"within {slo} ({attained} of requests): {side('g0')}; {side('g1')}; "
            f"capacity caching adds: {'x' + format(gain, '.2f') if gain else 'n/a (' + str(h.reason) + ')'}; "
            f"goodput G1 / G0 at G1's limit: {'x' + format(there, '.2f') if there else 'n/a'}")


def render_sweep_markdown(sweep: Mapping) -> str:
    config = sweep["config"]
    lines = [f"# Prefix cache sweep: {config['model']}, {config['num_prompts']} requests x {config['repeats']} "
             f"repeats per point", "", f"status: {sweep['status']}", "", headline_text(sweep), "",
             "| " + " | ".join(COLUMNS) + " |", "|" + " --- |" * len(COLUMNS)]
    lines += ["| " + " | ".join(row) + " |" for row in sweep_rows(sweep)]
    lines += ["", "TTFT / TPOT / E2E percentiles pool every request of every repeat; throughput and goodput are "
                  "means over repeats; G0's hit rate is null (caching off). The TTFT gain is G0 p50 - G1 p50 with "
                  "a bootstrap interval over requests and repeats."]
    return "\n".join(lines) + "\n"


def _bars(spreads: list[Spread]) -> tuple[list, list[list]]:
    """Means, and the distance down to each min and up to each max (matplotlib's ``yerr``); a point without a
    number is NaN, which matplotlib leaves out (a plot only, never a file's JSON)."""
    nan = float("nan")
    means = [nan if s.mean is None else s.mean for s in spreads]
    return means, [[nan if s.min is None else m - s.min for m, s in zip(means, spreads, strict=True)],
                   [nan if s.max is None else s.max - m for m, s in zip(means, spreads, strict=True)]]


def plot_sweep(sweep: Mapping, path: str | os.PathLike) -> Path | None:
    """TTFT p90 against request throughput (one curve per group, error bars: min..max over repeats) and goodput
    against load. ``None`` when no point has numbers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = points_of(sweep)
    if not any(side and side.metrics.request_throughput_per_s for p in points for side in (p.g0, p.g1)):
        return None
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for group, label, color in (("g0", "G0 cache off", "tab:gray"), ("g1", "G1 prefix cache", "tab:blue")):
        shown = [(p.load.value, side.metrics) for p in points if (side := p.group(group))
                 and side.metrics.request_throughput_per_s is not None]
        x = [m.request_throughput_over_repeats.mean for _, m in shown]
        left.errorbar(x, *_bars([m.ttft_p90_ms_over_repeats for _, m in shown]), marker="o", capsize=3,
                      color=color, label=label)
        loads = [load for load, _ in shown]
        good = [m.goodput_over_repeats for _, m in shown]
        if all(g.mean is not None for g in good):
            right.errorbar(loads, *_bars(good), marker="o", capsize=3, color=color, label=f"{label} goodput")
        right.plot(loads, x, linestyle="--", color=color, alpha=0.6, label=f"{label} throughput")
    kind = str(points[0].load.kind).replace("_", " ")
    left.set(title="TTFT p90 against throughput", xlabel="requests/s", ylabel="TTFT p90 (ms)")
    right.set(title="goodput against load", xlabel=kind, ylabel="requests/s")
    left.legend()
    right.legend(fontsize="small")
    fig.tight_layout()
    return save_figure(fig, path)
