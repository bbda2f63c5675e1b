#!/usr/bin/env bash
# Caches what the CUDA ABI suite (test/abi/cuda-*.test.ts) checks our declarations against on a
# machine without an NVIDIA GPU: the real driver library (libcuda.so.1, from Debian non-free
# libcuda1), libcublas.so.12 and the cuBLAS headers (from nvidia-cuda-dev; only the headers are
# kept of its ~900 MB). cuDNN is not in any reachable package (Debian's nvidia-cudnn is an
# installer that downloads from NVIDIA), so its checks stay skipped here.
# Prints the cache folder on stdout. Fails loudly on any download error.
#
#   ROCM_TENSOR_CACHE  cache folder (default ~/.cache/rocm-tensor)
set -euo pipefail
cache=${ROCM_TENSOR_CACHE:-$HOME/.cache/rocm-tensor}
dest=$cache/cuda-abi
apt=$cache/cuda-apt
log() { echo "abi-cuda: $*" >&2; }
mkdir -p "$cache"
exec 9>"$cache/.cuda-lock"
flock 9
if [ -f "$dest/.done" ]; then echo "$dest"; exit 0; fi
# A private apt state, so the machine's own sources (Debian 12 main only) stay untouched.
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs" "$dest/lib" "$dest/include"
echo 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian sid non-free' >"$apt/sources.list"
opts=(-q -o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
  -o Acquire::Check-Valid-Until=false -o APT::Sandbox::User=root)
log "apt-get update (sid non-free)"
apt-get "${opts[@]}" update >&2
cd "$apt/debs"
log "downloading libcuda1 libcublas12 nvidia-cuda-dev"
apt-get "${opts[@]}" download libcuda1 libcublas12 nvidia-cuda-dev >&2
x=$(mktemp -d)
for d in libcuda1_*.deb libcublas12_*.deb; do dpkg-deb -x "$d" "$x"; done
# Real files, not the symlink chain: the suite reads their dynamic symbol tables.
cp -L "$(find "$x" -name 'libcuda.so.1' | head -1)" "$dest/lib/libcuda.so.1"
cp -L "$(find "$x" -name 'libcublas.so.12' | head -1)" "$dest/lib/libcublas.so.12"
rm -rf "$x"
x=$(mktemp -d)
dpkg-deb --fsys-tarfile nvidia-cuda-dev_*.deb | tar -x -C "$x" --wildcards '*/cublas*.h'
find "$x" -name 'cublas*.h' -exec cp {} "$dest/include/" \;
rm -rf "$x"
[ -f "$dest/include/cublas_api.h" ] || { log "cublas_api.h not found in nvidia-cuda-dev"; exit 1; }
rm -f "$apt"/debs/*.deb
find "$dest" -type f >&2
touch "$dest/.done"
echo "$dest"
