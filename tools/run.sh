#!/usr/bin/env bash
# The project's two commands (see README.md): `bash tools/run.sh main` and `bash tools/run.sh test`.
# Each one first makes sure .venv holds the pinned requirements (tools/setup.sh), so both work on a
# fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { echo "usage: bash tools/run.sh main|test [args...]" >&2; }
[ $# -ge 1 ] || { usage; exit 1; }
command=$1
shift
bash tools/setup.sh
# Mooncake traces: use the team's read-only copy when it sits beside the repository (no download needed).
if [ -z "${PREFIXBENCH_TRACE_DIR:-}" ] && [ -d ../shared/data/mooncake ]; then
  PREFIXBENCH_TRACE_DIR=$(cd ../shared/data/mooncake && pwd)
  export PREFIXBENCH_TRACE_DIR
fi
py=.venv/bin/python
case "$command" in
  main)
    echo "== simulator: benchmarks/workloads/prefix_reuse.jsonl as vLLM on CPU sees it (128-token blocks)"
    $py -m tools.prefixbench simulate --block-size 128 --last-token-rule "$@"
    echo "== Mooncake conversation trace, 20000-block cache (10.2M tokens), both eviction policies"
    $py -m tools.prefixbench trace conversation --capacity 20000 --policy lru
    $py -m tools.prefixbench trace conversation --capacity 20000 --policy seed
    ;;
  test)
    exec $py -m pytest "$@"
    ;;
  *)
    usage
    exit 1
    ;;
esac
