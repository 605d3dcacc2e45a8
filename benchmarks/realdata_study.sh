#!/usr/bin/env bash
# The real-data verification study (issue 12 item 4): `mdcert study realdata --quick` and the default
# run, each in a fresh process, with the machine's load before and after (as uptime prints it) and
# /usr/bin/time's wall and CPU. Results go to OUT (default: a new temporary directory); the tables
# of benchmarks/README.md are the report.md files written there.
set -euo pipefail
out=${1:-$(mktemp -d)}
for run in quick default; do
  dir="$out/$run"
  flag=$([ "$run" = quick ] && echo --quick || true)
  echo "== mdcert study realdata $flag -o $dir"
  uptime
  /usr/bin/time -f "wall %e s, user %U s, sys %S s (main process), max RSS %M KB" mdcert study realdata $flag -o "$dir"
  uptime
done
echo "reports: $out/quick/report.md $out/default/report.md"
