"""The hit-rate report's evidence section: each source against the prediction (backend counters, each request's
``cached_tokens``, the KV events), the timeline replay of overlapping requests and the attribution, from results
the command wrote against fake servers; the KV-event and timeline sections (written only with a real vLLM, see
``tests/prefixbench/run/test_engine_exact_vllm.py``) made by ``simulate.block_events`` / ``overlap`` themselves."""

from __future__ import annotations

import copy
import json

import pytest

from backend_fixtures import CachingFakeServer, closed_port

from tools.prefixbench.cli import main
from tools.prefixbench.core.errors import InputError
from tools.prefixbench.core.evidence_records import EngineRow, EvidenceAgreement, agreement_brief
from tools.prefixbench.core.kv_event_records import KvEventSection
from tools.prefixbench.core.records import SCHEMA_HITRATE, validate
from tools.prefixbench.report.markdown import render_markdown
from tools.prefixbench.simulate.block_events import compare_block_events, engine_replay
from tools.prefixbench.simulate.overlap import SentRequest, timeline_section

HIT = ["--num-requests", "6", "--input-len", "64", "--hit-rate", "0.5", "--prefix-num", "2", "--output-len", "2"]


def _hitrate(tmp_path, server, *flags) -> tuple[dict, str]:
    out = tmp_path / "r.json"
    assert main(["hitrate", "--endpoint", server.base_url, "--model", "m", *HIT, *flags, "--output", str(out),
                 "--json"]) == 0
    return json.loads(out.read_text()), out.with_suffix(".md").read_text()


def _evidence(markdown: str) -> str:
    return markdown.split("## Evidence", 1)[1].split("\n## Latency", 1)[0]


def test_sources_that_agree_say_so_with_the_counts(tmp_path, capsys):
    with CachingFakeServer() as server:
        result, markdown = _hitrate(tmp_path, server, "--concurrency", "1")
    printed = json.loads(capsys.readouterr().out)  # --json: what a script reads
    assert printed["evidence_agreement"] == result["evidence_agreement"] and printed["evidence_agreement"]["counters"]
    section = _evidence(markdown)
    predicted = result["prediction"]["predicted_hit_tokens"]
    assert f"| backend counters (total hit tokens) | yes | {predicted} hit tokens counted, {predicted} predicted |" \
        in section
    assert "| `cached_tokens` of each request | yes | 0 requests differ |" in section
    assert "| KV events, block by block | n/a | no KV events recorded |" in section
    assert "Every source checked agrees with the prediction; not checked: KV events, block by block" in section
    assert agreement_brief(result) == "counters yes, cached_tokens yes, KV events n/a"
    assert [e["engine"] for e in result["engines"]][-1] == "all" and all(  # the per-engine rows, as the files had them
        list(e) == ["engine", "hit_tokens", "query_tokens", "hit_rate"] and EngineRow.from_json(e).to_json() == e
        for e in result["engines"])
    assert "0 of 6 requests differ from the prediction" in section


def test_cached_tokens_that_disagree_name_the_requests(tmp_path):
    """The counters count every hit; each response under-reports its ``cached_tokens`` by one block."""
    with CachingFakeServer() as server:
        counted = server.cached_tokens
        server.cached_tokens = lambda prompt: max(0, counted(prompt) - 16)
        result, markdown = _hitrate(tmp_path, server, "--concurrency", "1")
    differ = result["evidence_agreement"]["requests_that_differ"]
    assert differ and result["evidence_agreement"]["counters"] is True
    history = [json.loads(line) for line in (tmp_path / "hitrate_history.jsonl").read_text().splitlines()]
    assert history[-1]["evidence_all_agree"] is False  # one disagreeing source, whatever could not be checked
    section = _evidence(markdown)
    assert f"| `cached_tokens` of each request | **no** | {len(differ)} requests differ: " in section
    assert all(f"`{request}`" in section for request in differ)
    assert ("Disagrees with the prediction: `cached_tokens` of each request. The attribution below gives each "
            "differing request's cause.") in section  # a disagreement first, though the KV events were not checked
    assert agreement_brief(result) == "counters yes, cached_tokens NO, KV events n/a"  # the terminal table's row


