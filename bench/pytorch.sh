#!/usr/bin/env bash
# The PyTorch adapter's cost, as ratios against untraced runs in the same
# invocation (never as timed assertions in tests): the training loop of
# bench/pytorch_train.py (a small MLP: tiny ops, the recorder's worst case;
# a small CNN) untraced, traced on the CPU, and traced on one simulated GPU
# (DEVTRACE_SIM_CUDA=1), interleaved; best of N loop times each. The
# simulation's own cost is the simulated over the traced CPU run.
# Targets: MLP traced/untraced <= 1.10, CNN <= 1.05.
# Usage: bench/pytorch.sh [BUILD_DIR] [ROUNDS]   (default: build 7)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
N=${2:-7}
PY=/usr/bin/python3
DT=$B/viewer/devtrace
"$PY" -c "import torch" 2>/dev/null || { echo "bench: needs Debian's python3-torch in $PY" >&2; exit 2; }
[ -x "$DT" ] || { echo "bench: build devtrace first ($DT)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
best() { sort -n | head -1; }
for w in "mlp 400" "cnn 40"; do
  set -- $w
  : >"$tmp/u"; : >"$tmp/t"; : >"$tmp/s"
  for i in $(seq "$N"); do
    "$PY" bench/pytorch_train.py "$1" "$2" >>"$tmp/u"
    DEVTRACE_QUIET=1 "$DT" run -o "$tmp/t.db" --overwrite -- "$PY" bench/pytorch_train.py "$1" "$2" >>"$tmp/t" 2>/dev/null
    DEVTRACE_QUIET=1 DEVTRACE_SIM_CUDA=1 "$DT" run -o "$tmp/s.db" --overwrite -- "$PY" bench/pytorch_train.py "$1" "$2" \
      >>"$tmp/s" 2>/dev/null
  done
  u=$(best <"$tmp/u"); t=$(best <"$tmp/t"); s=$(best <"$tmp/s")
  ev=$(sqlite3 "$tmp/t.db" "select value from meta where key='events_recorded'" 2>/dev/null || echo "?")
  printf '%s (%s steps, best of %s): untraced %.3f s, traced %.3f s (%.3fx, %s events), on a simulated GPU %.3f s (%.3fx; the simulation itself %.3fx)\n' \
    "$1" "$2" "$N" "$u" "$t" "$(echo "$t / $u" | bc -l)" "$ev" "$s" "$(echo "$s / $u" | bc -l)" "$(echo "$s / $t" | bc -l)"
done
