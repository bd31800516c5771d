"""Human-readable output: rich tables for the CLI. JSON output stays in the callers."""

from __future__ import annotations

from typing import Mapping

from rich.console import Console
from rich.table import Table


def _fmt(value: object) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.4f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def key_value_table(rows: Mapping[str, object], title: str) -> Table:
    table = Table(title=title, show_header=True, header_style="bold")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in rows.items():
        table.add_row(key, _fmt(value))
    return table


def simulation_table(result: Mapping[str, object], title: str, console: Console | None = None) -> None:
    shown = {k: v for k, v in result.items() if k not in {"per_request_hit_tokens"}}
    for key in ("capacity_blocks", "capacity_tokens"):
        if key in shown and shown[key] is None:
            shown[key] = "unlimited"
    (console or Console()).print(key_value_table(shown, title))
