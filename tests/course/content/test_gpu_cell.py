"""The notebook's optional GPU cell has no G0 / G1 run of its own: it calls the library's (the code
``prefixbench g0g1`` runs) and writes nothing itself, so every file in the results folder is the library's, with
its schema. Without vLLM: the library's run is replaced by a stand-in that records its call (the real run of this
cell, servers and all, is tests/prefixbench/run/test_backend_seed_cell.py)."""

from __future__ import annotations

import ast
import inspect
import json

from tools.course import config
from tools.course.content import lesson
from tools.prefixbench import simulate_prefix_cache
from tools.prefixbench.core.records import SCHEMA_GROUP
from tools.prefixbench.run import g0g1

CELL = lesson.source("gpu-backend")


def _calls(tree: ast.AST) -> set[str]:
    return {node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            for node in ast.walk(tree) if isinstance(node, ast.Call)}


def test_the_cell_runs_the_librarys_experiment_and_has_no_loop_or_write_of_its_own():
    tree = ast.parse(CELL)
    assert "run_experiment" in _calls(tree)
    imports = {(node.module, alias.name) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
               for alias in node.names}
    assert ("tools.prefixbench.run.g0g1", "run_experiment") in imports
    assert not [node for node in ast.walk(tree) if isinstance(node, (ast.For, ast.While))
                and "group" in ast.unparse(node).lower()], "no G0 / G1 loop of its own"
    assert not _calls(tree) & {"open", "write_text", "write_bytes", "dump", "dumps", "mkdir", "start_optional_vllm",
                               "run_backend_benchmark", "atomic_write_json"}
    assert "GROUPS" not in CELL and "enable_prefix_caching" not in CELL


def _run_cell(tmp_path, monkeypatch, switch: bool, summary: dict | None = None) -> tuple[dict, list]:
    """The cell in a namespace as the setup cell leaves it: ``REPO_ROOT`` a scratch checkout that holds the
    workload (``tmp_path / "repo"``), the working folder another one (``tmp_path / "notebooks"``, where a
    ModelScope notebook runs): the cell must read and write through ``REPO_ROOT``, never the working folder."""
    calls: list = []

    def stand_in(**kwargs):
        calls.append(dict(kwargs))
        inspect.signature(g0g1.run_experiment).bind(**kwargs)  # the library's run takes these arguments
        return summary

    workload = config.REPO_ROOT / "benchmarks" / "workloads" / "prefix_reuse.jsonl"
    (tmp_path / "repo" / "benchmarks" / "workloads").mkdir(parents=True)
    (tmp_path / "repo" / "benchmarks" / "workloads" / workload.name).write_bytes(workload.read_bytes())
    (tmp_path / "notebooks").mkdir()
    monkeypatch.setattr(g0g1, "run_experiment", stand_in)
    monkeypatch.chdir(tmp_path / "notebooks")
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    namespace = {"RUN_REAL_BACKEND": switch, "__name__": "__main__", "require_setup": lambda: None,
                 "say": lambda zh, en: f"{zh} | {en}", "simulate_prefix_cache": simulate_prefix_cache,
                 "REPO_ROOT": tmp_path / "repo"}
    exec(compile(CELL, "gpu-backend", "exec"), namespace)  # noqa: S102 - the course's own cell
    return namespace, calls


def _untouched(tmp_path) -> None:
    """The cell wrote nothing: the working folder is empty, the checkout holds only its workload."""
    assert list((tmp_path / "notebooks").iterdir()) == []
    assert sorted(str(p.relative_to(tmp_path / "repo")) for p in (tmp_path / "repo").rglob("*")) == [
        "benchmarks", "benchmarks/workloads", "benchmarks/workloads/prefix_reuse.jsonl"]


def test_with_the_switch_off_nothing_runs_and_the_settings_are_shown(tmp_path, monkeypatch, capsys):
    namespace, calls = _run_cell(tmp_path, monkeypatch, switch=False)
    assert calls == []
    _untouched(tmp_path)
    printed = capsys.readouterr().out
    assert "RUN_REAL_BACKEND = False" in printed and repr(namespace["SETTINGS"]) in printed


def test_with_the_switch_on_it_calls_the_library_once_and_compares_the_students_prediction(tmp_path, monkeypatch,
                                                                                            capsys, tmp_path_factory):
    paired = {"hit_rate": 0.7, "hit_rate_evidence": "backend_metrics", "reused_tokens": 123,
              "predicted_hit_tokens": 123, "decision": "accept", "reason": "a stand-in"}
    # the G1 manifest the library's run would have written (elsewhere: this folder must stay as the cell found it),
    # with the block size G1's server published, which the student's simulator must use
    results = tmp_path_factory.mktemp("results")
    manifest = results / "69_prefix_cache_g1_prefix_cache.json"
    manifest.write_text(json.dumps({"schema": SCHEMA_GROUP, "status": "ok", "config": {},
                                    "backend_cache_config": {"block_size": 32}}))
    groups = [{"group": {"name": "g0_cache_off"}, "status": "ok", "report_path": str(results / "g0.json")},
              {"group": {"name": "g1_prefix_cache"}, "status": "ok", "report_path": str(manifest)}]
    namespace, calls = _run_cell(tmp_path, monkeypatch, switch=True,
                                 summary={"status": "ok", "paired_summary": paired, "groups": groups})
    assert calls == [namespace["SETTINGS"]]
    assert calls[0]["model_source"] == "auto" and calls[0]["num_prompts"] == namespace["NUM_PROMPTS"]
    # the checkout's paths wherever the notebook runs
    assert calls[0]["workload"] == str(tmp_path / "repo" / "benchmarks" / "workloads" / "prefix_reuse.jsonl")
    assert calls[0]["out"] == str(tmp_path / "repo" / "benchmarks" / "results")
    printed = capsys.readouterr().out
    assert "hit_rate_evidence: backend_metrics" in printed and "decision: accept" in printed
    assert "Your simulator predicted" in printed and "the server measured 123" in printed, printed
    assert "(block_size=32)" in printed, printed  # the server's block size, read from G1's manifest
    _untouched(tmp_path)


def test_when_g1_did_not_finish_the_comparison_is_one_line_and_no_earlier_manifest_is_read(tmp_path, monkeypatch,
                                                                                             capsys, tmp_path_factory):
    """A failed G0 leaves G1 unrun; the G1 manifest in the results folder is then an earlier run's (a rerun keeps
    the previous files), which the cell must not compare against."""
    earlier = tmp_path_factory.mktemp("results") / "69_prefix_cache_g1_prefix_cache.json"
    earlier.write_text(json.dumps({"schema": SCHEMA_GROUP, "status": "ok", "config": {},
                                   "backend_cache_config": {"block_size": 32}}))
    groups = [{"group": {"name": "g0_cache_off"}, "status": "failed", "error": "the server did not start"},
              {"group": {"name": "g1_prefix_cache"}, "status": "not_run", "error": None,
               "report_path": str(earlier)}]
    paired = {"hit_rate": None, "reused_tokens": None, "decision": "tune", "reason": "a stand-in"}
    _run_cell(tmp_path, monkeypatch, switch=True, summary={"status": "failed", "paired_summary": paired,
                                                            "groups": groups})
    printed = capsys.readouterr().out
    lines = [line for line in printed.splitlines() if "could not predict" in line]
    assert len(lines) == 1 and "G1 did not finish (status not_run" in lines[0], printed
    assert "Your simulator predicted" not in printed and "block_size=32" not in printed
