"""The hit-rate report's evidence section: each source against the prediction (backend counters, each request's
``cached_tokens``, the KV events), the timeline replay of overlapping requests and the attribution, from results
the command wrote against fake servers; the KV-event and timeline sections (written only with a real vLLM, see
``tests/prefixbench/run/test_engine_exact_vllm.py``) in the shapes ``simulate.block_events`` / ``overlap`` write."""

from __future__ import annotations

import copy
import json

import pytest

from backend_fixtures import CachingFakeServer

from tools.prefixbench.cli import main
from tools.prefixbench.core.errors import InputError
from tools.prefixbench.core.records import SCHEMA_HITRATE, validate
from tools.prefixbench.report.markdown import render_markdown

HIT = ["--num-requests", "6", "--input-len", "64", "--hit-rate", "0.5", "--prefix-num", "2", "--output-len", "2"]


def _hitrate(tmp_path, server, *flags) -> tuple[dict, str]:
    out = tmp_path / "r.json"
    assert main(["hitrate", "--endpoint", server.base_url, "--model", "m", *HIT, *flags, "--output", str(out),
                 "--json"]) == 0
    return json.loads(out.read_text()), out.with_suffix(".md").read_text()


def _evidence(markdown: str) -> str:
    return markdown.split("## Evidence", 1)[1].split("\n## Latency", 1)[0]


def test_sources_that_agree_say_so_with_the_counts(tmp_path):
    with CachingFakeServer() as server:
        result, markdown = _hitrate(tmp_path, server, "--concurrency", "1")
    section = _evidence(markdown)
    predicted = result["prediction"]["predicted_hit_tokens"]
    assert f"| backend counters (total hit tokens) | yes | {predicted} hit tokens counted, {predicted} predicted |" \
        in section
    assert "| `cached_tokens` of each request | yes | 0 requests differ |" in section
    assert "| KV events, block by block | n/a | no KV events recorded |" in section
    assert "Not every source could be checked" in section
    assert "0 of 6 requests differ from the prediction" in section


def test_cached_tokens_that_disagree_name_the_requests(tmp_path):
    """The counters count every hit; each response under-reports its ``cached_tokens`` by one block."""
    with CachingFakeServer() as server:
        counted = server.cached_tokens
        server.cached_tokens = lambda prompt: max(0, counted(prompt) - 16)
        result, markdown = _hitrate(tmp_path, server, "--concurrency", "1")
    differ = result["evidence_agreement"]["requests_that_differ"]
    assert differ and result["evidence_agreement"]["counters"] is True
    section = _evidence(markdown)
    assert f"| `cached_tokens` of each request | **no** | {len(differ)} requests differ: " in section
    assert all(f"`{request}`" in section for request in differ)
    assert "Every source agrees" not in section and "A source disagrees" not in section  # KV events: n/a


DIVERGED = {"endpoint": "tcp://127.0.0.1:5557", "errors": [], "events_expected": 12, "events_seen": 11,
            "first_divergence": {"event": 7, "request": "r00003", "block": 1,
                                 "expected": {"kind": "BlockStored", "block": "request r00003 block 1"},
                                 "seen": {"kind": "BlockRemoved", "block": "a block the model did not cache"}},
            "hits_published": True, "batches": 9, "status": "diverged", "reason": None}
TIMELINE = {"status": "ok", "model": "simulate.timeline", "window_steps": 2, "predicted_hit_tokens": 160,
            "requests_exact": 4, "requests_that_differ": ["r00004", "r00005"], "unsettled": {"r00004": [0, 32]},
            "differ_outside_range": ["r00005"],
            "kv_events": {"status": "agree", "reason": None, "events_expected": 12, "events_seen": 12,
                          "first_divergence": None},
            "requests": [{"id": f"r0000{i}"} for i in range(6)]}


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict:
    with CachingFakeServer() as server:
        result, _ = _hitrate(tmp_path_factory.mktemp("evidence"), server, "--concurrency", "2")
    result["kv_events"], result["timeline"] = copy.deepcopy(DIVERGED), copy.deepcopy(TIMELINE)
    result["evidence_agreement"]["kv_events"] = False
    result["evidence_agreement"]["reasons"]["kv_events"] = None
    return result


def test_diverged_kv_events_and_the_timeline_replay_are_reported(written):
    section = _evidence(render_markdown(validate(written, SCHEMA_HITRATE, "r.json")))
    assert ("| KV events, block by block | **no** | diverged at event 7 (request r00003, block 1): expected "
            "BlockStored of request r00003 block 1, seen BlockRemoved of a block the model did not cache; 11 events "
            "seen, 12 expected |") in section
    assert ("4 of 6 requests exact, 1 unsettled (the observations allow a range of hits), 1 differ outside their "
            "range (`r00005`).") in section
    assert "KV events on the timeline: agree: 12 events seen, 12 expected." in section


def _paths(value, path=()):
    """Every path into ``value``: its leaves and the objects and arrays that hold them (a whole object replaced by
    a string must be refused too)."""
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from _paths(item, (*path, index))


@pytest.mark.parametrize("part", ["kv_events", "timeline", "evidence_agreement", "attribution"])
def test_every_damaged_field_of_the_evidence_is_refused_in_one_line_or_renders(written, part):
    crashes = []
    for path in _paths(written[part], (part,)):
        for new in (None, "x", 7, -1, 2.5, True, [], {}, ["x"], {"x": 1}):
            document = copy.deepcopy(written)
            parent = document
            for key in path[:-1]:
                parent = parent[key]
            parent[path[-1]] = new
            try:
                render_markdown(validate(document, SCHEMA_HITRATE, "r.json"))
            except InputError:
                continue
            except Exception as exc:  # noqa: BLE001 - the finding is the exception itself
                crashes.append(f"{'.'.join(map(str, path))} = {new!r}: {type(exc).__name__}: {exc}")
    assert not crashes, "\n".join(crashes[:20])
