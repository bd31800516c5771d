"""Does the verdict survive a noisy machine? The main job, sequential against interleaved, with a neighbour.

Runs ``python -m tools.prefixbench g0g1`` (the main job: the default workload and model) ``--runs`` times with
``--schedule sequential`` and as many times with ``--schedule interleaved``, alternating (so a change of the
machine's own load falls on both schedules alike). In each run a CPU-burning process (one busy Python loop, a
neighbour taking one core) starts at a random point: a uniform delay in ``--burner-window`` seconds after the
run's first server is healthy, and runs until the run ends. It prints, per schedule, how many runs reached
``accept`` and the median width of the interval the decision read (the paired TTFT gain) and of the unpaired
TTFT p50 interval, side by side, and writes every run's numbers to ``OUT/bench_noisy_decision.json``.

    .venv/bin/python benchmarks/bench_noisy_decision.py [--runs 5] [--lock /tmp/prefixbench-realserver.lock]

``--lock FILE`` holds ``flock FILE`` around each run (not the whole benchmark), so on a shared machine other
real-server jobs wait for one run, not for all ten, and none of them runs beside a measured run.

Extra arguments after ``--`` go to every g0g1 run (e.g. ``-- --num-prompts 10``).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tools.prefixbench.core.files import atomic_write_json  # noqa: E402

SUMMARY = "69_prefix_cache.json"
BURNER = "while True: pass"


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _healthy(summary: dict | None) -> bool:
    return bool(((summary or {}).get("active") or {}).get("pid"))


def one_run(schedule: str, out: Path, window: tuple[float, float], rng: random.Random, extra: list[str]) -> dict:
    """One g0g1 run with a burner started at a random point after its first server is healthy."""
    command = [sys.executable, "-m", "tools.prefixbench", "g0g1", "--schedule", schedule, "--out", str(out),
               "--json", *extra]
    delay = rng.uniform(*window)
    started = time.monotonic()
    proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    burner, burner_at = None, None
    try:
        while proc.poll() is None and not _healthy(_read(out / SUMMARY)):
            time.sleep(0.5)
        healthy_at = time.monotonic()
        while proc.poll() is None and time.monotonic() < healthy_at + delay:
            time.sleep(0.2)
        if proc.poll() is None:
            burner = subprocess.Popen([sys.executable, "-c", BURNER])
            burner_at = time.monotonic() - started
        proc.communicate(timeout=3600)
    finally:
        if burner is not None:
            burner.kill()
            burner.wait()
        if proc.poll() is None:
            proc.terminate()
            proc.wait()
    summary = _read(out / SUMMARY) or {}
    s = summary.get("paired_summary") or {}
    paired = (s.get("paired") or {}).get("ttft_gain_ms") or {}
    unpaired = (s.get("confidence") or {}).get("ttft_p50_gain_ms") or {}
    return {"schedule": (summary.get("config") or {}).get("schedule", {}).get("schedule"), "asked": schedule,
            "exit_code": proc.returncode, "decision": s.get("decision"), "reason": s.get("reason"),
            "burner_delay_s": round(delay, 1), "burner_started_at_s": burner_at and round(burner_at, 1),
            "duration_s": round(time.monotonic() - started, 1),
            "paired_estimate_ms": paired.get("estimate"), "paired_ci_width_ms": paired.get("ci_width"),
            "paired_ci": [paired.get("ci_low"), paired.get("ci_high")], "p_value": paired.get("p_value"),
            "spread_removed": paired.get("spread_removed"),
            "unpaired_p50_ci_width_ms": (None if unpaired.get("estimate") is None
                                         else unpaired["ci_high"] - unpaired["ci_low"]),
            "g0_ttft_p50_ms": s.get("g0_ttft_p50_ms"), "g1_ttft_p50_ms": s.get("g1_ttft_p50_ms"),
            "server_ttft_agreement": (s.get("server_ttft_signal") or {}).get("agreement")}


@contextlib.contextmanager
def _locked(path: str | None):
    if path is None:
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _median(values) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def table(runs: list[dict]) -> str:
    def num(v):
        return "n/a" if v is None else f"{v:.1f}"

    lines = ["| schedule | runs | accept | median paired CI width ms | median unpaired p50 CI width ms | decisions |",
             "| --- | --- | --- | --- | --- | --- |"]
    for schedule in ("sequential", "interleaved"):
        mine = [r for r in runs if r["asked"] == schedule]
        accepts = sum(r["decision"] == "accept" for r in mine)
        lines.append(f"| {schedule} | {len(mine)} | {accepts} of {len(mine)} | "
                     f"{num(_median(r['paired_ci_width_ms'] for r in mine))} | "
                     f"{num(_median(r['unpaired_p50_ci_width_ms'] for r in mine))} | "
                     f"{', '.join(str(r['decision']) for r in mine)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per schedule (default 5)")
    parser.add_argument("--burner-window", type=float, nargs=2, default=(5.0, 35.0), metavar=("FROM", "TO"),
                        help="the burner starts this many seconds (uniform) after the first server is healthy")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="folder for the runs (default: a new temporary folder)")
    parser.add_argument("--lock", default=None, help="flock this file around each run")
    args = parser.parse_args(argv)
    out = Path(args.out or tempfile.mkdtemp(prefix="bench_noisy_decision_"))
    rng, runs = random.Random(args.seed), []
    for i in range(args.runs):
        for schedule in (("sequential", "interleaved") if i % 2 == 0 else ("interleaved", "sequential")):
            with _locked(args.lock):
                run = one_run(schedule, out / f"{schedule}_{i}", tuple(args.burner_window), rng, extra)
            runs.append(run)
            print(f"run {i} {schedule}: {run['decision']} (paired CI width {run['paired_ci_width_ms']}, burner at "
                  f"{run['burner_started_at_s']} s of {run['duration_s']} s)", file=sys.stderr, flush=True)
            atomic_write_json(out / "bench_noisy_decision.json", {"runs": runs, "extra_args": extra})
    print(table(runs))
    print(f"runs and manifests: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