def test_kv_events_that_never_arrive_are_missing_with_the_reason_in_the_files_key_order(tmp_path):
    """``--kv-events`` against a server that publishes nothing: the walk ran (the server streamed the generated
    token ids, so the engine model could replay the run, and reset its cache, so the events can be aligned) and
    found no batch."""
    address = f"tcp://127.0.0.1:{closed_port()}"
    with CachingFakeServer(token_ids=True, resets=True) as server:
        result, markdown = _hitrate(tmp_path, server, "--concurrency", "1", "--reset-cache", "--kv-events", address)
    events = result["kv_events"]
    assert list(events) == ["endpoint", "errors", "events_expected", "events_seen", "first_divergence",
                            "hits_published", "batches", "status", "reason"]
    assert (events["endpoint"], events["status"], events["batches"], events["events_seen"]) == \
        (address, "incomplete", 0, 0) and events["events_expected"] > 0
    assert KvEventSection.from_json(events).to_json() == events
    assert result["evidence_agreement"]["kv_events"] is None
    assert f"| KV events, block by block | n/a | {events['reason']} |" in _evidence(markdown)


def test_kv_events_the_engine_model_could_not_replay_say_why_and_name_no_divergence(tmp_path):
    """Without the generated token ids the engine model does not run: nothing to walk the events against."""
    with CachingFakeServer() as server:
        result, markdown = _hitrate(tmp_path, server, "--concurrency", "1", "--kv-events",
                                    f"tcp://127.0.0.1:{closed_port()}")
    events = result["kv_events"]
    assert list(events) == ["endpoint", "errors", "status", "reason", "first_divergence"]
    assert events["status"] == "not_comparable" and events["first_divergence"] is None
    assert events["reason"].startswith("the engine model did not run: ")
    assert KvEventSection.from_json(events).to_json() == events
    assert f"| KV events, block by block | n/a | {events['reason']} |" in _evidence(markdown)


A = list(range(8))


def _batches(*events):
    return [{"seq": i, "ts": float(i), "events": list(group)} for i, group in enumerate(events)]


def _stored(hashes, parent, tokens):
    return {"type": "BlockStored", "block_hashes": hashes, "parent_block_hash": parent, "token_ids": tokens,
            "block_size": 4}


def _diverged() -> dict:
    """What ``run.live.kv_events`` writes when the server removed a block the model still holds."""
    replay = engine_replay([A, A], [[50], [50]], 4, 4, record_events=True, report_hits=True)
    batches = _batches([{"type": "AllBlocksCleared"}], [_stored([11, 12], None, A)], [_stored([11], None, A[:4])],
                       [{"type": "BlockRemoved", "block_hashes": [12]}])
    check = compare_block_events(batches, replay, ["r00000", "r00001"])
    return KvEventSection("tcp://127.0.0.1:5557", [], check).to_json()


def _timeline() -> dict:
    """What ``simulate.overlap`` writes for two overlapping requests, the second evicted before it looked."""
    prefix = list(range(100, 108))
    first = SentRequest(prefix + [1, 2], [50, 51], 0.0, [(0.2, 1), (1.2, 2)])
    second = SentRequest(prefix + [3], [60, 61], 2.5, [(3.3, 1), (4.3, 2)])
    evicted = _batches([{"type": "AllBlocksCleared"}, _stored([11, 12], None, prefix)],
                       [{"type": "BlockRemoved", "block_hashes": [12, 11]}], [_stored([11, 12], None, prefix)])
    return timeline_section(["r00000", "r00001"], [first, second], [0, None], 4, 64, batches=evicted).to_json()


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict:
    with CachingFakeServer() as server:
        result, _ = _hitrate(tmp_path_factory.mktemp("evidence"), server, "--concurrency", "2")
    result["kv_events"], result["timeline"] = _diverged(), _timeline()
    result["evidence_agreement"]["kv_events"] = False
    result["evidence_agreement"]["reasons"]["kv_events"] = None
    return result


