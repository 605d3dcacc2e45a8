#!/usr/bin/env bash
# One prepared device check for the batched path engine: the paper's synthetic study at long horizons
# (default 300 trajectories = 100 trials x p in {1.75, 2, 3}, normalized steps, lr 0.1, float64,
# 10^6 steps, log-spaced records) on one CUDA device. Run from anywhere:
#   bash benchmarks/paths_gpu.sh                              # total budget about 8 minutes on a GPU
#   bash benchmarks/paths_gpu.sh --device cpu --trials 2 --steps 300 --short 50 --out /tmp/run   # CPU smoke
# Steps: (1) the device; (2) the gpu-marked tests (CUDA only; cut at --test-limit seconds, default 240),
# then the optimizer step on the device (--opt-size parameters, default 10^7, in each of --opt-dtypes,
# default float32,float64, each cut at --opt-limit seconds, default 120); (3) throughput of the whole batch on a
# short horizon (--short steps), projected to --steps; (4) the full run through `mdcert paths` (training
# on the device, certified SVMs on CPU workers) only when the projection fits --full-limit seconds,
# then (5) the rate verdict at each horizon (benchmarks/paths_horizons.py). Everything it prints goes
# into benchmarks/README.md (paths section), with the load average it prints.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
DEVICE=cuda TRIALS=100 STEPS=1000000 SHORT=20000 RECORDS=241 FULL_LIMIT=300 OUT=${TMPDIR:-/tmp}/mdcert_paths_gpu WORKERS=()
OPT_SIZE=10000000 OPT_DTYPES=float32,float64 TEST_LIMIT=240 OPT_LIMIT=120
while [ $# -gt 0 ]; do
  case "$1" in
    --device) DEVICE=$2; shift 2;; --trials) TRIALS=$2; shift 2;; --steps) STEPS=$2; shift 2;;
    --short) SHORT=$2; shift 2;; --records) RECORDS=$2; shift 2;; --full-limit) FULL_LIMIT=$2; shift 2;;
    --out) OUT=$2; shift 2;; --workers) WORKERS=(--workers "$2"); shift 2;; --opt-size) OPT_SIZE=$2; shift 2;;
    --opt-dtypes) OPT_DTYPES=$2; shift 2;; --test-limit) TEST_LIMIT=$2; shift 2;; --opt-limit) OPT_LIMIT=$2; shift 2;;
    *) echo "paths_gpu.sh: unknown option $1 (use --device --trials --steps --short --records --full-limit --out --workers --opt-size --opt-dtypes --test-limit --opt-limit)" >&2
       exit 1;;
  esac
done
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"

$PY - "$DEVICE" <<'EOF'
import sys, torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
if sys.argv[1].startswith("cuda"):
    assert torch.cuda.is_available(), "no CUDA device"
    print("device:", torch.cuda.get_device_name(0))
EOF

if [ "${DEVICE%%:*}" = cuda ]; then
  timeout "$TEST_LIMIT" $PY -m pytest -m gpu -q -p no:cacheprovider tests/experiments/paths tests/experiments/testing \
    tests/experiments/optim || echo "gpu tests FAILED or timed out"
fi

# (2b) the optimizer step on the device: LpMirrorDescent against SGD and fused Adam (issue 25), in
# each of --opt-dtypes (on CUDA the LpMD rows are the default foreach path and fused=True's Triton step)
for DT in ${OPT_DTYPES//,/ }; do
  timeout "$OPT_LIMIT" $PY benchmarks/optimizer_step.py --device "$DEVICE" --size "$OPT_SIZE" --repeats 31 \
    --lr 0.01 --lean --dtype "$DT" || echo "optimizer step ($DT) FAILED or timed out"
done

PROJ=$($PY - "$DEVICE" "$TRIALS" "$SHORT" "$STEPS" <<'EOF'
import sys, time
import numpy as np
import torch
from certify import synthetic_problem
from experiments.paths import run_paths

device, trials, short, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
problems = [synthetic_problem(seed=t) for t in range(trials)]
W0 = torch.randn((trials, 10, 10), generator=torch.Generator().manual_seed(0), dtype=torch.float64).numpy()
di = np.tile(np.arange(trials), 3)
ps = ["1.75"] * trials + ["2"] * trials + ["3"] * trials
B = 3 * trials

def run(K):
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    r = run_paths(problems, data_index=di, p=ps, lr=[0.1] * B, steps=[K] * B, W0=W0[di], normalize=True,
                  device=device, records=64, spacing="log", progress=False)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return r, time.perf_counter() - t0

run(max(2, short // 100))                           # warm-up (CUDA context, kernels)
r, t = run(short)
proj = steps / short * t
print(f"{B} trajectories x {short} steps on {device}: {t:.2f}s -> {short / t:.0f} steps/s, projected {steps} steps: "
      f"{proj:.0f}s (status {dict(zip(*np.unique(r.status, return_counts=True)))})", file=sys.stderr)
print(f"{proj:.3f}")
EOF
)
if awk -v p="$PROJ" -v l="$FULL_LIMIT" 'BEGIN { exit !(p <= l) }'; then
  T0=$(date +%s.%N)
  $PY -m experiments.cli paths --trials "$TRIALS" --p 1.75,2,3 --steps "$STEPS" --lr 0.1 --normalize \
    --device "$DEVICE" --records "$RECORDS" --spacing log --progress off --overwrite -o "$OUT" ${WORKERS[@]+"${WORKERS[@]}"}
  T1=$(date +%s.%N)
  $PY - "$OUT" "$T0" "$T1" <<'EOF'
import json, sys
s = json.loads(open(sys.argv[1] + "/summary.json").read())
print(f"MEASURED {s['trajectories']} trajectories x {max(s['config']['steps'])} steps on {s['device']}: training "
      f"{s['timings_s']['train']:.1f}s, whole run {float(sys.argv[3]) - float(sys.argv[2]):.1f}s; notes {s['float_limits']}")
EOF
  H=""
  for h in 1000 10000 100000 1000000 10000000; do [ "$h" -le "$STEPS" ] && H="$H${H:+,}$h"; done
  [ -n "$H" ] || H=$STEPS
  $PY benchmarks/paths_horizons.py "$OUT" --horizons "$H" --json "$OUT/horizons.json"
else
  echo "full run skipped: projected ${PROJ}s exceeds --full-limit ${FULL_LIMIT}s"
fi
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
