"""The source notebook: built from the lesson (tools/course/content/), stable grade ids and points, and it runs
top to bottom on CPU, offline, in under two minutes (outputs checked against the library, not against hard-coded numbers)."""

import json
import os
import time

import nbformat
import pytest
from nbclient import NotebookClient

from tools.course import config
from tools.course.build import notebook as build_notebook
from tools.course.content.lesson import CELLS
from tools.course.grading import feedback as fb
from tools.prefixbench.core.paths import SHARED_TRACE_DIR
from tools.prefixbench.traces import TRACES, load_trace, replay_trace

pytestmark = pytest.mark.nbgrader  # real nbgrader / grade.py / kernels: left out by -m "not nbgrader"

GRADED = {  # grade id -> points: changing these changes every past gradebook, so it is pinned here
    "test-ex0-visible": 3, "test-ex1-visible": 1, "test-ex2-visible": 1, "test-ex3-visible": 1,
    "test-seed-template": 2, "hidden-ex0-blocks": 2, "hidden-ex0-keys": 2, "hidden-ex0-eviction": 3,
    "hidden-ex0-oracle": 2, "hidden-ex0-speed": 2, "hidden-ex1-summarize": 2, "hidden-ex2-compare": 2,
    "hidden-ex3-decision": 2, "hidden-ex3-thresholds": 1,
}
SOLUTIONS = ["ex0-simulate", "ex1-summarize", "ex2-compare", "ex3-recommend"]


def _offline_env(tmp_path, trace_dir=None):
    env = dict(os.environ)
    env.pop("NBGRADER_EXECUTION", None)
    env.update({
        "PREFIXBENCH_REPO": str(config.REPO_ROOT), "PYTHONPATH": str(config.REPO_ROOT),
        "PREFIXBENCH_CACHE": str(tmp_path / "cache"),  # empty: nothing downloaded before
        "PREFIXBENCH_TRACE_BASE_URL": "http://127.0.0.1:9/traces",  # a closed port: any download fails fast
        "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9",
    })
    env.pop("PREFIXBENCH_TRACE_DIR", None)
    env.pop("MPLBACKEND", None)  # the kernel's inline backend puts the figures into the notebook
    if trace_dir:
        env["PREFIXBENCH_TRACE_DIR"] = str(trace_dir)
    return env


def _execute(nb, tmp_path, env, timeout=120):
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(tmp_path)}})
    started = time.monotonic()
    client.execute(env=env)  # passed on to the kernel manager: the kernel gets exactly this environment
    return time.monotonic() - started


def _cell_seconds(nb) -> dict[str, float]:
    """Per-cell run time from nbclient's timing metadata (kernel start-up and shutdown not included)."""
    from datetime import datetime
    stamp = lambda text: datetime.fromisoformat(text.replace("Z", "+00:00"))  # noqa: E731
    out = {}
    for cell in nb.cells:
        timing = cell.get("metadata", {}).get("execution", {})
        if "iopub.execute_input" in timing and "shell.execute_reply" in timing:
            out[cell.get("id", "?")] = (stamp(timing["shell.execute_reply"]) - stamp(timing["iopub.execute_input"])).total_seconds()
    return out


def _text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")


def _errors(nb):
    return {c.id: f"{o['ename']}: {o['evalue']}" for c in nb.cells for o in c.get("outputs", [])
            if o.get("output_type") == "error"}


def test_source_notebook_is_built_from_lesson_and_has_no_outputs():
    text = config.SOURCE_NOTEBOOK.read_text(encoding="utf-8")
    assert text == build_notebook.render(build_notebook.build_notebook()), "run python -m tools.course.release"
    for path in (config.SOURCE_NOTEBOOK, config.RELEASE_NOTEBOOK):
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        assert all(not c.get("outputs") and not c.get("execution_count") for c in nb.cells if c.cell_type == "code")


