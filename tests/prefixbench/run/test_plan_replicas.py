"""``prefixbench plan --replicas N --routing ...`` (issue 24): with N replicas of this pool, which placement and
what hit rate; the figures are the yardstick's (``simulate.placement``) on the same engine requests."""

from __future__ import annotations

import contextlib
import io
import json
import random

import pytest

from tools.prefixbench import cli
from tools.prefixbench.simulate import plan
from tools.prefixbench.simulate.placement import yardstick


def _workload(path, n: int = 30):
    rng = random.Random(5)
    heads = [[rng.randrange(10, 1000) for _ in range(64)] for _ in range(3)]
    lines = [{"id": f"r{i}", "prompt_token_ids": heads[i % 3] + [rng.randrange(10, 1000) for _ in range(20)],
              "max_tokens": 4} for i in range(n)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return lines


def _plan(tmp_path, *args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["plan", "--output", str(tmp_path / "plan.json"), *args])
    return code, out.getvalue(), err.getvalue()


def test_plan_for_replicas_names_the_placement_and_matches_the_yardstick(tmp_path):
    lines = _workload(tmp_path / "w.jsonl")
    code, out, err = _plan(tmp_path, "--workload", str(tmp_path / "w.jsonl"), "--block-size", "16", "--replicas", "2",
                           "--routing", "round_robin,affinity_1,oracle_bounded", "--pool-blocks", "20", "--json")
    assert code == 0, err
    found = json.loads((tmp_path / "plan.json").read_text())["replicas"]
    assert json.loads(out)["replicas"] == found
    requests = plan.requests_from_prompts([r["prompt_token_ids"] for r in lines], [4] * len(lines), 16)
    direct = yardstick(requests, 2, 16, 20)
    assert set(found["policies"]) == {"round_robin", "affinity_1", "oracle_bounded"}
    for name, row in found["policies"].items():
        assert row["hit_rate"] == direct["policies"][name]["hit_rate"]
        assert row["points_lost_to_best"] == pytest.approx(direct["policies"][name]["points_lost_to_best"])
    assert found["pool_blocks_per_replica"] == 20 and found["recommended"] in found["policies"]
    assert found["policies"]["round_robin"]["hit_rate"] < found["recommended_hit_rate"]


@pytest.mark.parametrize("args, flag", [
    (["--routing", "round_robin"], "--routing"),
    (["--replicas", "2", "--routing", "fastest"], "routing"),
    (["--replicas", "2", "--pool-blocks", "2"], "--pool-blocks"),
])
def test_replica_flags_are_checked_in_one_line(tmp_path, args, flag):
    _workload(tmp_path / "w.jsonl")
    code, _, err = _plan(tmp_path, "--workload", str(tmp_path / "w.jsonl"), "--block-size", "16", *args)
    assert code == 1 and len(err.strip().splitlines()) == 1 and flag in err, err
