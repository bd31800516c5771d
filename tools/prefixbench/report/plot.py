"""The hit-rate run's picture: the TTFT distribution (beside a cache-off baseline) and the three hit rates."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping


def plot_hitrate(result: Mapping, path: str | os.PathLike) -> Path | None:
    """TTFT distribution and the three hit rates, as a PNG. ``None`` when there is nothing to draw."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ttfts = [r["ttft_ms"] for r in result.get("requests") or [] if r.get("ttft_ms") is not None]
    rates = result.get("hit_rates") or {}
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    reference = (result.get("speedup") or {}).get("baseline_ttft_ms") or []
    if ttfts:
        count = min(30, max(5, len(ttfts) // 2))
        low, high = min(ttfts + reference), max(ttfts + reference)
        bins = [low + (high - low) * i / count for i in range(count + 1)] if high > low else count  # shared edges
        if reference:
            left.hist(reference, bins=bins, color="tab:gray", alpha=0.6, label="baseline (cache off)")
        left.hist(ttfts, bins=bins, color="tab:blue", alpha=0.8, label="this run")
        if reference:
            left.legend()
    else:
        left.text(0.5, 0.5, "no successful request", ha="center", va="center", transform=left.transAxes)
    left.set(title="TTFT distribution", xlabel="TTFT (ms)", ylabel="requests")
    names = ["target", "block-aligned", "predicted", "measured"]
    values = [rates.get("target"), rates.get("block_aligned_target"), rates.get("predicted"), rates.get("measured")]
    colors = ["tab:gray", "tab:olive", "tab:orange", "tab:green"]
    for i, (name, value) in enumerate(zip(names, values)):
        if value is None:
            right.text(i, 0.02, "n/a", ha="center")
        else:
            right.bar(i, value * 100, color=colors[i])
            right.text(i, value * 100 + 1, f"{value * 100:.1f}", ha="center")
    right.set_xticks(range(len(names)), names)
    right.set(title="hit rate (token level)", ylabel="%", ylim=(0, 105))
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    os.replace(tmp, path)
    return path


def save_figure(fig, path: str | os.PathLike) -> Path:
    """Write a matplotlib figure as a PNG atomically (rendered in memory, then written and renamed) and close it."""
    import io

    import matplotlib.pyplot as plt

    rendered = io.BytesIO()
    fig.savefig(rendered, format="png", dpi=100)
    plt.close(fig)
    return atomic_write_bytes(path, rendered.getvalue())


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")
    partial.write_bytes(data)
    os.replace(partial, target)
    return target
