"""A sweep for people: the per-point table, the headline, and the two plots (TTFT p90 against throughput with
repeats as error bars; goodput against load)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from ..core.group_records import section
from . import format as f
from .plot import save_figure
from .tables import interval

COLUMNS = ["load", "G0 TTFT p90 ms", "G1 TTFT p90 ms", "G0 req/s", "G1 req/s", "G0 goodput/s", "G1 goodput/s",
           "G1 hit rate", "TTFT p50 gain ms [95% CI]"]


def _metric(point: Mapping, group: str, key: str, sub: str | None = None):
    value = section(section(point, group), "metrics").get(key)
    return value.get(sub) if sub and isinstance(value, Mapping) else value


def sweep_rows(sweep: Mapping) -> list[list[str]]:
    rows = []
    for p in sweep["points"]:
        comparison = section(p, "comparison").get("ttft_p50_gain_ms")
        both = [f.value(_metric(p, g, *key)) for key in (("ttft_ms", "p90"), ("request_throughput_per_s",),
                                                           ("goodput_per_s",)) for g in ("g0", "g1")]
        rows.append([f"{p['load']['kind']} {p['load']['value']:g}", *both,
                     f.value(section(p, "g1").get("hit_rate")), interval(comparison) if comparison else "n/a"])
    return rows


def headline_text(sweep: Mapping) -> str:
    h = sweep.get("headline") or {}
    if h.get("status") != "ok":
        return f"headline: n/a ({h.get('reason') or 'the sweep did not finish'})"

    def side(name: str) -> str:
        g = h.get(name)
        if not g:
            return f"{name.upper()} sustains no point"
        more = " (the highest load swept)" if g["at_highest_load_swept"] else ""
        return (f"{name.upper()} sustains {g['load']['kind']} {g['load']['value']:g}{more} at "
                f"{f.value(g['goodput_per_s'])} good req/s")

    slo = ", ".join(f"{k.replace('_slo_ms', '').upper()} <= {h[k]:g} ms" for k in ("ttft_slo_ms", "tpot_slo_ms")
                    if h.get(k) is not None)
    gain, there = h.get("capacity_gain"), h.get("goodput_ratio_at_g1_limit")
    return (f"within {slo} ({h['attainment_required']:.0%} of requests): {side('g0')}; {side('g1')}; "
            f"capacity caching adds: {'x' + format(gain, '.2f') if gain else 'n/a (' + str(h['reason']) + ')'}; "
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


def plot_sweep(sweep: Mapping, path: str | os.PathLike) -> Path | None:
    """TTFT p90 against request throughput (one curve per group, error bars: min..max over repeats) and goodput
    against load. ``None`` when no point has numbers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = sweep.get("points") or []
    if not any(_metric(p, g, "request_throughput_per_s") for p in points for g in ("g0", "g1")):
        return None
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for group, label, color in (("g0", "G0 cache off", "tab:gray"), ("g1", "G1 prefix cache", "tab:blue")):
        shown = [p for p in points if _metric(p, group, "request_throughput_per_s") is not None]
        x = [_metric(p, group, "request_throughput_over_repeats")["mean"] for p in shown]
        ttft = [_metric(p, group, "ttft_p90_ms_over_repeats") for p in shown]
        y = [t["mean"] for t in ttft]
        yerr = [[m - t["min"] for m, t in zip(y, ttft, strict=True)],
                [t["max"] - m for m, t in zip(y, ttft, strict=True)]]
        left.errorbar(x, y, yerr=yerr, marker="o", capsize=3, color=color, label=label)
        loads = [p["load"]["value"] for p in shown]
        good = [_metric(p, group, "goodput_over_repeats") for p in shown]
        if all(g["mean"] is not None for g in good):
            gy = [g["mean"] for g in good]
            right.errorbar(loads, gy, yerr=[[m - g["min"] for m, g in zip(gy, good, strict=True)],
                                            [g["max"] - m for m, g in zip(gy, good, strict=True)]],
                           marker="o", capsize=3, color=color, label=f"{label} goodput")
        right.plot(loads, x, linestyle="--", color=color, alpha=0.6, label=f"{label} throughput")
    kind = points[0]["load"]["kind"].replace("_", " ")
    left.set(title="TTFT p90 against throughput", xlabel="requests/s", ylabel="TTFT p90 (ms)")
    right.set(title="goodput against load", xlabel=kind, ylabel="requests/s")
    left.legend()
    right.legend(fontsize="small")
    fig.tight_layout()
    return save_figure(fig, path)
