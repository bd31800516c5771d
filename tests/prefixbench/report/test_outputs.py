"""The one result writer (``report.outputs.write_result_files``): JSON first and atomic, Markdown and PNG beside it,
a history line last, and a plot that fails never costs the result (plot None + plot_error) — for every command
that uses it (hitrate's ``write_outputs``, ``plan``, the live commands)."""

from __future__ import annotations

import json
import random

import pytest

from tools.prefixbench.core.errors import InputError
from tools.prefixbench.report import outputs


def _strict(text: str):
    return json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))


def _broken_plot(result, path):
    raise RuntimeError("no display")


def test_a_failing_plot_keeps_the_json_and_markdown_and_says_why(tmp_path):
    out = tmp_path / "r.json"
    paths = outputs.write_result_files({"schema": "x", "value": 1.5}, out, lambda r: f"# {r['value']}\n",
                                       _broken_plot)
    assert _strict(out.read_text()) == {"schema": "x", "value": 1.5}
    assert out.with_suffix(".md").read_text() == "# 1.5\n"
    assert paths == {"json": str(out), "markdown": str(out.with_suffix(".md")), "plot": None,
                     "plot_error": "RuntimeError: no display"}


def test_without_a_plot_no_png_is_named_or_checked_and_history_is_one_line_per_run(tmp_path):
    out, history = tmp_path / "r.json", tmp_path / "h" / "history.jsonl"
    for run in (1, 2):
        paths = outputs.write_result_files({"run": run}, out, str, None, (history, {"run": run}))
    assert "plot" not in paths and not out.with_suffix(".png").exists() and paths["history"] == str(history)
    assert [_strict(line) for line in history.read_text().splitlines()] == [{"run": 1}, {"run": 2}]
    assert "--output (.png beside it)" not in outputs.output_files(out, plot=False)
    assert list(outputs.output_files(out, history)) == ["--output", "--output (.md beside it)",
                                                         "--output (.png beside it)", "--history"]


def test_hitrate_write_outputs_survives_its_plot_failing(tmp_path, monkeypatch):
    monkeypatch.setattr(outputs, "plot_hitrate", _broken_plot)
    result = {"schema": "prefixbench.hitrate/1", "status": "ok", "finished_at": "now", "config": {
        "model": "m", "endpoint": "http://127.0.0.1:1", "workload": "w.jsonl", "workload_id": "x", "num_requests": 1,
        "input_len": 64, "prefix_len": 32, "prefix_num": 1, "concurrency": 1, "request_rate": None, "prefill": True}}
    out = tmp_path / "r.json"
    paths = outputs.write_outputs(result, out, tmp_path / "history.jsonl")
    assert paths["plot"] is None and "no display" in paths["plot_error"]
    assert _strict(out.read_text()) == result and "`m`" in out.with_suffix(".md").read_text()
    line = _strict((tmp_path / "history.jsonl").read_text())
    assert line["result"] == str(out) and line["model"] == "m" and line["status"] == "ok"


def test_the_plan_command_writes_its_plan_when_the_plot_fails(tmp_path, monkeypatch, capsys):
    from tools.prefixbench import cli
    from tools.prefixbench.cli import plan as plan_cli

    monkeypatch.setattr(plan_cli, "plot_plan", _broken_plot)
    rng = random.Random(1)
    prefix = [rng.randrange(10, 900) for _ in range(48)]
    workload = tmp_path / "w.jsonl"
    workload.write_text("".join(json.dumps({"id": f"r{i}", "prompt_token_ids": prefix + [rng.randrange(10, 900)
                                                                                        for _ in range(9)],
                                            "max_tokens": 2}) + "\n" for i in range(12)))
    out = tmp_path / "plan.json"
    code = cli.main(["plan", "--workload", str(workload), "--block-size", "16", "--points", "3",
                     "--output", str(out), "--json"])
    printed = json.loads(capsys.readouterr().out)
    assert code == 0 and printed["outputs"]["plot"] is None and "no display" in printed["outputs"]["plot_error"]
    assert _strict(out.read_text())["schema"] == "prefixbench.plan/1" and out.with_suffix(".md").is_file()


def test_the_previous_result_is_kept_at_the_first_write_once_and_never_before(tmp_path):
    """``KeptResult``: creating it keeps nothing (bad input found later leaves every file as it was); the first
    write keeps the previous result once, with one note; later writes only write."""
    out = tmp_path / "r.json"
    out.write_text('{"schema": "prefixbench.hitrate/1", "run": 1}')
    notes = []
    kept = outputs.KeptResult(out, note=notes.append)
    assert not (tmp_path / "r.previous.json").exists() and notes == []
    kept.write({"schema": "prefixbench.hitrate/1", "run": 2, "phase": "measure"})
    kept.write({"schema": "prefixbench.hitrate/1", "run": 2})
    assert kept.keep() == tmp_path / "r.previous.json" and len(notes) == 1 and "r.previous.json" in notes[0]
    assert json.loads((tmp_path / "r.previous.json").read_text())["run"] == 1
    assert json.loads(out.read_text()) == {"schema": "prefixbench.hitrate/1", "run": 2}


def test_the_keep_copy_is_an_output_checked_like_the_others(tmp_path):
    """An input is never a keep copy; a keep copy replaces only a result this project kept."""
    out = tmp_path / "r.json"
    out.write_text('{"schema": "prefixbench.hitrate/1"}')
    files = outputs.output_files(out, keep=True)
    assert files[outputs.KEPT] == tmp_path / "r.previous.json"
    with pytest.raises(InputError, match="is also --baseline"):
        outputs.check_output_files(files, {"--baseline": tmp_path / "r.previous.json"})
    (tmp_path / "r.previous.json").write_text("my notes, not a result")
    with pytest.raises(InputError, match="not a result this project kept"):
        outputs.check_output_files(files, {})
    (tmp_path / "r.previous.json").write_text('{"schema": "prefixbench.hitrate/1"}')
    outputs.check_output_files(files, {})


def test_a_plot_that_fails_while_saving_leaves_the_previous_png_whole(tmp_path, monkeypatch):
    """The plan's PNG is rendered in memory and renamed into place like every other plot (``plot.save_figure``):
    a savefig that dies after writing part of its bytes leaves the previous file as it was."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from tools.prefixbench.report.plan import plot_plan

    result = {"curve": [{"num_blocks": n, "hit_rate": h} for n, h in ((8, 0.2), (16, 0.6), (32, 0.7))],
              "block_size": 16, "target_hit_rate": 0.5, "cliff": None, "plan": {"planned": {"num_blocks": 16,
                                                                                            "hit_rate": 0.6}}}
    png = tmp_path / "plan.png"
    plot_plan(result, png)
    before = png.read_bytes()
    assert before[:4] == b"\x89PNG"

    def dies_halfway(fig, target, **_kw):
        (target.write if hasattr(target, "write") else open(target, "wb").write)(b"\x89PNG half")
        raise OSError("disk full")

    monkeypatch.setattr(Figure, "savefig", dies_halfway)
    with pytest.raises(OSError, match="disk full"):
        plot_plan(result, png)
    assert png.read_bytes() == before and not list(tmp_path.glob(".*.tmp"))
