"""Outputs of the hit-rate benchmark: the JSON result, a Markdown report, a plot and one history line.

Why separate from ``hitrate``: ``report`` and ``compare`` re-render saved results without a server, and the
report must say how to read every number (the three hit rates, the rounding between them, the verdict's
thresholds), so a reader never has to guess.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Mapping

from .errors import InputError
from .fileio import atomic_write_json, atomic_write_text


def _pct(value) -> str:
    return "n/a" if value is None else f"{value * 100:.2f}%"


def _ms(stats, key: str = "p50") -> str:
    value = (stats or {}).get(key)
    return "n/a" if value is None else f"{value:.1f}"


def _num(value, fmt: str = "{:,}") -> str:
    if value is None:
        return "n/a"
    return fmt.format(value)


def load_result(path: str | os.PathLike) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(str(path), "file not found") from None
    except (OSError, ValueError) as exc:
        raise InputError(str(path), f"not a readable JSON result ({exc})") from None
    if not isinstance(data, dict) or data.get("schema") != "prefixbench.hitrate/1":
        raise InputError(str(path), "not a hit-rate result (schema prefixbench.hitrate/1)")
    return data


# ------------------------------------------------------------------------------------------------ markdown

def render_markdown(result: Mapping) -> str:
    c, rates = result["config"], result.get("hit_rates") or {}
    server = result.get("server") or {}
    v = result.get("verdict") or {}
    summary = result.get("summary") or {}
    timing = result.get("timing") or {}
    lines = ["# Prefix-cache hit-rate benchmark", ""]
    if result.get("status") != "ok":
        lines += [f"> **Status: {result.get('status')}**: {result.get('error') or ''}. Numbers below cover what "
                  "was measured before that.", ""]
    lines += ["| Field | Value |", "| --- | --- |",
              f"| Model | `{c['model']}` |", f"| Endpoint | `{c['endpoint']}` |",
              f"| Backend | {server.get('backend') or 'unknown'} |",
              f"| Block size | {server.get('block_size') or 'unknown'} ({server.get('block_size_source') or 'n/a'}) |",
              f"| Workload | {c['workload']} (`{c['workload_id']}`) |",
              f"| Requests | {c['num_requests']} |",
              f"| Input / prefix length | {c['input_len'] or 'per file'} / {c['prefix_len'] or 'derived'} |",
              f"| Distinct prefixes | {c['prefix_num']} |",
              f"| Concurrency / rate | {c['concurrency'] or '-'} / {c['request_rate'] or '-'} |",
              f"| Prefill / cache reset | {'yes' if c['prefill'] else 'no'} / "
              f"{(result.get('phases') or {}).get('reset', {}).get('status', 'n/a')} |",
              f"| Setup / prefill / bench time | {_num(timing.get('setup_s'), '{:.2f}s')} / "
              f"{_num(timing.get('prefill_s'), '{:.2f}s')} / {_num(timing.get('bench_s'), '{:.2f}s')} |", ""]
    lines += [f"## Verdict: {v.get('verdict', 'n/a')}", ""]
    lines += [f"- {reason}" for reason in v.get("reasons", [])]
    for check in v.get("latency_checks", []):
        lines.append(f"- latency check {check['check']}: {'ok' if check['ok'] else 'FAILED'} ({check['value']})")
    lines += ["", f"Thresholds: {v.get('rules', '')}", ""]
    lines += ["## Hit rates (token level)", "", "| | hit rate | hit tokens | query tokens | from |",
              "| --- | ---: | ---: | ---: | --- |"]
    prediction = result.get("prediction") or {}
    measured = result.get("measured") or {}
    lines.append(f"| Target | {_pct(rates.get('target'))} | | | {rates.get('target_basis', '')} |")
    lines.append(f"| Block-aligned target | {_pct(rates.get('block_aligned_target'))} | | | the target under the "
                 "cache's rules (below) |")
    lines.append(f"| Predicted | {_pct(rates.get('predicted'))} | {_num(prediction.get('predicted_hit_tokens'))} | "
                 f"{_num(prediction.get('predicted_query_tokens'))} | simulator on the exact ids sent |")
    lines.append(f"| Measured | {_pct(rates.get('measured'))} | {_num(measured.get('hit_tokens'))} | "
                 f"{_num(measured.get('query_tokens'))} | {measured.get('hit_rate_evidence') or 'n/a'} |")
    lines.append("")
    if rates.get("measured") is None:
        lines += [f"Measured is missing, not zero: {rates.get('measured_reason')}", ""]
    breakdown = rates.get("target_breakdown") or {}
    lines += ["### Why the target and the server's truth differ", ""]
    if breakdown.get("available"):
        if breakdown["steps"]:
            for step in breakdown["steps"]:
                lines.append(f"- **{step['rule']}** ({step['points']:+.2f} points): {step['explanation']}")
        else:
            lines.append("- nothing: the prefix is whole blocks and every prefix was prefilled")
        lines.append(f"- so a correct cache shows {_pct(breakdown['expected_hit_rate'])} for the "
                     f"{_pct(breakdown['target_hit_rate'])} asked for")
    else:
        lines.append(f"- {breakdown.get('reason', 'n/a')}")
    lines.append("")
    lines += ["### Prediction against measurement", ""]
    if prediction.get("predicted_hit_tokens") is None:
        lines.append(f"- no prediction: {prediction.get('reason')}")
    else:
        diff = prediction.get("difference_tokens")
        lines.append(f"- measured - predicted = {_num(diff, '{:+,}')} tokens "
                     f"({_num(rates.get('measured_minus_predicted_points'), '{:+.3f}')} points)")
        lines.append(f"- exact match expected: {'yes' if prediction.get('exact_expected') else 'no'}"
                     + ("" if prediction.get("exact_expected") else
                        " (" + "; ".join(prediction.get("caveats") or []) + ")"))
        lines.append(f"- predicted hits from blocks cached during the measured phase itself: "
                     f"{_num(prediction.get('in_phase_reuse_tokens'))} tokens (only these depend on timing)")
        if prediction.get("query_tokens_note"):
            lines.append(f"- {prediction['query_tokens_note']}")
    lines.append("")
    engines = result.get("engines") or []
    if len(engines) > 2:
        lines += ["## Per engine", "", "| engine | hit rate | hit tokens | query tokens |", "| --- | ---: | ---: | ---: |"]
        lines += [f"| {e['engine']} | {_pct(e['hit_rate'])} | {_num(e['hit_tokens'])} | {_num(e['query_tokens'])} |"
                  for e in engines]
        lines.append("")
    gauge = server.get("sglang_cache_hit_rate_gauge")
    if gauge:
        lines += [f"SGLang gauge `sglang:cache_hit_rate` after the run: {gauge['value_after']}. {gauge['note']}.", ""]
    lines += ["## Latency (client clock, ms)", "", "| metric | p50 | p90 | p99 | mean |", "| --- | ---: | ---: | ---: | ---: |"]
    for key, name in (("ttft_ms", "TTFT"), ("tpot_ms", "TPOT"), ("itl_ms", "ITL"), ("e2e_ms", "E2E")):
        stats = summary.get(key)
        lines.append(f"| {name} | {_ms(stats)} | {_ms(stats, 'p90')} | {_ms(stats, 'p99')} | {_ms(stats, 'mean')} |")
    lines += ["", f"Requests {summary.get('requests', 'n/a')}, successful {summary.get('successful', 'n/a')}, "
              f"errors {summary.get('error_count', 'n/a')}; output throughput "
              f"{_num(summary.get('throughput_tokens_per_s'), '{:.1f}')} tok/s.", ""]
    sp = result.get("speedup") or {}
    lines += ["## Speed-up", "",
              f"- theoretical prefill speed-up 1/(1-h) at the measured h: {_num(sp.get('theoretical_prefill_speedup'), '{:.2f}x')}",
              f"- measured TTFT p50 speed-up against the cache-off baseline: "
              f"{_num(sp.get('measured_ttft_speedup'), '{:.2f}x')}"
              + (f" ({sp['reason']})" if sp.get("reason") else
                 f" ({_num(sp.get('baseline_ttft_p50_ms'), '{:.1f}')} ms -> {_num(sp.get('ttft_p50_ms'), '{:.1f}')} ms)")]
    if sp.get("warning"):
        lines.append(f"- warning: {sp['warning']}")
    lines.append("")
    note = result.get("chat_template") or {}
    lines += ["## Prompts and the chat template", "",
              "Prompts are token ids sent to `/v1/completions`, so the server sees exactly the ids the prediction "
              "used: no chat template, no re-tokenization."]
    if note.get("explanation"):
        lines.append(f"With `{note['tokenizer']}`: {note['explanation']}.")
    elif note.get("reason"):
        lines.append(f"Chat template: {note['reason']}.")
    lines.append("")
    if result.get("warnings"):
        lines += ["## Warnings", ""] + [f"- {w}" for w in result["warnings"]] + [""]
    lines += ["## Methodology", "",
              "- Hit rates are token level: hit tokens / prompt tokens of the measured phase. Measured comes from the "
              "server's counter deltas (vLLM `prefix_cache_hits/queries`, older `gpu_prefix_cache_*`; SGLang "
              "`cached_tokens/prompt_tokens`), snapshot after the prefill and after the last request.",
              "- Predicted: the prefix-cache simulator (LRU, last prompt token always recomputed) on the same ids in "
              "send order, prefill first and not counted, with the server's block size and capacity.",
              "- TTFT: send to first token; TPOT: (last - first token) / (tokens - 1); E2E: send to end of stream.",
              ""]
    return "\n".join(lines)


def render_compare(a: Mapping, b: Mapping, names: tuple[str, str]) -> tuple[list[tuple[str, str, str]], str]:
    """Rows ``(metric, a, b)`` and the same as a Markdown table."""
    def row(r: Mapping) -> dict:
        s, rates = r.get("summary") or {}, r.get("hit_rates") or {}
        return {
            "model": r["config"]["model"], "backend": (r.get("server") or {}).get("backend") or "unknown",
            "workload": r["config"]["workload_id"], "status": r.get("status"),
            "requests / errors": f"{s.get('requests', 'n/a')} / {s.get('error_count', 'n/a')}",
            "target": _pct(rates.get("target")), "block-aligned target": _pct(rates.get("block_aligned_target")),
            "predicted": _pct(rates.get("predicted")), "measured": _pct(rates.get("measured")),
            "verdict": (r.get("verdict") or {}).get("verdict", "n/a"),
            "TTFT p50 ms": _ms(s.get("ttft_ms")), "TPOT p50 ms": _ms(s.get("tpot_ms")),
            "E2E p50 ms": _ms(s.get("e2e_ms")),
            "output tok/s": _num(s.get("throughput_tokens_per_s"), "{:.1f}"),
        }
    ra, rb = row(a), row(b)
    rows = [(k, str(ra[k]), str(rb[k])) for k in ra]
    md = [f"| metric | {names[0]} | {names[1]} |", "| --- | --- | --- |"] + [f"| {k} | {x} | {y} |" for k, x, y in rows]
    if ra["workload"] != rb["workload"]:
        md.append("\nThe two runs used different workloads: compare their hit rates with their own predictions.")
    return rows, "\n".join(md) + "\n"


# ---------------------------------------------------------------------------------------------------- plot

def plot(result: Mapping, path: str | os.PathLike) -> Path | None:
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


# ---------------------------------------------------------------------------------------------- outputs

def history_line(result: Mapping, output: str) -> dict:
    rates, s = result.get("hit_rates") or {}, result.get("summary") or {}
    return {"finished_at": result.get("finished_at"), "result": output, "status": result.get("status"),
            "model": result["config"]["model"], "endpoint": result["config"]["endpoint"],
            "backend": (result.get("server") or {}).get("backend"), "workload_id": result["config"]["workload_id"],
            "target": rates.get("target"), "predicted": rates.get("predicted"), "measured": rates.get("measured"),
            "verdict": (result.get("verdict") or {}).get("verdict"),
            "ttft_p50_ms": (s.get("ttft_ms") or {}).get("p50"), "errors": s.get("error_count")}


def append_history(path: str | os.PathLike, record: Mapping) -> Path:
    """One line, one ``write`` on an ``O_APPEND`` descriptor: concurrent runs never interleave inside a line."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    return path


def write_outputs(result: Mapping, output: str | os.PathLike, history: str | os.PathLike | None) -> dict:
    """JSON (atomic), Markdown and PNG beside it, and a history line. Returns the paths written."""
    output = Path(output)
    paths = {"json": str(atomic_write_json(output, result))}
    paths["markdown"] = str(atomic_write_text(output.with_suffix(".md"), render_markdown(result)))
    try:
        drawn = plot(result, output.with_suffix(".png"))
        paths["plot"] = str(drawn) if drawn else None
    except Exception as exc:  # a plot is a convenience; never lose the result for it
        paths["plot"] = None
        paths["plot_error"] = f"{type(exc).__name__}: {exc}"
    if history is not None:
        paths["history"] = str(append_history(history, history_line(result, str(output))))
    return paths
