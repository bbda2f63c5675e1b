#!/usr/bin/env bash
# Packs Bun (the binary of the pinned `bun` devDependency) and node_modules into .bun-kit/, for
# running the suites and benchmarks under Bun on an x86-64 Linux GPU machine that has neither
# Node.js nor Bun:
#
#   bash scripts/bun-kit.sh                  # here, after npm ci (the first run takes minutes)
#   # carry [".bun-kit"]; then on the GPU machine, from the project's root:
#   source .bun-kit/enter.sh && bun test/run.ts gpu
#
# node_modules goes in without what only Node, type checks or publishing need (tsx and esbuild:
# Bun runs TypeScript itself) and without Bun itself; enter.sh hands it to Bun through
# NODE_PATH, so a node_modules in the tree (.gpu-kit's, for Node) is left alone and wins. The
# kit is checked against the 40 MiB budget of the GPU kits, and the kit plus the tracked files
# against the 64 MiB a device call may carry.
set -euo pipefail
cd "$(dirname "$0")/.."
kit=.bun-kit
budget_mib=${BUN_KIT_BUDGET_MIB:-40}
SKIP='typescript|@typescript|@types|bun|@oven|tsx|esbuild|@esbuild'
bun=$(bash scripts/bun.sh)
mkdir -p "$kit"
stamp="$("$bun" --revision) $(stat -c %s "$bun")"
if [ ! -f "$kit/bun.xz" ] || [ "$(cat "$kit/bun.stamp" 2>/dev/null)" != "$stamp" ]; then
  echo "packing bun $("$bun" --revision) ($(($(stat -c %s "$bun") >> 20)) MiB; xz -9e takes a few minutes) ..."
  # the x86 branch filter makes machine code compress about 3% smaller
  filter=(); [ "$(uname -m)" = x86_64 ] && filter=(--x86)
  xz -T0 "${filter[@]}" --lzma2=preset=9e,dict=128MiB -c "$bun" > "$kit/bun.xz.part"
  mv "$kit/bun.xz.part" "$kit/bun.xz"
  echo "$stamp" > "$kit/bun.stamp"
fi
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/node_modules"
for d in node_modules/* node_modules/.bin node_modules/.package-lock.json; do
  [ -e "$d" ] || continue
  [[ "${d#node_modules/}" =~ ^($SKIP)$ ]] && continue
  cp -a "$d" "$stage/node_modules/"
done
rm -rf "$stage/node_modules/.bin"
tar -C "$stage" -cf - node_modules | xz -T0 -6 > "$kit/node_modules.tar.xz"
# enter.sh unpacks again when either part changed
sha256sum "$kit/node_modules.tar.xz" | cut -c1-16 > "$kit/modules.stamp"
cp scripts/bun-kit-enter.sh "$kit/enter.sh"
size=$(du -sm "$kit" | cut -f1)
tracked=$(git ls-files -z | xargs -0 du -cm 2>/dev/null | tail -1 | cut -f1)
echo "kit: ${size} MiB in $kit/ (bun.xz $(($(stat -c %s "$kit/bun.xz") >> 20)) MiB, node_modules.tar.xz $(($(stat -c %s "$kit/node_modules.tar.xz") >> 10)) KiB; budget ${budget_mib} MiB); tracked files: ${tracked} MiB"
echo "carry: [\"$kit\"]   then on the GPU machine: source $kit/enter.sh && bun test/run.ts gpu"
if [ "$size" -gt "$budget_mib" ]; then echo "bun kit over budget (BUN_KIT_BUDGET_MIB)" >&2; exit 1; fi
if [ $((size + tracked)) -gt 64 ]; then echo "kit + tracked files over the 64 MiB a device call carries" >&2; exit 1; fi
