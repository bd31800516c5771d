"""The capacity plan for people: Markdown, a terminal table, and the hit-rate curve with the cliff marked."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from ..core.sections import section
from . import format as f
from .plot import save_figure


def _gib(v: float | None) -> str:
    return f.NA if v is None else f"{v:.3f} GiB"


def _n(v: int | None) -> str:
    """A count with thousands separators; n/a for one a file read back holds as null."""
    return f.NA if v is None else f"{v:,}"


def plan_rows(result: Mapping) -> list[tuple[str, str]]:
    """(question, answer) rows shared by the Markdown and the terminal table."""
    rows = [("requests / prompt tokens", f"{_n(result.get('requests'))} / {_n(result.get('prompt_tokens'))}"),
            ("block size", f"{_n(result.get('block_size'))} tokens"),
            ("smallest pool that serves every request", f"{_n(result.get('min_blocks'))} blocks"),
            ("best hit rate (no eviction)", f"{f.pct(result.get('max_hit_rate'))} at "
                                            f"{_n(result.get('no_eviction_blocks'))} blocks")]
    cliff = result.get("cliff")
    if cliff:
        rows.append(("cliff (steepest drop)", f"below {_n(cliff['num_blocks'])} blocks: "
                                              f"{f.pct(cliff['hit_rate_above'])} -> {f.pct(cliff['hit_rate_below'])} "
                                              f"at {_n(cliff['below'])}"))
    planned = section(result, "plan").get("planned")
    if result.get("target_hit_rate") is not None:
        less = section(result, "plan").get("one_block_less")
        digits = _telling_digits(result["target_hit_rate"], less["hit_rate"]) if less else 2
        answer = (f"{_n(planned['num_blocks'])} blocks ({_gib(planned['gib'])}): "
                  f"{_pct(planned['hit_rate'], digits)}" if planned else str(result.get("plan_reason")))
        rows.append((f"smallest pool for {f.pct(result['target_hit_rate'])}", answer))
        if less:
            rows.append(("one block less", f"{_n(less['num_blocks'])} blocks: {_pct(less['hit_rate'], digits)} "
                                           "(below the target)"))
    reverse = result.get("reverse")
    if reverse:
        memory = result.get("memory_gib")
        reason = f" ({reverse['reason']})" if reverse["reason"] else ""
        rows.append((f"{f.NA if memory is None else format(memory, 'g')} GiB buys",
                     f"{_n(reverse['num_blocks'])} blocks: {f.pct(reverse['hit_rate'])}{reason}"))
    return rows


def _telling_digits(target: float, below: float | None, most: int = 6) -> int:
    """Decimals of a percentage that tell a hit rate just below the target from the target: on a long trace one
    block less can lose a few hundred tokens of a hundred million, 29.99996% where two decimals say 30.00%."""
    if below is None:
        return 2
    for digits in range(2, most + 1):
        if f"{below * 100:.{digits}f}" != f"{target * 100:.{digits}f}":
            return digits
    return most


def _pct(rate: float | None, digits: int) -> str:
    return f.pct(rate) if rate is None or digits == 2 else f"{rate * 100:.{digits}f}%"


def _per_layer(kv: Mapping) -> str:
    """What one layer keeps per token: a key and a value per KV head, or one MLA latent (the same on every GPU)."""
    if kv.get("attention") == "mla":
        return f"one MLA latent of {kv.get('head_dim')} (kv_lora_rank + qk_rope_head_dim)"
    return f"{kv.get('kv_heads_per_gpu', kv.get('kv_heads'))} KV heads x {kv.get('head_dim')} x (key + value)"


def render_plan_markdown(result: Mapping) -> str:
    kv, engine = result.get("kv_memory"), section(result, "engine_model")
    lines = ["# KV capacity plan | KV 容量规划", "",
             f"Source: `{section(result, 'source').get('name')}`; engine model of vLLM "
             f"{engine.get('vllm_version')} ({engine.get('order')}).",
             f"KV bytes per token: {_n(kv.get('bytes_per_token'))} ({kv.get('source')}, {kv.get('layers')} layers x "
             f"{_per_layer(kv)} x {kv.get('dtype')}; per GPU at tensor-parallel size "
             f"{kv.get('tensor_parallel_size', 1)}, which the GiB below are too)." if kv else
             f"KV bytes per token: n/a ({result.get('kv_memory_reason')}).", "",
             "| question | answer |", "| --- | --- |"]
    lines += [f"| {q} | {a} |" for q, a in plan_rows(result)]
    lines += ["", "| pool (blocks) | GiB | hit rate | evictions |", "| ---: | ---: | ---: | ---: |"]
    lines += [f"| {_n(p['num_blocks'])} | {_gib(p['gib'])} | {f.pct(p['hit_rate'])} | {_n(p['evictions'])} |"
              for p in result["curve"]]
    return "\n".join(lines) + "\n"


def plot_plan(result: Mapping, path: str | os.PathLike) -> Path:
    """Hit rate against pool size (log x), the target and the planned size, the cliff shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curve = result["curve"]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.plot([p["num_blocks"] for p in curve], [p["hit_rate"] * 100 for p in curve], marker="o", label="hit rate")
    cliff = result.get("cliff")
    if cliff:
        ax.axvspan(cliff["below"], cliff["num_blocks"], color="tab:red", alpha=0.15, label="cliff")
    if result.get("target_hit_rate") is not None:
        ax.axhline(result["target_hit_rate"] * 100, color="tab:gray", linestyle="--", label="target")
    planned = section(result, "plan").get("planned")
    if planned:
        ax.plot([planned["num_blocks"]], [planned["hit_rate"] * 100], marker="*", markersize=14, color="tab:green",
                label=f"planned: {planned['num_blocks']:,} blocks")
    ax.set_xscale("log")
    ax.set(xlabel=f"KV pool (blocks of {result['block_size']} tokens)", ylabel="hit rate (%)",
           title="Hit rate against KV pool size (engine model)")
    ax.legend(loc="lower right")
    fig.tight_layout()
    return save_figure(fig, path, dpi=110)