def test_diverged_kv_events_and_the_timeline_replay_are_reported(written):
    """The sections as the project's own code writes them: accepted by the loader, rendered with their numbers."""
    events = written["kv_events"]
    assert events["status"] == "diverged" and written["timeline"]["status"] == "ok"
    section = _evidence(render_markdown(validate(copy.deepcopy(written), SCHEMA_HITRATE, "r.json")))
    assert (f"| KV events, block by block | **no** | diverged at event 3 (request r00001, block 1): expected "
            f"stored of r00000 block 1, seen removed of r00000 block 1; {events['events_seen']} events seen, "
            f"{events['events_expected']} expected |") in section
    assert "Disagrees with the prediction: KV events, block by block." in section
    assert "The attribution below" not in section  # only cached_tokens differences are attributed per request
    assert ("1 of 1 requests that reported cached_tokens exact (1 reported none), 0 unsettled (the observations "
            "allow a range of hits), 0 differ outside their range.") in section
    on_timeline = written["timeline"]["kv_events"]
    assert f"KV events on the timeline: diverged at event {on_timeline['first_divergence']['event']} " in section
    assert "### Differences attributed" in section


def test_the_agreement_keeps_the_files_key_order():
    written = {"counters": True, "cached_tokens": False, "kv_events": None, "requests_that_differ": ["r1"],
               "reasons": {"counters": None, "cached_tokens": None, "kv_events": "no KV events recorded"},
               "all_agree": False}
    agreement = EvidenceAgreement.from_json(written)
    assert agreement is not None and agreement.to_json() == written
    assert list(agreement.to_json()) == list(written) and list(agreement.to_json()["reasons"]) == list(
        written["reasons"])
    assert agreement.all_agree is False  # cached_tokens disagree, whatever the KV events would have said
    assert EvidenceAgreement.from_json({**written, "cached_tokens": True}).all_agree is None
    assert EvidenceAgreement.from_json({**written, "kv_events": True}).all_agree is False
    assert EvidenceAgreement.from_json({**written, "kv_events": True, "cached_tokens": True}).all_agree is True


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


def test_every_unsettled_request_is_counted_and_a_range_that_is_not_a_list_is_refused(written):
    def rendered(unsettled):
        document = copy.deepcopy(written)
        document["timeline"]["unsettled"] = unsettled
        return _evidence(render_markdown(validate(document, SCHEMA_HITRATE, "r.json")))

    assert ", 1 unsettled (the observations allow a range of hits)" in rendered({"r00001": [0, 16]})
    assert ", 1 unsettled (the observations allow a range of hits)" in rendered({"r00001": [0, 16, 32]})
    assert ", 1 unsettled (the observations allow a range of hits)" in rendered({"r00001": None})
    with pytest.raises(InputError, match="timeline.unsettled.r00001"):
        rendered({"r00001": "0-16"})

def test_replicas_get_no_attribution_that_would_call_another_replica_evicted(tmp_path):
    with CachingFakeServer() as first, CachingFakeServer() as second:
        result, markdown = _hitrate(tmp_path, first, "--endpoint", second.base_url, "--routing", "round_robin",
                                    "--concurrency", "1")
    assert result["replicas"] and result["attribution"]["summary"]["requests"] == 6
    section = _evidence(markdown)
    assert "Not shown for replicas: the attribution models one shared cache" in section
    assert "Shared tokens no cache could reuse" not in section


def test_compare_puts_the_evidence_of_two_runs_side_by_side(tmp_path):
    from tools.prefixbench.report.markdown import render_compare

    with CachingFakeServer() as server:
        agreeing, _ = _hitrate(tmp_path, server, "--concurrency", "1")
    with CachingFakeServer() as server:
        counted = server.cached_tokens
        server.cached_tokens = lambda prompt: max(0, counted(prompt) - 16)
        disagreeing, _ = _hitrate(tmp_path, server, "--concurrency", "1")
    rows, markdown = render_compare(agreeing, disagreeing, ("a", "b"))
    assert ("evidence agrees", "counters yes, cached_tokens yes, KV events n/a",
            "counters yes, cached_tokens NO, KV events n/a") in rows
    assert "| evidence agrees | counters yes, cached_tokens yes, KV events n/a | counters yes, cached_tokens NO" \
        in markdown
