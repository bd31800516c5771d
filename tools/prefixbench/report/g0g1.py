"""A G0 / G1 summary (``69_prefix_cache.json``) for ``prefixbench report``: the console table's rows as Markdown,
each group's manifest named, and the drift picture redrawn from the manifests found beside the summary.

``g0g1`` itself prints the table and draws ``69_prefix_cache_drift.png``; ``report`` renders the same numbers
from the files alone, after the run (or on another machine).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from ..core.errors import InputError
from ..core.group_records import GroupRecord, section
from ..core.records import load_group_manifest
from . import format as f
from .drift import plot_drift
from .tables import g0g1_rows


def _cell(value: object) -> str:
    """One Markdown table cell: a pipe or a line break would end the cell or the row."""
    return f.value(value).replace("|", "\\|").replace("\n", " ")


def render_g0g1_markdown(summary: Mapping) -> str:
    """The summary's numbers and decision as a table, then each group's status and manifest."""
    config = section(summary, "config")
    lines = [f"# Prefix cache G0 / G1: {_cell(config.get('model'))}", "",
             f"Status {_cell(summary.get('status'))}; evidence {_cell(summary.get('hit_rate_evidence'))}.", "",
             "| metric | value |", "| --- | --- |"]
    lines += [f"| {_cell(key)} | {_cell(value)} |" for key, value in g0g1_rows(summary).items()]
    lines += ["", "## Groups", "", "| group | status | manifest |", "| --- | --- | --- |"]
    for group in summary.get("groups") or []:
        if isinstance(group, Mapping):
            lines.append(f"| {_cell(section(group, 'group').get('name'))} | {_cell(group.get('status'))} | "
                         f"{_cell(group.get('report_path'))} |")
    return "\n".join(lines) + "\n"


def manifests_beside(summary: Mapping, folder: str | os.PathLike) -> dict[str, Mapping]:
    """Each group's manifest, found in ``folder`` (the summary's) under the name its ``report_path`` gives, and
    validated as a group manifest; a group whose manifest is missing or damaged is left out."""
    found: dict[str, Mapping] = {}
    for group in summary.get("groups") or []:
        path = group.get("report_path") if isinstance(group, Mapping) else None
        if not isinstance(path, str) or not path:
            continue
        try:
            manifest = load_group_manifest(Path(folder) / Path(path).name)
        except InputError:
            continue
        found[GroupRecord.from_json(manifest).name] = manifest
    return found


def plot_g0g1_drift(summary: Mapping, path: str | os.PathLike, folder: str | os.PathLike) -> Path:
    """The drift picture from the manifests beside the summary; without both of them nothing is drawn (a
    ``FileNotFoundError`` names what is missing: ``report`` prints it as a warning)."""
    manifests = manifests_beside(summary, folder)
    missing = [name for name in ("g0_cache_off", "g1_prefix_cache") if name not in manifests]
    if missing:
        raise FileNotFoundError(f"no valid manifest of {' and '.join(missing)} beside the summary in {folder}")
    return plot_drift(summary, manifests["g0_cache_off"], manifests["g1_prefix_cache"], path)
