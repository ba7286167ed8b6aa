#!/usr/bin/env bash
# The .deb end to end: a build configured for /usr (GNUInstallDirs' multiarch
# libdir), `cpack -G DEB`, then the package's control data and files (depends
# on libunwind8, which the tracer opens with dlopen; libraries in
# /usr/lib/<multiarch>; copyright, changelog, compressed manual page), lintian
# with no error (when installed), an install into a private dpkg root
# (nothing on this machine changes: its ldconfig call goes to a stand-in),
# devtrace run + report of a PyTorch example from there, python3 -m devtrace
# and the in-process API from there, and a purge that
# leaves nothing behind.
#   check_deb.sh SOURCE_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/devtrace-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v dpkg-deb >/dev/null || fail "no dpkg-deb: the .deb is built and checked on Debian"

# Debian's own cmake and cpack (3.25, from scripts/install-deps.sh) when a newer one is first on PATH (pip's
# CMake 4 on these machines): CMake 4's CPack gives a CONTROL_EXTRA file (our ldconfig triggers) a script's
# 0755 under CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION, which lintian refuses
cmake=cmake cpack=cpack
[ -x /usr/bin/cmake ] && [ -x /usr/bin/cpack ] && cmake=/usr/bin/cmake cpack=/usr/bin/cpack
$cmake -S "$src" -B "$work/build" -DCMAKE_INSTALL_PREFIX=/usr -DDEVTRACE_TESTS=OFF -DDEVTRACE_LIBTORCH=OFF \
  -DDEVTRACE_CUDA=OFF >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "configure"; }
$cmake --build "$work/build" -j "${CMAKE_BUILD_PARALLEL_LEVEL:-2}" --target dtrt devtrace devtrace-cli devtrace_torch_probes \
  >"$work/build.log" 2>&1 || { tail -30 "$work/build.log"; fail "build"; }
(cd "$work/build" && $cpack -G DEB >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; fail "cpack -G DEB"; }
deb=$(ls "$work"/build/devtrace_*.deb) || fail "no .deb: $(cat "$work/cpack.log")"

arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
depends=$(dpkg-deb -f "$deb" Depends)
for d in libunwind8 libsqlite3-0 libdw1 libc6; do
  echo "$depends" | grep -qE "(^|, )$d( |,|$)" || fail "Depends lacks $d: $depends"
done
dpkg-deb -c "$deb" | awk '{print $6}' | sed 's#^\./#/#' >"$work/files"
for f in /usr/bin/devtrace /usr/lib/$arch/libdtrt.so.0 /usr/lib/$arch/devtrace/libdevtrace.so \
  /usr/lib/$arch/devtrace/python/sitecustomize.py /usr/lib/$arch/pkgconfig/libdtrt.pc \
  /usr/lib/$arch/cmake/devtrace/devtraceConfig.cmake /usr/include/devtrace/probe.h \
  /usr/share/doc/devtrace/copyright /usr/share/doc/devtrace/changelog.gz /usr/share/man/man1/devtrace.1.gz \
  /usr/lib/python3/dist-packages/devtrace/__init__.py; do
  grep -qx "$f" "$work/files" || fail "$f not in the package"
done
! grep -E "^/usr/lib/[^/]+\.so|^/usr/lib/devtrace/" "$work/files" || fail "files outside the multiarch libdir (above)"
dpkg-deb -I "$deb" triggers | grep -qx "activate-noawait ldconfig" || fail "no ldconfig trigger"

if command -v lintian >/dev/null; then
  lintian "$deb" >"$work/lintian.log" 2>&1 || true
  ! grep -q "^E: " "$work/lintian.log" || { cat "$work/lintian.log"; fail "lintian reports errors"; }
  echo "lintian: no error ($(grep -c '^W: ' "$work/lintian.log" || true) warnings)"
else
  echo "lintian not installed: its check skipped (apt-get install lintian)"
fi

