# Sourced on the GPU machine from the project's root (copied to .bun-kit/enter.sh by
# scripts/bun-kit.sh): unpacks the kit's Bun and node_modules into /tmp, puts bun first on PATH
# (and in $BUN, which test/run.ts reads) and the modules on NODE_PATH, which Bun searches after
# any node_modules in the tree: the tree itself is not touched, so .gpu-kit's node_modules (for
# Node) keeps working beside this. Prints what it found.
_kit="$(pwd)/.bun-kit"
_dest=/tmp/bun-kit
if [ ! -x "$_dest/bin/bun" ] || [ ! -d "$_dest/modules/node_modules" ] || [ "$(cat "$_dest/stamp" 2>/dev/null)" != "$(cat "$_kit/bun.stamp" "$_kit/modules.stamp")" ]; then
  rm -rf "$_dest" && mkdir -p "$_dest/bin" "$_dest/modules"
  xz -dc "$_kit/bun.xz" > "$_dest/bin/bun" && chmod +x "$_dest/bin/bun"
  tar -C "$_dest/modules" -xJf "$_kit/node_modules.tar.xz"
  cat "$_kit/bun.stamp" "$_kit/modules.stamp" > "$_dest/stamp"
fi
export PATH="$_dest/bin:$PATH" BUN="$_dest/bin/bun" NODE_PATH="$_dest/modules/node_modules${NODE_PATH:+:$NODE_PATH}"
_gpu=$(nvidia-smi -L 2>/dev/null | head -1)
echo "bun $(bun --revision 2>&1); modules: $([ -e node_modules ] && echo "./node_modules, then $_dest/modules" || echo "$_dest/modules (NODE_PATH)"); ${_gpu:-no nvidia-smi}"
unset _kit _dest _gpu