def test_grade_ids_points_and_roles_are_stable():
    nb = nbformat.read(config.SOURCE_NOTEBOOK, as_version=4)
    graded = {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]["points"]
              for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")}
    assert graded == GRADED
    assert sum(graded.values()) == 26
    solutions = [c.id for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    assert solutions == SOLUTIONS
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader")
        if meta:
            assert cell.id == meta["grade_id"]
            assert meta["locked"] is (not meta["solution"])
        else:  # the only cells students may change freely
            assert cell.id in {"explorer-try", "gpu-switch"}


def test_hidden_tests_come_last_and_only_in_hidden_cells():
    order = [cell for cell in CELLS if cell.role == "test"]
    hidden = [cell.hidden for cell in order]
    assert hidden == sorted(hidden), "every hidden-test cell must come after every visible test"
    last_hidden = max(i for i, cell in enumerate(CELLS) if cell.hidden)
    first_hidden = min(i for i, cell in enumerate(CELLS) if cell.hidden)
    assert all(cell.hidden for cell in CELLS[first_hidden:last_hidden + 1] if cell.role == "test")
    assert all(cell.role in ("test", "readonly") and cell.kind == "markdown" or cell.hidden
               for cell in CELLS[first_hidden:]), "nothing but hidden tests may run after the first hidden test"
    for cell in CELLS:
        if cell.hidden:
            assert cell.role == "test"
            assert fb.hint_strings(cell.source), f"{cell.id}: hidden asserts need constant hint messages"
    setup = next(cell for cell in CELLS if cell.kind == "code")
    assert setup.id == "setup" and config.REPO_SLUG in setup.source


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The solution notebook run once, top to bottom, offline, with a probe cell appended."""
    tmp = tmp_path_factory.mktemp("solution-run")
    nb = nbformat.read(config.SOURCE_NOTEBOOK, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(
        "import json, sys\nprint(json.dumps(sorted(m for m in ('vllm', 'torch') if m in sys.modules)))"))
    trace_dir = SHARED_TRACE_DIR if SHARED_TRACE_DIR.is_dir() else None
    seconds = _execute(nb, tmp, _offline_env(tmp, trace_dir))
    return nb, seconds, trace_dir


def test_solution_notebook_runs_offline_under_two_minutes(executed):
    nb, seconds, _ = executed
    assert _errors(nb) == {}
    timings = _cell_seconds(nb)
    cell_seconds = sum(timings.values())
    slowest = sorted(timings.items(), key=lambda item: -item[1])[:3]
    assert cell_seconds < 120, f"the cells took {cell_seconds:.0f} s; slowest {slowest}"
    assert seconds < 240, f"{seconds:.0f} s with kernel start and shutdown (cells {cell_seconds:.0f} s)"
    cells = {c.id: c for c in nb.cells}
    for test_id in GRADED:
        if not test_id.startswith("hidden-"):
            assert "通过" in _text(cells[test_id]) or "passed" in _text(cells[test_id]), test_id
    assert "一致 | match" in _text(cells["self-check"]), _text(cells["self-check"])
    with_images = [c.id for c in nb.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    expected_figures = {"measure", "compare-policies", "eviction-cost"} | ({"trace-capacity"} if executed[2] else set())
    assert expected_figures <= set(with_images), with_images
    assert "跳过可选 GPU" not in _text(cells["gpu-backend"])  # not grading: the cell ran (with the switch off)
    assert json.loads(_text(nb.cells[-1])) == [], "the GPU section must not import vllm or torch when it is off"


def test_trace_section_matches_the_library_replay(executed, monkeypatch):
    nb, _, trace_dir = executed
    if trace_dir is None:
        pytest.skip("../shared/data/mooncake is not beside the repository")
    text = _text(next(c for c in nb.cells if c.id == "trace-replay"))
    monkeypatch.setenv("PREFIXBENCH_TRACE_DIR", str(trace_dir))
    for name in ("conversation", "synthetic"):
        result = replay_trace(load_trace(name, allow_download=False), None)
        row = next(line for line in text.splitlines() if line.startswith(name))
        assert f"{result['token_hit_rate']:.4f}" in row and f"{TRACES[name].paper_cache_ratio:.2f}" in row


def test_trace_cells_explain_instead_of_failing_when_offline(tmp_path):
    """No trace on disk and no network: the trace cells print how to get the trace and raise nothing."""
    source = nbformat.read(config.SOURCE_NOTEBOOK, as_version=4)
    keep = {"setup", "trace-replay", "trace-capacity"}
    nb = nbformat.v4.new_notebook(metadata=source.metadata)
    nb.cells = [c for c in source.cells if c.id in keep]
    _execute(nb, tmp_path, _offline_env(tmp_path, trace_dir=None), timeout=60)
    assert _errors(nb) == {}
    replay = _text(nb.cells[1])
    assert "不可用" in replay and "unavailable" in replay and "PREFIXBENCH_TRACE_DIR" in replay
    assert "conversation_trace.jsonl" in replay
    assert "跳过容量扫描" in _text(nb.cells[2])


def test_trace_section_is_skipped_while_grading(tmp_path):
    """Not graded, and a second of every submission's grading time: the grader skips it even with traces on disk."""
    source = nbformat.read(config.SOURCE_NOTEBOOK, as_version=4)
    nb = nbformat.v4.new_notebook(metadata=source.metadata)
    nb.cells = [c for c in source.cells if c.id in {"setup", "trace-replay", "trace-capacity"}] + [
        nbformat.v4.new_code_cell("print(sorted(traces))")]
    trace_dir = SHARED_TRACE_DIR if SHARED_TRACE_DIR.is_dir() else None
    env = _offline_env(tmp_path, trace_dir=trace_dir)
    env["NBGRADER_EXECUTION"] = "autograde"
    _execute(nb, tmp_path, env, timeout=60)
    assert _errors(nb) == {}
    assert "skipped while grading" in _text(nb.cells[1]) and "conversation" not in _text(nb.cells[1])
    assert _text(nb.cells[2]).strip() == ""
    assert not any(o.get("output_type") == "display_data" for o in nb.cells[2].outputs)
    assert _text(nb.cells[3]).strip() == "[]"


def test_gpu_section_is_skipped_while_grading(tmp_path):
    source = nbformat.read(config.SOURCE_NOTEBOOK, as_version=4)
    nb = nbformat.v4.new_notebook(metadata=source.metadata)
    switch = nbformat.v4.new_code_cell("RUN_REAL_BACKEND = True  # a student flipped the switch")
    nb.cells = [switch] + [c for c in source.cells if c.id == "gpu-backend"] + [nbformat.v4.new_code_cell(
        "import json, sys\nprint(json.dumps(sorted(m for m in ('vllm', 'torch') if m in sys.modules)))")]
    env = _offline_env(tmp_path)
    env["NBGRADER_EXECUTION"] = "autograde"
    _execute(nb, tmp_path, env, timeout=60)
    assert _errors(nb) == {}
    assert "跳过可选 GPU" in _text(nb.cells[1])
    assert json.loads(_text(nb.cells[2])) == []


def test_later_steps_run_on_the_students_functions_and_match_the_library(executed):
    """After the exercises the lesson calls the student's functions; with the reference answer its numbers (and so
    its figures) are the library's, as they were when the lesson called the library."""
    from tools.prefixbench import BlockKeys, PrefixCache, simulate_prefix_cache
    from tools.prefixbench.workload import generate_shared_prefix_workload

    nb, _, _ = executed
    cells = {c.id: c for c in nb.cells}
    docs = generate_shared_prefix_workload(num_requests=120, input_len=704, prefix_len=600, num_prefixes=3, seed=0)
    for bs in (8, 16, 32, 64, 128, 256):
        unlimited = simulate_prefix_cache(docs.prompts, bs, None)["token_reuse_rate"]
        budget = simulate_prefix_cache(docs.prompts, bs, 1792 // bs)["token_reuse_rate"]
        assert f"reuse unlimited={unlimited:.3f}, {1792 // bs} blocks={budget:.3f}" in _text(cells["measure"]), bs
    for cap in (40, 60, 80, 100, 120, 140, 160, 200):
        lru = simulate_prefix_cache(docs.prompts, 16, cap, policy="lru")
        seed = simulate_prefix_cache(docs.prompts, 16, cap, policy="seed")
        line = (f"capacity={cap:>3}: lru reuse={lru['token_reuse_rate']:.3f} orphans={lru['orphan_blocks']:>2} | "
                f"seed reuse={seed['token_reuse_rate']:.3f} orphans={seed['orphan_blocks']:>2}")
        assert line in _text(cells["compare-policies"]), line
    assert BlockKeys and PrefixCache  # the block model the seed policy runs on
    decide = _text(cells["decide"])
    assert [line.split("-> ")[1].split()[0] for line in decide.splitlines() if "-> " in line] == ["accept", "tune", "reject"]


def test_student_notebooks_never_import_the_librarys_answers():
    """The library's simulator and decision functions are called only inside the self-check (tools.course.diagnosis)."""
    for lang in config.LANGUAGES:
        text = config.release_notebook(lang).read_text(encoding="utf-8")
        for name in ("decision.chapter", "cache.prefix_cache", "library_simulate", "lib_decision",
                     "from tools.prefixbench import decision", "from tools.prefixbench import simulate_prefix_cache"):
            assert name not in text, (lang, name)
