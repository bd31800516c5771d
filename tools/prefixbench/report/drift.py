"""The drift picture of a G0 / G1 run: every request's TTFT against its send time, both groups on one axis.

A change of the machine's load shows as both groups' TTFT rising together (interleaved: the two members of a
pair sit side by side in time) or as one group's whole run sitting higher (sequential: G0's and G1's runs are at
different times, so the axis is each run's own clock). The title states how much of the unpaired interval the
pairing removed (``decision.pairing``: ``spread_removed`` = 1 - paired width / unpaired width).
"""

from __future__ import annotations

import os
import statistics
from pathlib import Path
from typing import Mapping

from ..core.group_records import GroupRecord
from ..core.sections import section
from ..decision.pairing import pair_values
from .plot import save_figure

DRIFT_NAME = "69_prefix_cache_drift.png"


def _points(manifest: Mapping | None) -> list[tuple[float, float]]:
    """``(send time s, TTFT ms)`` of every successful request, repeats one after another on one time line."""
    points: list[tuple[float, float]] = []
    offset = 0.0
    for run in GroupRecord.from_json(manifest).runs if manifest else ():
        timed = [(r.sent_at_s, r.ttft_ms, r.e2e_ms) for r in run.rows if r.ok]
        rows = [(sent, ttft, e2e) for sent, ttft, e2e in timed
                if isinstance(sent, (int, float)) and isinstance(ttft, (int, float))]
        points += [(offset + sent, ttft) for sent, ttft, _ in rows]
        ends = [sent + (e2e or 0) / 1000 for sent, _, e2e in rows]
        offset += max(ends, default=0.0)
    return points


def drift_data(summary: Mapping, g0: Mapping | None, g1: Mapping | None) -> dict:
    """What ``plot_drift`` draws, without drawing: both groups' points, the schedule, and the spread removed."""
    paired = section(section(section(summary, "paired_summary"), "paired"), "ttft_gain_ms")
    schedule = section(section(summary, "config"), "schedule").get("schedule") or "sequential"
    p0, p1 = _points(g0), _points(g1)
    differences = [a - b for rep in pair_values(g0, g1, "ttft_ms") for a, b in rep]
    pair_sd = statistics.pstdev(differences) if len(differences) > 1 else None
    return {"g0": p0, "g1": p1, "schedule": schedule, "spread_removed": paired.get("spread_removed"),
            "paired_ci_width_ms": paired.get("ci_width"), "unpaired_ci_width_ms": paired.get("unpaired_ci_width"),
            "pair_difference_sd_ms": pair_sd, "headline": headline(paired, schedule)}


def headline(paired: Mapping, schedule: str) -> str:
    """One line: the interval widths paired and unpaired, and the share of the unpaired one pairing removed."""
    if any(not isinstance(paired.get(k), (int, float)) for k in ("estimate", "spread_removed", "ci_width",
                                                                   "unpaired_ci_width")):
        return f"{schedule}: no paired interval ({paired.get('reason') or 'not measured'})"
    removed = paired["spread_removed"]
    verb = "removed" if removed >= 0 else "added"
    return (f"{schedule}: pairing {verb} {abs(removed):.0%} of the unpaired spread (95% interval width "
            f"{paired['ci_width']:.1f} ms paired vs {paired['unpaired_ci_width']:.1f} ms unpaired)")


def plot_drift(summary: Mapping, g0: Mapping | None, g1: Mapping | None, path: str | os.PathLike) -> Path:
    """The PNG: TTFT against send time, G0 and G1 on one axis, the headline as the title."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = drift_data(summary, g0, g1)
    fig, ax = plt.subplots(figsize=(10, 4))
    for name, points, color in (("G0 cache off", data["g0"], "tab:gray"), ("G1 prefix cache", data["g1"], "tab:blue")):
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points], "o-", ms=4, lw=0.8, color=color, label=name)
    if not data["g0"] and not data["g1"]:
        ax.text(0.5, 0.5, "no successful request", ha="center", va="center", transform=ax.transAxes)
    clock = "one clock for both groups" if data["schedule"] == "interleaved" else "each group's own clock"
    ax.set(xlabel=f"send time (s, {clock})", ylabel="TTFT (ms)", title=data["headline"])
    ax.title.set_fontsize(9)
    if data["g0"] or data["g1"]:
        ax.legend()
    fig.tight_layout()
    return save_figure(fig, path)
