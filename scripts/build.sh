#!/usr/bin/env bash
# Builds the npm package into dist/: the wasm core (opt-level s, then
# wasm-opt -Oz), its bindings for Node (CommonJS, loads synchronously) and
# for the web (an ES module with init()), and the entry points in js/.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
need_wasm
cargo build --quiet -p localdp --profile wasm --target wasm32-unknown-unknown --lib
wasm=target/wasm32-unknown-unknown/wasm/localdp.wasm
rm -rf dist
for target in nodejs web; do
  out=dist/$([ $target = nodejs ] && echo node || echo web)
  wasm-bindgen --target $target --out-dir "$out" --out-name localdp "$wasm"
done
# The two bindgen runs emit the same wasm; optimize it once.
cmp -s dist/node/localdp_bg.wasm dist/web/localdp_bg.wasm || { echo "build: node and web wasm differ" >&2; exit 1; }
node_modules/.bin/wasm-opt -Oz dist/web/localdp_bg.wasm -o dist/web/localdp_bg.wasm
cp dist/web/localdp_bg.wasm dist/node/localdp_bg.wasm
node scripts/types.mjs dist/node/localdp.d.ts dist/web/localdp.d.ts
cp -r js/. dist/
raw=$(wc -c < dist/web/localdp_bg.wasm)
gz=$(gzip -9c dist/web/localdp_bg.wasm | wc -c)
echo "localdp.wasm: $raw bytes raw, $gz bytes gzipped"
