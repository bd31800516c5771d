"""Property tests for every loader: on arbitrary bytes and arbitrary JSON, nothing but ``InputError`` escapes,
and a result that a loader accepts can always be rendered (report, compare, history line)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tools.prefixbench.core.errors import InputError
from tools.prefixbench.core.records import load_g0g1_summary, load_group_manifest, load_hitrate_result
from tools.prefixbench.report.markdown import render_compare, render_markdown
from tools.prefixbench.report.outputs import history_line
from tools.prefixbench.report.plot import hitrate_plot_data, plot_hitrate
from tools.prefixbench.traces import load_trace
from tools.prefixbench.workload import load_workload

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=12)

WORKLOAD_KEYS = ("id", "prompt_token_ids", "max_tokens", "prefix_group")
workload_lines = st.dictionaries(st.sampled_from(WORKLOAD_KEYS) | st.text(max_size=4), json_values, max_size=5) | (
    st.fixed_dictionaries({"prompt_token_ids": st.lists(st.integers(-3, 2**64), max_size=6)},
                          optional={k: json_values for k in ("id", "max_tokens", "prefix_group")}))
trace_lines = st.fixed_dictionaries({}, optional={"input_length": st.integers(-2, 3000) | json_values,
                                                  "hash_ids": st.lists(st.integers(-2, 50), max_size=8) | json_values})


def _only_input_error(call):
    try:
        call()
    except InputError:
        pass


@SETTINGS
@given(data=st.binary(max_size=300))
def test_workload_and_trace_loaders_on_arbitrary_bytes(tmp_path, data):
    path = tmp_path / "f.jsonl"
    path.write_bytes(data)
    _only_input_error(lambda: load_workload(path))
    _only_input_error(lambda: load_trace(path, allow_download=False))


@SETTINGS
@given(lines=st.lists(workload_lines, min_size=1, max_size=4))
def test_workload_loader_on_arbitrary_json_lines(tmp_path, lines):
    path = tmp_path / "w.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    _only_input_error(lambda: load_workload(path))


@SETTINGS
@given(lines=st.lists(trace_lines, min_size=1, max_size=4))
def test_trace_loader_on_arbitrary_json_lines(tmp_path, lines):
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    _only_input_error(lambda: load_trace(path, allow_download=False))


@pytest.fixture(scope="module")
def saved_result(tmp_path_factory):
    """A real hit-rate result, made by the CLI against a fake server (the shape every section really has)."""
    from backend_fixtures import FakeServer, prometheus_text

    from tools.prefixbench.cli import main

    out = tmp_path_factory.mktemp("result") / "r.json"
    with FakeServer(metrics=lambda: prometheus_text(64, 32), models={"data": [{"id": "m"}]}) as server:
        assert main(["hitrate", "--endpoint", server.base_url, "--model", "m", "--hit-rate", "0.5", "--input-len",
                     "64", "--num-requests", "2", "--output-len", "2", "--block-size", "16", "--output", str(out),
                     "--json"]) == 0
    return json.loads(out.read_text())


def _paths(value, prefix=()):
    """Every path to a value inside a JSON document."""
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from _paths(child, (*prefix, i))


def _replace(document, path, new, delete=False):
    """A copy of ``document`` with the value at ``path`` replaced by ``new`` (or its key deleted)."""
    if not path:
        return new
    copy = json.loads(json.dumps(document))
    node = copy
    for key in path[:-1]:
        node = node[key]
    if delete and isinstance(node, dict):
        del node[path[-1]]
    else:
        node[path[-1]] = new
    return copy


@SETTINGS
@given(data=st.data())
def test_a_result_the_loader_accepts_always_renders(tmp_path, saved_result, data):
    """Replace (or delete) any value of a real result: load it, and if it loads, every renderer works."""
    paths = list(_paths(saved_result))
    path = data.draw(st.sampled_from(paths))
    document = _replace(saved_result, path, data.draw(json_values | st.integers(10**15, 10**30)),
                        delete=data.draw(st.booleans()))
    file = tmp_path / "r.json"
    file.write_text(json.dumps(document))
    for loader in (load_group_manifest, load_g0g1_summary):
        _only_input_error(lambda: loader(file))
    try:
        result = load_hitrate_result(file)
    except InputError:
        return
    render_markdown(result)
    render_compare(result, saved_result, ("a", "b"))
    json.dumps(history_line(result, "r.json"), allow_nan=False)
    hitrate_plot_data(result)  # every field the plot reads; drawing a PNG per example is test_damaged_results_plot


@pytest.mark.parametrize("path, new", [(("requests",), None), (("hit_rates",), {}), (("speedup",), None),
                                       (("hit_rates", "measured"), None), (("requests", 0, "ttft_ms"), None)])
def test_damaged_results_plot(tmp_path, saved_result, path, new):
    """The plot itself on a few results the loader accepts although parts are missing."""
    file = tmp_path / "r.json"
    file.write_text(json.dumps(_replace(saved_result, path, new)))
    assert plot_hitrate(load_hitrate_result(file), tmp_path / "r.png").stat().st_size > 1000
