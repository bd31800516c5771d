"""The chapter's optional GPU cell, as the course ships it, run unchanged with its switch on in a real Jupyter
kernel, as a student runs it: on this CPU machine ``model_source='auto'`` serves the project's tiny model in place
of the hub model it names. The kernel's own event loop runs while the cell does (``asyncio.run`` refuses there:
``measure.client.run_loop`` runs the client's loop in a thread of its own)."""

from __future__ import annotations

import json
import os
import shutil

import nbformat
import pytest
from nbclient import NotebookClient

from backend_fixtures import no_vllm_leak, requires_vllm  # noqa: F401

pytestmark = [requires_vllm, pytest.mark.usefixtures("no_vllm_leak")]

from tools.prefixbench.core.paths import REPO_ROOT  # noqa: E402

REPO = REPO_ROOT

# what the notebook's earlier cells leave behind: a finished setup (its helpers, the checkout it found) and the
# student's TODO 0. The checkout is a scratch one holding the workload (the run writes its results there), the
# kernel's working folder another (where a ModelScope notebook runs): the cell's paths must be the checkout's.
_BEFORE = f"""import sys
from pathlib import Path
sys.path.insert(0, {str(REPO)!r})
REPO_ROOT = Path("../repo").resolve()
RUN_REAL_BACKEND, SETUP_DONE = True, True
require_setup = lambda: None
say = lambda zh, en: f"{{zh}} | {{en}}"
from tools.prefixbench import simulate_prefix_cache"""


def test_the_course_gpu_cell_runs_unchanged_and_its_g1_hits_match_the_prediction(tmp_path):
    from tools.course.content import lesson  # a moved lesson must fail here, not skip

    cell = getattr(lesson, "GPU", None)
    if not cell:
        pytest.skip("the course has no GPU cell")
    workloads = tmp_path / "repo" / "benchmarks" / "workloads"
    workloads.mkdir(parents=True)
    shutil.copy(REPO / "benchmarks" / "workloads" / "prefix_reuse.jsonl", workloads)
    (tmp_path / "notebooks").mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(_BEFORE), nbformat.v4.new_code_cell(cell),
                nbformat.v4.new_code_cell("print(NUM_PROMPTS)")]
    env = {**os.environ, "PREFIXBENCH_LOCAL_MODEL": "tiny", "PYTHONPATH": str(REPO)}
    env.pop("NBGRADER_EXECUTION", None)
    NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(tmp_path / "notebooks")}}).execute(env=env)
    errors = [f"{o['ename']}: {o['evalue']}" for c in nb.cells for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors, errors
    printed = "".join(o.get("text", "") for o in nb.cells[1].outputs if o.get("name") == "stdout")
    assert "Your simulator predicted" in printed and "could not predict" not in printed, printed[-2000:]
    num_prompts = int("".join(o.get("text", "") for o in nb.cells[2].outputs))

    assert list((tmp_path / "notebooks").iterdir()) == []  # nothing in the kernel's working folder
    results = tmp_path / "repo" / "benchmarks" / "results"
    g0 = json.loads((results / "69_prefix_cache_g0_cache_off.json").read_text())
    g1 = json.loads((results / "69_prefix_cache_g1_prefix_cache.json").read_text())
    summary = json.loads((results / "69_prefix_cache.json").read_text())
    assert [item["status"] for item in summary["groups"]] == ["ok", "ok"]
    assert g0["hit_rate"] is None and g0["hit_rate_evidence"] == "not_applicable"
    assert g1["hit_rate_evidence"] == "backend_metrics", g1["hit_rate_reason"]
    assert g1["hit_tokens"] == g1["prediction"]["predicted_hit_tokens"] and g1["prediction"]["exact_expected"]
    assert g1["config"]["resolved_model"]["substituted_for"] == "Qwen/Qwen2.5-0.5B-Instruct"
    assert g1["normalized_result"]["metrics"]["ttft_ms"]["p50"] > 0
    assert len(g1["requests"]) == num_prompts
    paired = summary["paired_summary"]  # the decision rests on G1's counters, not on a guess from TTFT
    assert paired["hit_rate"] == g1["hit_rate"] and 0 < paired["hit_rate"] < 1
    assert paired["hit_rate_evidence"] == summary["hit_rate_evidence"] == "backend_metrics"
    assert paired["reused_tokens"] == g1["hit_tokens"] and paired["status"] == "ok"
    assert paired["decision"] in ("accept", "tune", "reject") and paired["reason"]
