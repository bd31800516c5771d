"""The releases whose rules the engine model claims (``KNOWN_RULES``) and the conformance records that back them.

vLLM 0.33 is the GPU wheel (it needs torch 2.14), so its own scheduler is checked from a separate environment:
its core imports with torch 2.13+cpu given ``VLLM_TARGET_DEVICE=cpu``. Point ``PREFIXBENCH_OTHER_VLLM_PYTHON`` at
that environment's python to rerun the check here; the committed record is the last such run.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tools.prefixbench.cache.engine_pool import KNOWN_RULES, RULES_EVIDENCE, rules_for
from tools.prefixbench.core.paths import REPO_ROOT

RECORDS = REPO_ROOT / "benchmarks" / "results" / "examples" / "conformance"
OTHER_PYTHON = os.environ.get("PREFIXBENCH_OTHER_VLLM_PYTHON")


@pytest.mark.parametrize("release", KNOWN_RULES)
def test_every_known_release_has_a_record_where_every_mode_agrees(release):
    path = RECORDS / f"vllm-{release}.json"
    assert str(path.relative_to(REPO_ROOT)) in RULES_EVIDENCE[release]
    record = json.loads(path.read_text(encoding="utf-8"))
    assert record["schema"] == "prefixbench.conformance/1" and record["vllm_version"] == release
    assert record["exact_modes_agree"] is True
    assert len(record["modes"]) == 7 and all(m["agreeing_requests"] == m["requests"] >= 1200 for m in record["modes"])
    assert rules_for(release) == {"server_version": release, "rules_version": release, "note": None}


@pytest.mark.skipif(OTHER_PYTHON is None, reason="another vLLM release's scheduler runs from its own environment: "
                    "set PREFIXBENCH_OTHER_VLLM_PYTHON to its python (vLLM 0.33: the GPU wheel, torch 2.13+cpu, "
                    "VLLM_TARGET_DEVICE=cpu); the committed record benchmarks/results/examples/conformance/"
                    "vllm-0.33.0.json is the last run")
def test_the_other_release_agrees_in_process():
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "VLLM_TARGET_DEVICE": "cpu"}
    run = subprocess.run([OTHER_PYTHON, "-m", "tools.prefixbench", "conformance", "--seeds", "1", "--cases", "5",
                          "--json"], capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    record = json.loads(run.stdout)
    assert record["vllm_version"] in KNOWN_RULES and record["rules_version"] == record["vllm_version"]
    assert record["exact_modes_agree"] is True
