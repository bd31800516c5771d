"""A request's row (``core.request_rows.RequestRow``) writes what ``RequestResult.row`` always wrote, key order
included, keeps a command's columns after the client's in the order they were added, and reads a file's row back."""

import json
import statistics
from dataclasses import asdict
from pathlib import Path

import pytest

from tools.prefixbench.core.request_rows import CLIENT_KEYS, RequestRow, rows_of
from tools.prefixbench.measure.client import RequestResult

GOLDEN = Path(__file__).parents[1] / "run" / "golden"


def _result(**changes) -> RequestResult:
    fields = dict(id="r1", index=3, status="ok", http_status=200, prompt_tokens=40, sent_prompt_tokens=40,
                  output_tokens=4, cached_tokens=32, sent_at_s=0.25, ttft_ms=12.5, tpot_ms=2.0, e2e_ms=18.5,
                  itl_ms=[1.0, 2.0, 3.0], output_token_ids=[5, 6, 7, 8], stream_chunks=[(0.26, 1)])
    return RequestResult(**(fields | changes))


def _row_as_before(result: RequestResult) -> dict:
    """The row as ``RequestResult.row`` built it before the record: ``asdict`` less the ITL list, the chunks and
    the response's start (both kept in memory only), then the ITL mean and maximum."""
    data = asdict(result)
    gaps = data.pop("itl_ms")
    data.pop("stream_chunks")
    data.pop("answered_at_s")
    data["itl_ms_mean"] = statistics.fmean(gaps) if gaps else None
    data["itl_ms_max"] = max(gaps) if gaps else None
    return data


@pytest.mark.parametrize("result", [_result(), _result(itl_ms=[], output_token_ids=None, status="error",
                                                       error="HTTP 500", cached_tokens=None, usage_reason="x")])
def test_the_row_is_what_the_client_always_wrote_key_order_included(result):
    row = result.as_row()
    assert list(row.to_json().items()) == list(_row_as_before(result).items())
    assert result.row() == row.to_json() and tuple(row.to_json()) == CLIENT_KEYS


def test_a_commands_columns_follow_the_clients_in_the_order_they_were_added():
    row = _result().as_row().with_columns(predicted_hit_tokens=32, prefix_group=1).with_columns(replica=0)
    assert list(row.to_json())[len(CLIENT_KEYS):] == ["predicted_hit_tokens", "prefix_group", "replica"]
    assert row.predicted_hit_tokens == 32 and row.columns["replica"] == 0 and "pair_position" not in row.columns
    again = row.with_columns(predicted_hit_tokens=16)  # a column it has keeps its place
    assert list(again.to_json()) == list(row.to_json()) and again.predicted_hit_tokens == 16
    assert RequestRow.from_json(row.to_json()) == row


def test_a_column_never_hides_what_the_client_saw():
    with pytest.raises(ValueError, match="cached_tokens"):
        _result().as_row().with_columns(cached_tokens=0)


def test_the_output_ids_written_are_a_copy():
    row = _result().as_row()
    written = row.to_json()
    written["output_token_ids"].append(9)
    assert row.output_token_ids == [5, 6, 7, 8]


@pytest.mark.parametrize("case", ["hitrate", "hitrate_replicas", "replay", "isolation"])
def test_every_golden_row_reads_back_and_writes_each_of_its_keys_unchanged(case):
    rows = json.loads((GOLDEN / f"{case}.json").read_text())["result"]["requests"]
    assert rows
    for data, row in zip(rows, rows_of(rows)):
        written = row.to_json()
        assert {k: written[k] for k in data} == data  # the golden files drop the timings, which read as None
        assert row.id == data["id"] and row.cached_tokens == data["cached_tokens"]
        assert row.predicted_hit_tokens == data["predicted_hit_tokens"]


def test_rows_of_passes_records_through_and_reads_mappings():
    record = _result().as_row()
    assert rows_of([record, {"id": "x", "status": "ok", "ttft_ms": 3.0}]) == [
        record, RequestRow(id="x", index=0, status="ok", ttft_ms=3.0)]
