#!/usr/bin/env bash
# One prepared device check for the transformer studies (issue 15 item 8): the paper-width sentiment
# models (width 384, 512 positions, dropout 0.2; sizes 3, 4, 6 = blocks = heads) on a CUDA machine,
# recording the time per epoch of every optimizer. Run from the repository root:
#   bash benchmarks/studies_gpu.sh [OUT]          # OUT default: studies-gpu (a study directory; resumable)
# Knobs (environment): DEVICE (cuda), SIZES (3,4,6), SEEDS (5), EPOCHS (4), LIMIT_S (3000: the study's
# time limit), EXTRA (more mdcert study options). The same code path runs on a CPU at tiny size:
#   DEVICE=cpu SIZES=3 SEEDS=2 EPOCHS=1 EXTRA="--quick --width 6 --train-limit 100 --test-limit 40 --finetune-steps 1" \
#     bash benchmarks/studies_gpu.sh /tmp/studies-gpu-smoke        (tests/benchmarks/test_studies_gpu.py)
# It prints the device, runs the study, then writes OUT/epoch_times.md (median seconds per epoch per size
# and optimizer, from the run records) and prints it; paste that into benchmarks/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
OUT=${1:-studies-gpu}
DEVICE=${DEVICE:-cuda}
SIZES=${SIZES:-3,4,6}
SEEDS=${SEEDS:-5}
EPOCHS=${EPOCHS:-4}
LIMIT_S=${LIMIT_S:-3000}
EXTRA=${EXTRA:-}

$PY - <<'PYEOF'
import os, torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
if torch.cuda.is_available():
    print("device:", torch.cuda.get_device_name(0))
print("load", os.getloadavg())
PYEOF

start=$(date +%s)
# shellcheck disable=SC2086
timeout "$LIMIT_S" $PY -m experiments.cli study sentiment --paper-width --size "$SIZES" --seeds "$SEEDS" \
  --epochs "$EPOCHS" --device "$DEVICE" --progress off $EXTRA -o "$OUT" || echo "study exited with $? (timeout: 124)"
echo "wall seconds: $(( $(date +%s) - start ))"

$PY - "$OUT" <<'PYEOF'
import json, statistics, sys
from pathlib import Path
root = Path(sys.argv[1])
rows = {}
for f in sorted((root / "runs").glob("*.json")):
    rec = json.loads(f.read_text())
    c = rec["config"]
    key = (c["size"], c["model"]["width"], c["optimizer"])
    rows.setdefault(key, []).extend(rec["result"]["curves"]["epoch_seconds"])
lines = ["| size | width | optimizer | epochs timed | median s/epoch | min s/epoch |", "|---|---|---|---|---|---|"]
for (size, width, opt), secs in sorted(rows.items()):
    lines.append(f"| {size} | {width} | {opt} | {len(secs)} | {statistics.median(secs):.2f} | {min(secs):.2f} |")
if not rows:
    lines.append("| (no run records: the study wrote none, see its message above) | | | | | |")
text = "\n".join(lines) + "\n"
root.mkdir(parents=True, exist_ok=True)
(root / "epoch_times.md").write_text(text)
print(text)
PYEOF
