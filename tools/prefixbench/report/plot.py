"""The hit-rate run's picture: the TTFT distribution (beside a cache-off baseline) and the three hit rates."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from ..core.files import atomic_write_bytes
from ..core.sections import section

if TYPE_CHECKING:  # matplotlib is imported only when a plot is drawn
    from matplotlib.figure import Figure


HIT_RATE_BARS = ("target", "block-aligned", "predicted", "measured")


def hitrate_plot_data(result: Mapping) -> dict:
    """Everything ``plot_hitrate`` reads from a result, without drawing: the TTFTs, the cache-off reference,
    shared histogram edges and the four hit rates (a property test checks this part on every damaged result;
    drawing is matplotlib's)."""
    ttfts = [r["ttft_ms"] for r in result.get("requests") or [] if r.get("ttft_ms") is not None]
    rates = result.get("hit_rates") or {}
    reference = section(result, "speedup").get("baseline_ttft_ms") or []
    bins = None
    if ttfts:
        count = min(30, max(5, len(ttfts) // 2))
        low, high = min(ttfts + reference), max(ttfts + reference)
        bins = [low + (high - low) * i / count for i in range(count + 1)] if high > low else count  # shared edges
    values = [rates.get("target"), rates.get("block_aligned_target"), rates.get("predicted"), rates.get("measured")]
    return {"ttfts": ttfts, "reference": reference, "bins": bins,
            "bars": [(name, None if v is None else v * 100) for name, v in zip(HIT_RATE_BARS, values, strict=True)]}


def plot_hitrate(result: Mapping, path: str | os.PathLike) -> Path | None:
    """TTFT distribution and the three hit rates, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = hitrate_plot_data(result)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    if data["ttfts"]:
        if data["reference"]:
            left.hist(data["reference"], bins=data["bins"], color="tab:gray", alpha=0.6, label="baseline (cache off)")
        left.hist(data["ttfts"], bins=data["bins"], color="tab:blue", alpha=0.8, label="this run")
        if data["reference"]:
            left.legend()
    else:
        left.text(0.5, 0.5, "no successful request", ha="center", va="center", transform=left.transAxes)
    left.set(title="TTFT distribution", xlabel="TTFT (ms)", ylabel="requests")
    colors = ["tab:gray", "tab:olive", "tab:orange", "tab:green"]
    for i, (_, percent) in enumerate(data["bars"]):
        if percent is None:
            right.text(i, 0.02, "n/a", ha="center")
        else:
            right.bar(i, percent, color=colors[i])
            right.text(i, percent + 1, f"{percent:.1f}", ha="center")
    right.set_xticks(range(len(HIT_RATE_BARS)), HIT_RATE_BARS)
    right.set(title="hit rate (token level)", ylabel="%", ylim=(0, 105))
    fig.tight_layout()
    return save_figure(fig, path)


def save_figure(fig: Figure, path: str | os.PathLike, dpi: int = 100) -> Path:
    """Write a matplotlib figure as a PNG atomically (rendered in memory, then written and renamed) and close it."""
    import io

    import matplotlib.pyplot as plt

    rendered = io.BytesIO()
    try:
        fig.savefig(rendered, format="png", dpi=dpi)
    finally:
        plt.close(fig)
    return atomic_write_bytes(path, rendered.getvalue())

