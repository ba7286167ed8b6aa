#!/usr/bin/env bash
# Installs the Debian packages devtrace needs, if any is missing (uses sudo
# when not root). Without arguments, what building and using devtrace needs
# (scripts/quickstart.sh): compilers and CMake, SQLite's library, libunwind
# (opened at run time for native stacks), elfutils' libdw (the viewer
# symbolizes stacks with libdwfl), libmd (SHA-256 of a program's source for
# devtrace fix), python3 with its headers (the PyTorch
# adapter's C extension) and python3-venv (scripts/torch2-venv.sh makes the
# venv that PyTorch 2 is installed into with pip, where no python3 imports
# torch: scripts/quickstart.sh; always for scripts/test.sh). With --tests, also what the test suite needs
# (scripts/test.sh): Check, the sqlite3 shell, bc, Debian's python3-torch
# (PyTorch 1.13, CPU: the adapter's tests), libtorch-dev (the libtorch
# observer and its tests), chromium (the HTML report test opens the page in
# headless Chromium), and clang with its runtime libraries (libFuzzer and the
# sanitizers: scripts/fuzz.sh). The CUDA toolkit is optional and not
# installed here: when /usr/local/cuda exists, the build finds it.
set -euo pipefail
pkgs=(build-essential cmake pkg-config libsqlite3-dev libunwind8 libdw-dev libmd-dev python3 python3-dev python3-venv)
case "${1:-}" in
  "") ;;
  --tests) pkgs+=(check sqlite3 bc python3-torch libtorch-dev chromium clang libclang-rt-14-dev python3-build python3-setuptools python3-wheel python3-ipython jupyter-nbconvert python3-ipykernel lintian) ;;
  *) echo "usage: scripts/install-deps.sh [--tests]" >&2; exit 2 ;;
esac
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "devtrace: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
