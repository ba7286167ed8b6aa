#!/usr/bin/env bash
# Makes (or brings up to date) the virtual environment with PyTorch 2.x that the test suite,
# the benchmark and the quickstart run PyTorch 2 in: .venv-torch2/ in the checkout (git-ignored;
# DEVTRACE_TORCH2_VENV names another), from scripts/requirements-torch2.txt with pip. Prints the
# venv's python as its last line. --minimal installs only that file's torch and numpy lines (the
# quickstart; torch 2.13.0's CPU wheel comes from the machine's own wheel directory); a later full
# run adds the rest. Nothing is installed when the venv already holds what the file asked for last time.
set -euo pipefail
cd "$(dirname "$0")/.."
req=scripts/requirements-torch2.txt
venv=${DEVTRACE_TORCH2_VENV:-.venv-torch2}
mode=full
case "${1:-}" in
  "") ;;
  --minimal) mode=minimal ;;
  *) echo "usage: scripts/torch2-venv.sh [--minimal]" >&2; exit 2 ;;
esac

# The interpreter the venv is made from: the python3 first on PATH when it is 3.10+ with venv
# and ensurepip (a pyenv build, or Debian's with python3-venv), else Debian's.
base=""
for cand in python3 /usr/bin/python3; do
  if command -v "$cand" >/dev/null &&
    "$cand" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
    base=$(command -v "$cand")
    break
  fi
done
[ -n "$base" ] || {
  echo "torch2-venv: no python3 3.10+ with venv here (Debian: apt-get install python3-venv)" >&2
  exit 1
}

if [ ! -x "$venv/bin/python" ]; then
  echo "torch2-venv: making $venv from $base ($("$base" -V))" >&2
  "$base" -m venv "$venv"
fi
py=$venv/bin/python
if [ "$mode" = minimal ]; then
  reqs=$(grep -E '^(torch|numpy)([=<>~ ]|$)' "$req")
else
  reqs=$(grep -vE '^\s*(#|$)' "$req")
fi
# The stamp: what was installed last (the minimal lines, or the whole file); a venv that has the
# whole file also has the minimal lines.
stamp=$venv/.devtrace-requirements
want=$(printf '%s\n' "$reqs" | sha256sum | cut -d' ' -f1)
full=$(grep -vE '^\s*(#|$)' "$req" | sha256sum | cut -d' ' -f1)
have=$(cat "$stamp" 2>/dev/null || true)
if [ "$have" != "$want" ] && [ "$have" != "$full" ] || ! "$py" -c 'import torch' 2>/dev/null; then
  echo "torch2-venv: pip install into $venv: $(printf '%s ' $reqs)" >&2
  start=$(date +%s)
  # (pip's warnings about the machine's local index folders that lack a package are left out)
  rc=0
  # shellcheck disable=SC2086 # one argument per requirement
  "$py" -m pip install -q $reqs >"$venv/pip.log" 2>&1 || rc=$?
  grep -v "^WARNING: Location .* is ignored" "$venv/pip.log" >&2 || true
  [ "$rc" -eq 0 ] || { echo "torch2-venv: pip install failed ($venv/pip.log)" >&2; exit 1; }
  # every package imports (a module named as its package): a broken pair fails here, not in a test
  mods=$(printf '%s\n' "$reqs" | sed -E 's/[=<>~! ;\[].*//; s/-/_/g' | paste -sd,)
  "$py" -c "import $mods" >"$venv/import.log" 2>&1 ||
    { tail -n 5 "$venv/import.log" >&2; echo "torch2-venv: $py cannot import $mods" >&2; exit 1; }
  echo "$want" >"$stamp"
  echo "torch2-venv: installed in $(($(date +%s) - start)) s" >&2
fi
echo "torch2-venv: $("$py" -c 'import torch; print("torch", torch.__version__)') in $py" >&2
echo "$(cd "$venv" && pwd)/bin/python"
