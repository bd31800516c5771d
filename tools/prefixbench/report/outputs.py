"""What a run leaves behind: the JSON result (atomic), its Markdown and PNG beside it, for hitrate one history line.

One writer (``write_result_files``) serves every command that writes a result (hitrate, plan, sessions, replay,
isolation), so the order of the files, the atomic JSON and "a plot failure never loses the result" hold alike.
``KeptResult`` keeps the previous result of a rerun, at its first write and not before: bad input found while the
server is probed (its context, its model name) then leaves every file as it was.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Callable, Mapping

from ..core.files import (
    atomic_write_json, atomic_write_text, check_keep_target, check_output_file, check_outputs_spare_inputs,
    keep_name, keep_previous, to_strict_json,
)
from ..core.sections import section
from ..core.evidence_records import EvidenceAgreement
from ..core.live_records import HitRates
from .markdown import render_markdown
from .plot import plot_hitrate


def history_line(result: Mapping, output: str) -> dict:
    """One ``--history`` line of a hit-rate result (validated, or just built: absent sections print null)."""
    rates, s = HitRates.from_json(section(result, "hit_rates")), section(result, "summary")
    agreement = EvidenceAgreement.from_json(section(result, "evidence_agreement"))
    return {"finished_at": result.get("finished_at"), "result": output, "status": result.get("status"),
            "model": result["config"]["model"], "endpoint": result["config"]["endpoint"],
            "backend": section(result, "server").get("backend"), "workload_id": result["config"]["workload_id"],
            "target": rates.target, "predicted": rates.predicted, "measured": rates.measured,
            "verdict": section(result, "verdict").get("verdict"),
            "ttft_p50_ms": section(s, "ttft_ms").get("p50"), "errors": s.get("error_count"),
            "evidence_all_agree": None if agreement is None else agreement.all_agree}


def append_history(path: str | os.PathLike, record: Mapping) -> Path:
    """One line, one ``write`` on an ``O_APPEND`` descriptor: concurrent runs never interleave inside a line."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (to_strict_json(record, indent=None) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    return path


KEPT = "--output (the previous result is kept as)"
"""The key of the keep copy in ``output_files(..., keep=True)``."""


def output_files(output: str | os.PathLike, history: str | os.PathLike | None = None, *,
                 plot: bool = True, keep: bool = False) -> dict[str, Path | None]:
    """Every file a run writes, by the flag that names it: checked before the run, written after
    (``write_result_files``); without ``plot`` no PNG is written, so none is checked; with ``keep`` the copy of
    the previous result (``NAME.previous.json``) is one of them, so it can never be an input."""
    output = Path(output)
    files: dict[str, Path | None] = {"--output": output, "--output (.md beside it)": output.with_suffix(".md")}
    if plot:
        files["--output (.png beside it)"] = output.with_suffix(".png")
    if keep:
        files[KEPT] = keep_name(output)
    files["--history"] = Path(history) if history is not None else None
    return files


def check_output_files(files: Mapping[str, Path | None], inputs: Mapping[str, str | os.PathLike | None]) -> None:
    """Before any work: each output can be written, none of them is an input, and a keep copy would replace only
    a result this project kept (``core.files``)."""
    for field, path in files.items():
        if path is not None:
            check_output_file(field, path)
    check_outputs_spare_inputs(files, inputs)
    result = files.get("--output")
    if files.get(KEPT) is not None and result is not None:
        check_keep_target(KEPT, result)


class KeptResult:
    """A rerun's result file: the previous one is copied aside (``NAME.previous.json``) just before the first
    write, so a run stopped by bad input before it wrote anything keeps nothing and prints nothing extra."""

    def __init__(self, output: str | os.PathLike, note: Callable[[str], None] | None = None):
        self.output = Path(output)
        self.note = note or (lambda line: print(line, file=sys.stderr))
        self.kept: Path | None = None
        self._done = False

    def keep(self) -> Path | None:
        if not self._done:
            self._done = True
            self.kept = keep_previous(self.output)
            if self.kept is not None:
                self.note(f"note: the previous result is kept as {self.kept}")
        return self.kept

    def write(self, result: Mapping) -> None:
        """``on_update``: the result so far, atomically, after the previous one is kept."""
        self.keep()
        atomic_write_json(self.output, result)


def draw(plot: Callable[[Mapping, Path], object], result: Mapping, path: Path) -> dict:
    """``{"plot": path or None}``, with ``plot_error`` when drawing failed: a plot is a convenience, so its failure
    is reported beside what was written, never raised over it."""
    try:
        drawn = plot(result, path)
    except Exception as exc:  # a plot is a convenience; never lose the result for it
        return {"plot": None, "plot_error": f"{type(exc).__name__}: {exc}"}
    return {"plot": str(drawn) if drawn else None}


def write_result_files(result: Mapping, output: str | os.PathLike, render: Callable[[Mapping], str],
                       plot: Callable[[Mapping, Path], object] | None,
                       history: tuple[str | os.PathLike, Mapping] | None = None) -> dict:
    """The JSON first and atomically (it is what the run measured), then its Markdown and, unless ``plot`` is
    None, the PNG beside it, then ``history`` = (path, record) as one appended line. A plot is a convenience: when
    drawing fails the paths say ``plot`` None and ``plot_error`` why, and nothing written before is lost.
    Returns the paths written, by kind."""
    output = Path(output)
    paths = {"json": str(atomic_write_json(output, result)),
             "markdown": str(atomic_write_text(output.with_suffix(".md"), render(result)))}
    if plot is not None:
        paths.update(draw(plot, result, output.with_suffix(".png")))
    if history is not None:
        paths["history"] = str(append_history(*history))
    return paths


def write_outputs(result: Mapping, output: str | os.PathLike, history: str | os.PathLike | None) -> dict:
    """A hit-rate result: JSON (atomic), Markdown and PNG beside it, and a history line. Returns the paths written."""
    output = Path(output)
    line = None if history is None else (history, history_line(result, str(output)))
    return write_result_files(result, output, render_markdown, plot_hitrate, line)
