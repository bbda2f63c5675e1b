# Sourced on the GPU machine from the project's root (copied to .bun-kit/enter.sh by
# scripts/bun-kit.sh): unpacks the kit's Bun into /tmp, puts it first on PATH (and in $BUN, which
# test/run.ts reads), and links node_modules unless the tree already has one (.gpu-kit's serves
# as well). Prints what it found.
_kit="$(pwd)/.bun-kit"
_dest=/tmp/bun-kit
if [ ! -x "$_dest/bin/bun" ] || [ "$(cat "$_dest/stamp" 2>/dev/null)" != "$(cat "$_kit/bun.stamp")" ]; then
  mkdir -p "$_dest/bin"
  xz -dc "$_kit/bun.xz" > "$_dest/bin/bun.part" && chmod +x "$_dest/bin/bun.part" && mv "$_dest/bin/bun.part" "$_dest/bin/bun"
  cp "$_kit/bun.stamp" "$_dest/stamp"
fi
export PATH="$_dest/bin:$PATH" BUN="$_dest/bin/bun"
if [ ! -e node_modules ]; then
  rm -rf "$_dest/modules" && mkdir -p "$_dest/modules"
  tar -C "$_dest/modules" -xJf "$_kit/node_modules.tar.xz" && ln -s "$_dest/modules/node_modules" node_modules
fi
_gpu=$(nvidia-smi -L 2>/dev/null | head -1)
echo "bun $(bun --revision 2>&1); node_modules -> $(readlink node_modules || echo 'a folder'); ${_gpu:-no nvidia-smi}"
unset _kit _dest _gpu
