#!/usr/bin/env bash
# Prints the absolute path of a working Bun of the version pinned in package.json's
# devDependencies (installed by `npm ci` from the npm registry), or fails saying why.
#
#   BUN=$(bash scripts/bun.sh) && "$BUN" test/run.ts cpu
#
# Why not just node_modules/.bin/bun: the `bun` package's bin/bun.exe is a placeholder that its
# postinstall script replaces with the real binary from the platform package
# (@oven/bun-linux-x64), and npm 11 skips install scripts it was not told to allow. So: the
# main package's binary if it is real, else the platform package's, else the package's own
# install script, run here explicitly (it links the binary, fetching the platform package if
# npm left it out), and the same checks again.
set -euo pipefail
cd "$(dirname "$0")/.."
want=$(node -p "require('./package.json').devDependencies.bun")
[ -d node_modules/bun ] || { echo "scripts/bun.sh: node_modules/bun is missing: run npm ci first" >&2; exit 1; }

find_bun() {
  local c
  for c in node_modules/bun/bin/bun.exe node_modules/@oven/bun-linux-x64/bin/bun \
           node_modules/@oven/bun-linux-x64-baseline/bin/bun node_modules/@oven/bun-linux-aarch64/bin/bun; do
    # only ELF files are run: the placeholder is text, which a shell would try to interpret
    if [ "$(head -c 4 "$c" 2>/dev/null | tr -d '\0')" = $'\x7fELF' ] && [ "$("$c" --version 2>/dev/null || true)" = "$want" ]; then
      echo "$PWD/$c"
      return 0
    fi
  done
  return 1
}

find_bun && exit 0
echo "scripts/bun.sh: no working bun $want in node_modules; running the bun package's install script" >&2
(cd node_modules/bun && node install.js) >&2 || true
find_bun && exit 0
echo "scripts/bun.sh: still no working bun $want (node_modules/bun/bin/bun.exe: $(head -c 60 node_modules/bun/bin/bun.exe | tr -c '[:print:]' '?'))" >&2
exit 1
