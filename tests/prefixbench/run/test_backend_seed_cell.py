"""The chapter's optional GPU cell, as the course ships it, run unchanged with its switch on: on this CPU machine
``model_source='auto'`` serves the project's tiny model in place of the hub model it names."""

from __future__ import annotations

import json
import shutil

import pytest

from backend_fixtures import no_vllm_leak, requires_vllm  # noqa: F401

pytestmark = [requires_vllm, pytest.mark.usefixtures("no_vllm_leak")]

from tools.prefixbench.core.paths import REPO_ROOT  # noqa: E402

REPO = REPO_ROOT


def test_the_course_gpu_cell_runs_unchanged_and_its_g1_hits_match_the_prediction(tmp_path, monkeypatch, capsys):
    from tools.course.content import lesson  # a moved lesson must fail here, not skip

    cell = getattr(lesson, "GPU", None)
    if not cell:
        pytest.skip("the course has no GPU cell")
    # the cell uses paths relative to the working directory: give it a scratch copy of the workload
    (tmp_path / "benchmarks" / "workloads").mkdir(parents=True)
    shutil.copy(REPO / "benchmarks" / "workloads" / "prefix_reuse.jsonl", tmp_path / "benchmarks" / "workloads")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PREFIXBENCH_LOCAL_MODEL", "tiny")
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    from tools.prefixbench import simulate_prefix_cache

    # what the notebook's earlier cells leave behind: a finished setup (its helpers) and the student's TODO 0
    namespace = {"RUN_REAL_BACKEND": True, "__name__": "__main__", "SETUP_DONE": True, "require_setup": lambda: None,
                 "say": lambda zh, en: f"{zh} | {en}", "simulate_prefix_cache": simulate_prefix_cache}
    exec(compile(cell, "lesson_69.GPU", "exec"), namespace)  # noqa: S102 - the course's own cell
    printed = capsys.readouterr().out
    assert "Your simulator predicted" in printed and "could not predict" not in printed, printed[-2000:]

    results = tmp_path / "benchmarks" / "results"
    g0 = json.loads((results / "69_prefix_cache_g0_cache_off.json").read_text())
    g1 = json.loads((results / "69_prefix_cache_g1_prefix_cache.json").read_text())
    summary = json.loads((results / "69_prefix_cache.json").read_text())
    assert [item["status"] for item in summary["groups"]] == ["ok", "ok"]
    assert g0["hit_rate"] is None and g0["hit_rate_evidence"] == "not_applicable"
    assert g1["hit_rate_evidence"] == "backend_metrics", g1["hit_rate_reason"]
    assert g1["hit_tokens"] == g1["prediction"]["predicted_hit_tokens"] and g1["prediction"]["exact_expected"]
    assert g1["config"]["resolved_model"]["substituted_for"] == "Qwen/Qwen2.5-0.5B-Instruct"
    assert g1["normalized_result"]["metrics"]["ttft_ms"]["p50"] > 0
    assert len(g1["requests"]) == namespace["NUM_PROMPTS"]
    paired = summary["paired_summary"]  # the decision rests on G1's counters, not on a guess from TTFT
    assert paired["hit_rate"] == g1["hit_rate"] and 0 < paired["hit_rate"] < 1
    assert paired["hit_rate_evidence"] == summary["hit_rate_evidence"] == "backend_metrics"
    assert paired["reused_tokens"] == g1["hit_tokens"] and paired["status"] == "ok"
    assert paired["decision"] in ("accept", "tune", "reject") and paired["reason"]
