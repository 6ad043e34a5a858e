#!/usr/bin/env bash
# `npm run pack [-- DEST]`: the npm package's tarball, in DEST (default: the
# repository). The package carries its own README (js/README.md: the JS API
# and the worker and extension recipes), and npm always packs the README of
# the directory it packs, so this packs a staging copy, target/npm-package/,
# holding package.json, what its "files" lists, and js/README.md as
# README.md. Prints the tarball's path. Expects dist/ built.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p "${1:-.}"
dest=$(realpath "${1:-.}")
[ -f dist/web/localdp_bg.wasm ] || { echo "pack: dist/ is not built (npm run build)" >&2; exit 1; }
stage=target/npm-package
rm -rf "$stage" && mkdir -p "$stage"
cp package.json "$stage/"
cp js/README.md "$stage/README.md"
node -e 'for (const f of require("./package.json").files) console.log(f)' | while read -r entry; do
  mkdir -p "$stage/$(dirname "$entry")"
  cp -r "$entry" "$stage/$entry"
done
tarball=$(cd "$stage" && LOCALDP_PACK_STAGE=1 npm pack --silent --pack-destination "$dest" | tail -n 1)
echo "$dest/$tarball"
