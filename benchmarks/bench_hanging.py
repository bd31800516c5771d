"""Grade one submission whose simulate_prefix_cache never returns, at the default time rule, and print what it cost.

    .venv/bin/python benchmarks/bench_hanging.py

Issue 11's goal: a hanging function costs at most three minutes of a class's grading. The first cell that calls it
waits the full cell timeout (120 s); every later cell that names it gets the hung timeout (2 s), within the
after-hang budget. Prints the wall time, the limits each cut used, and the cost without the rule (every calling
cell waiting the full timeout), side by side. The test suite checks the same rule at a scaled-down time
(tests/course/grading/test_grading_faults.py); this runs it at full size.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "course"))  # the class fixtures (course_fixtures); tools.* is installed


def main() -> int:
    import nbformat

    from course_fixtures.make_class import with_solutions
    from course_fixtures.variants import HANGING_SIMULATE
    from tools.course import config

    with tempfile.TemporaryDirectory() as tmp:
        subs, out = Path(tmp) / "submissions", Path(tmp) / "out"
        path = subs / "hanging" / config.NOTEBOOK_FILE
        path.parent.mkdir(parents=True)
        release = nbformat.read(config.RELEASE_NOTEBOOK, as_version=4)
        nbformat.write(with_solutions(release, {"ex0-simulate": HANGING_SIMULATE}), path)
        started = time.monotonic()
        subprocess.run([sys.executable, str(REPO / "autograde" / "grade.py"), str(subs), "--out", str(out),
                        "--workers", "1"], check=True, capture_output=True)
        wall = time.monotonic() - started
        with (out / "grades.csv").open(newline="") as handle:
            row = next(csv.DictReader(handle))
        cuts = json.loads((out / "results.json").read_text())["students"][0]["cuts"]
    waited = [c for c in cuts if c["cut"] == "timed_out"]
    without_rule = len(waited) * waited[0]["limit_s"]
    print(f"hanging submission: graded in {wall:.0f} s wall ({row['seconds']} s in the notebook), score {row['score']}")
    print(f"cuts: {len(waited)} cells, limits {[c['limit_s'] for c in waited]}")
    print(f"without the hung-function rule: {len(waited)} x {waited[0]['limit_s']:g} s = {without_rule:g} s; "
          f"with it {float(row['seconds']):.0f} s ({without_rule / float(row['seconds']):.1f}x less); goal <= 180 s: "
          f"{'met' if float(row['seconds']) <= 180 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