# install into a private root: dpkg's own database there, scripts run outside a chroot with a
# stand-in ldconfig that only notes the call
root=$work/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$work/bin"
touch "$root/var/lib/dpkg/status"
printf '#!/bin/sh\necho "ldconfig $*" >>"%s/ldconfig.log"\n' "$work" >"$work/bin/ldconfig"
chmod +x "$work/bin/ldconfig"
dpkg_root() { PATH="$work/bin:$PATH" dpkg --force-not-root --force-script-chrootless --root="$root" "$@"; }
dpkg_root --force-depends -i "$deb" >"$work/install.log" 2>&1 || { cat "$work/install.log"; fail "dpkg -i"; }
[ -x "$root/usr/bin/devtrace" ] || fail "dpkg -i installed no devtrace"
# pkg-config and CMake's package file answer with the multiarch libdir, relative to where they are
pc() { PKG_CONFIG_PATH="$root/usr/lib/$arch/pkgconfig" pkg-config "$@"; }
[ "$(realpath "$(pc --variable=libdir libdtrt)")" = "$root/usr/lib/$arch" ] || fail "libdtrt.pc: libdir $(pc --variable=libdir libdtrt)"
[ -e "$(pc --variable=includedir devtrace-probe)/devtrace/probe.h" ] || fail "devtrace-probe.pc: no probe.h in its includedir"
grep -q '"${PACKAGE_PREFIX_DIR}/lib/'"$arch"'/devtrace/libdevtrace.so"' "$root/usr/lib/$arch/cmake/devtrace/devtraceConfig.cmake" \
  || fail "devtraceConfig.cmake: devtrace_TRACER_LIBRARY not in the multiarch libdir"

if /usr/bin/python3 -c "import torch" 2>/dev/null; then
  cd "$work"
  set +e
  DEVTRACE_SIM_CUDA=2 "$root/usr/bin/devtrace" run -o deb.db -- /usr/bin/python3 \
    "$src/examples/pytorch/bug_batch_not_moved.py" >run.out 2>&1
  rc=$?
  set -e
  [ $rc -eq 1 ] || { cat run.out; fail "devtrace run from the package: exit $rc, not the program's 1"; }
  set +e
  "$root/usr/bin/devtrace" report deb.db >report.txt 2>&1
  rc=$?
  set -e
  [ $rc -eq 1 ] || { cat report.txt; fail "devtrace report: exit $rc, not 1 (a mismatch found)"; }
  grep -qE '"x" .*<- the odd one out' report.txt || { cat report.txt; fail "the package's adapter did not record the bug"; }
  # the package's Python side: python3 -m devtrace and the in-process API, with the command on PATH
  pyenv=(env "PATH=$root/usr/bin:/usr/bin:/bin" "PYTHONPATH=$root/usr/lib/python3/dist-packages" DEVTRACE_SIM_CUDA=2)
  set +e
  "${pyenv[@]}" /usr/bin/python3 -m devtrace run -o module.db "$src/examples/pytorch/bug_batch_not_moved.py" >module.out 2>&1
  rc=$?
  set -e
  [ $rc -eq 1 ] && [ -s module.db ] || { cat module.out; fail "python3 -m devtrace run from the package: exit $rc"; }
  "${pyenv[@]}" /usr/bin/python3 -c "
import devtrace
n = devtrace.native()
assert n.tracer.startswith('$root/usr/lib/$arch/devtrace/'), n
with devtrace.trace('api.db', report=False):
    import torch
    try:
        torch.ones(2) + torch.ones(2).to('cuda:0')
    except RuntimeError:
        pass
assert devtrace.mismatches('api.db') == 1
" >api.out 2>&1 || { cat api.out; fail "devtrace.trace() from the package"; }
fi

dpkg_root --purge devtrace >"$work/purge.log" 2>&1 || { cat "$work/purge.log"; fail "dpkg --purge"; }
left=$(cd "$root" && find . -mindepth 1 ! -path ./var ! -path ./var/lib ! -path './var/lib/dpkg*')
[ -z "$left" ] || fail "left behind after purge: $left"
! grep -q "^Package: devtrace$" "$root/var/lib/dpkg/status" || fail "devtrace still in dpkg's status after purge"
echo "deb: $(basename "$deb"), Depends: $depends; installed, used and purged in a private root"
