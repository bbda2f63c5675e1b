#!/usr/bin/env bash
# Rebuilds kernels/ from hip-src/: one raw AMD code object per source and arch, PTX for
# compute_80, and kernels/manifest.json (scripts/build-kernels.ts does the work).
# Compiler: $KERNEL_CLANG if set; else the system ROCm's clang (/opt/rocm/llvm/bin/clang++,
# $ROCM_PATH first); else clang 21 in the cached Debian-unstable root of scripts/rocm-root.sh
# (built on first use; needs root for chroot).
#   KERNEL_JOBS=N   parallel compiles        KERNEL_ONLY=a.hip,b.hip   rebuild only these
#   KERNEL_NVCC=none   skip the PTX    KERNEL_AMD=none   skip the AMD objects (nvcc only)
#   (a skipped vendor keeps its objects of sources whose text is unchanged)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
if [ -z "${KERNEL_CLANG:-}" ]; then
  for r in "${ROCM_PATH:-}" /opt/rocm; do
    if [ -n "$r" ] && [ -x "$r/llvm/bin/clang++" ]; then
      export KERNEL_CLANG="$r/llvm/bin/clang++" KERNEL_CHROOT=""
      break
    fi
  done
fi
if [ -z "${KERNEL_CLANG:-}" ] && [ "${KERNEL_AMD:-}" != none ]; then
  root=$("$here/rocm-root.sh")
  export KERNEL_CLANG=clang++-21 KERNEL_CHROOT="$root"
fi
# one build at a time on this machine: concurrent builds would interleave kernels/manifest.json
exec 9>"${TMPDIR:-/tmp}/rocm-tensor-build-kernels.lock"
flock 9
# hipcc-style platform guess must not pick NVIDIA because nvcc is on PATH
export HIP_PLATFORM=amd
exec npx tsx "$here/build-kernels.ts"
