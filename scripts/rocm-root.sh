#!/usr/bin/env bash
# Builds (once) and caches a Debian-unstable root holding the real ROCm 6.4 headers (and RCCL's),
# the ROCm shared objects, and clang 21 with the ROCm device libraries. The ABI conformance suite and
# scripts/build-hsaco.sh both use it; a plain Debian 12 machine has neither.
# Prints the root's path on stdout. Fails loudly on any download error (never skips).
#
#   ROCM_TENSOR_CACHE  cache folder (default ~/.cache/rocm-tensor)
#   ROCM_ROOT_PARTS    "headers" (default: headers + compiler) or "all" (adds the shared objects
#                      for symbol checks and an installed libamdhip64-6 for the no-device check)
set -euo pipefail
cache=${ROCM_TENSOR_CACHE:-$HOME/.cache/rocm-tensor}
root=$cache/sid-root
parts=${ROCM_ROOT_PARTS:-headers}
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
apt_opts=(-o Acquire::Check-Valid-Until=false -o APT::Sandbox::User=root -o Dpkg::Use-Pty=0 -q)
log() { echo "rocm-root: $*" >&2; }
if [ ! -f "$root/.stage-base" ]; then
  command -v debootstrap >/dev/null || { log "installing debootstrap"; apt-get -qq update >&2 && apt-get -qq install -y debootstrap >&2; }
  rm -rf "$root"
  log "debootstrap sid (clang 21, ROCm device libraries) into $root"
  debootstrap --variant=minbase --include=clang-21,lld-21,llvm-21,rocm-device-libs-21 sid "$root" http://deb.debian.org/debian >"$cache/debootstrap.log" 2>&1 \
    || { tail -20 "$cache/debootstrap.log" >&2; log "debootstrap failed"; exit 1; }
  touch "$root/.stage-base"
fi
if [ ! -f "$root/.stage-headers" ]; then
  log "installing hipcc, libamdhip64-dev; unpacking rocBLAS and MIOpen headers"
  chroot "$root" apt-get "${apt_opts[@]}" update >&2
  chroot "$root" apt-get "${apt_opts[@]}" install -y --no-install-recommends hipcc libamdhip64-dev >&2
  chroot "$root" sh -ec 'mkdir -p /tmp/debs && cd /tmp/debs && apt-get -o Acquire::Check-Valid-Until=false -o APT::Sandbox::User=root -q download libmiopen-dev librocblas-dev && for d in *.deb; do dpkg-deb -x $d /; done && rm -f *.deb' >&2
  touch "$root/.stage-headers"
fi
if [ ! -f "$root/.stage-rccl-headers" ]; then
  # RCCL (the collectives library, NCCL's API): its header, unpacked like the rocBLAS one
  log "unpacking the RCCL header (librccl-dev)"
  chroot "$root" sh -ec 'mkdir -p /tmp/debs && cd /tmp/debs && apt-get -o Acquire::Check-Valid-Until=false -o APT::Sandbox::User=root -q download librccl-dev && for d in librccl-dev*.deb; do dpkg-deb -x $d /; done && rm -f librccl-dev*.deb' >&2
  touch "$root/.stage-rccl-headers"
fi
if [ "$parts" = all ] && [ ! -f "$root/.stage-libs" ]; then
  # Only the dynamic symbol tables matter: extract the .so files, not rocBLAS's 4 GB of kernels.
  log "downloading libamdhip64-6, libmiopen1, librocblas4 (symbol tables)"
  chroot "$root" sh -ec 'mkdir -p /tmp/libdebs && cd /tmp/libdebs && apt-get -o Acquire::Check-Valid-Until=false -o APT::Sandbox::User=root -q download libamdhip64-6 libmiopen1 librocblas4 && mkdir -p /opt/rocm-sos && for d in *.deb; do dpkg-deb --fsys-tarfile $d | tar -x -C /opt/rocm-sos --wildcards "*.so*"; done && rm -f *.deb' >&2
  touch "$root/.stage-libs"
fi
if [ "$parts" = all ] && [ ! -f "$root/.stage-rccl-lib" ]; then
  log "downloading librccl1 (symbol table)"
  chroot "$root" sh -ec 'mkdir -p /tmp/libdebs && cd /tmp/libdebs && apt-get -o Acquire::Check-Valid-Until=false -o APT::Sandbox::User=root -q download librccl1 && mkdir -p /opt/rocm-sos && for d in librccl1*.deb; do dpkg-deb --fsys-tarfile $d | tar -x -C /opt/rocm-sos --wildcards "*.so*"; done && rm -f librccl1*.deb' >&2
  touch "$root/.stage-rccl-lib"
fi
if [ "$parts" = all ] && [ ! -f "$root/.stage-runtime" ]; then
  # The no-device check dlopens the real libamdhip64 inside the root, so it needs the runtime
  # installed with its dependencies (HSA runtime, comgr, libdrm, libnuma...), not just extracted.
  log "installing libamdhip64-6 and its dependencies"
  chroot "$root" apt-get "${apt_opts[@]}" install -y --no-install-recommends libamdhip64-6 >&2
  touch "$root/.stage-runtime"
fi
echo "$root"
