"""A G0 / G1 summary (``69_prefix_cache.json``) for ``prefixbench report``: the console table's rows as Markdown,
each group's manifest named, and the drift picture redrawn from the manifests found beside the summary.

``g0g1`` prints the table, writes this Markdown beside the summary and draws ``69_prefix_cache_drift.png``;
``report`` renders the same again from the files alone, after the run (or on another machine).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from ..core.errors import InputError
from ..core.records import load_group_manifest
from ..core.sections import section
from . import format as f
from .drift import plot_drift
from .tables import g0g1_rows


def _cell(value: object) -> str:
    """One Markdown table cell: a pipe or a line break would end the cell or the row (a backslash first, so one
    before a pipe cannot escape the escape)."""
    text = f.value(value).replace("\\", "\\\\").replace("|", "\\|")
    return " ".join(text.splitlines())


def render_g0g1_markdown(summary: Mapping) -> str:
    """The summary's numbers and decision as a table (a run that ended before both groups were compared: why),
    then each group's status, error and manifest."""
    config = section(summary, "config")
    lines = [f"# Prefix cache G0 / G1: {_cell(config.get('model'))}", "",
             f"Status {_cell(summary.get('status'))}; evidence {_cell(summary.get('hit_rate_evidence'))}."]
    if summary.get("paired_summary") is None:
        lines.append(f"No G0 / G1 comparison: {_cell(summary.get('reason') or 'the run did not finish')}.")
    lines += ["", "| metric | value |", "| --- | --- |"]
    lines += [f"| {_cell(key)} | {_cell(value)} |" for key, value in g0g1_rows(summary).items()]
    lines += ["", "## Groups", "", "| group | status | error | manifest |", "| --- | --- | --- | --- |"]
    for group in summary.get("groups") or []:
        if isinstance(group, Mapping):
            lines.append(f"| {_cell(section(group, 'group').get('name'))} | {_cell(group.get('status'))} | "
                         f"{_cell(group.get('error'))} | {_cell(group.get('report_path'))} |")
    return "\n".join(lines) + "\n"


def _groups(summary: Mapping) -> dict[str, Mapping]:
    """The summary's group entries by group name."""
    return {str(section(g, "group").get("name")): g for g in summary.get("groups") or [] if isinstance(g, Mapping)}


def manifest_paths(summary: Mapping, folder: str | os.PathLike) -> dict[str, Path]:
    """Where each group's manifest is looked for: in ``folder`` (the summary's), under the file name its
    ``report_path`` gives (only the name: the folder may have moved since the run)."""
    paths = {}
    for name, group in _groups(summary).items():
        path = group.get("report_path")
        file_name = Path(path).name if isinstance(path, str) else ""
        if file_name and file_name not in (".", ".."):
            paths[name] = Path(folder) / file_name
    return paths


def manifests_beside(summary: Mapping, folder: str | os.PathLike) -> dict[str, Mapping]:
    """Each group's manifest beside the summary, validated as a group manifest and checked to be the run the
    summary describes (the same status and normalized result: a rerun that ended early leaves the previous run's
    manifest of a group it never reached); a group whose manifest is missing, damaged or another run's is left
    out."""
    groups = _groups(summary)
    found: dict[str, Mapping] = {}
    for name, path in manifest_paths(summary, folder).items():
        try:
            manifest = load_group_manifest(path)
        except InputError:
            continue
        if manifest.get("status") == groups[name].get("status") and \
                manifest.get("normalized_result") == groups[name].get("normalized_result"):
            found[name] = manifest
    return found


def plot_g0g1_drift(summary: Mapping, path: str | os.PathLike, folder: str | os.PathLike) -> Path:
    """The drift picture from the manifests beside the summary; without both of them (this run's) nothing is
    drawn (a ``FileNotFoundError`` names what is missing: ``report`` prints it as a warning)."""
    manifests = manifests_beside(summary, folder)
    missing = [name for name in ("g0_cache_off", "g1_prefix_cache") if name not in manifests]
    if missing:
        raise FileNotFoundError(f"no valid manifest of this run's {' and '.join(missing)} beside the summary in "
                                f"{folder}")
    return plot_drift(summary, manifests["g0_cache_off"], manifests["g1_prefix_cache"], path)
