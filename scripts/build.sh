#!/usr/bin/env bash
# Builds the npm package into dist/: the wasm modules (wasm-pack, opt-level
# s, then wasm-opt -Oz), the full one (wasm/full, `localdp-wasm`: client and
# Aggregator) and the client's (wasm/client, `localdp-wasm-client`, over
# localdp-core alone; one of every family, and one per family for the web,
# client/web/families/FAMILY/, which `Client.open` loads by need), each with its bindings for Node
# (CommonJS, loads synchronously) and for the web (an ES module with
# init()), the JS Client (js/client.mjs, and a CommonJS copy of it) and the
# entry points in js/; the web entries' JS is bundled and minified (scripts/minify.mjs).
# Prints the sizes that tests/js/size-budget.json holds.
#   bash scripts/build.sh [OUT]   (default dist; another directory is a
#   build beside the package's, e.g. LOCALDP_WASM_ROUTE=stable's: setup.sh)
# Writes the route it took (setup.sh's wasm_compiler) to target/OUT.route,
# which the size test reads.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
out=${1:-dist}
rm -rf "$out"
# client.cjs's module.exports: client.mjs's exports, all functions.
client_exports=$(sed -n 's/^export function \([A-Za-z0-9_]*\).*/\1/p' js/client.mjs | paste -sd, - | sed 's/,/, /g')
[ "$(grep -c '^export ' js/client.mjs)" = "$(grep -c '^export function ' js/client.mjs)" ] || { echo "build: js/client.mjs exports only functions" >&2; exit 1; }

# The modules are compiled as setup.sh's wasm_compiler says, with its
# ship_flags.
wasm_compiler

# web_client DIR: the JS Client beside a web module's bindings in DIR.
web_client() {
  cp js/client.mjs js/client.d.mts js/storage.mjs js/storage.d.mts js/messages.mjs js/messages.d.mts "$1/"
}

# bindings TARGET DIR NAME CRATE [cargo args]: wasm-pack's bindings of the
# crate in directory CRATE for TARGET in OUT/DIR, as bindings.js (and .d.ts)
# beside NAME_bg.wasm (unoptimized),
# with the JS Client beside them (each directory is served on its own: the
# collector serves dist/web at /pkg/): client.mjs for the web, its CommonJS
# copy client.cjs (its exports become module.exports) for Node.
bindings() {
  local target=$1 dir=$out/$2 name=$3 crate=$4
  shift 4
  mkdir -p "$dir"
  wasm-pack --quiet build --mode no-install --no-pack --no-gitignore --profile wasm \
    --target "$target" --out-dir "$(cd "$dir" && pwd)" --out-name "$name" "$crate" "${ship_flags[@]}" "$@"
  mv "$dir/$name.js" "$dir/bindings.js"
  mv "$dir/$name.d.ts" "$dir/bindings.d.ts"
  if [ "$target" = web ]; then
    node scripts/init-guard.mjs "$dir/bindings.js"
    web_client "$dir"
  else
    { sed 's/^export function /function /' js/client.mjs; echo "module.exports = { $client_exports };"; } > "$dir/client.cjs"
    sed -e "s#'./storage.mjs'#'./storage.cjs'#g" -e "s#'./messages.mjs'#'./messages.cjs'#g" js/client.d.mts > "$dir/client.d.cts"
    { sed 's/^export function /function /' js/storage.mjs; echo 'module.exports = { indexedDBStorage, asyncStorage, chromeStorage };'; } > "$dir/storage.cjs"
    cp js/storage.d.mts "$dir/storage.d.cts"
    { sed 's/^export function /function /' js/messages.mjs; echo 'module.exports = { withMessage };'; } > "$dir/messages.cjs"
    cp js/messages.d.mts "$dir/messages.d.cts"
  fi
}

# optimize WASM: wasm-opt -Oz in place, run until it no longer shrinks it.
# --low-memory-unused: the module's stack comes first and grows down from
# 1 MB, its data lies above it, so nothing lives below address 1024 and
# wasm-opt may fold constants into offsets. --strip-producers: the
# toolchain's names and versions are nothing a page needs.
optimize() {
  node_modules/.bin/wasm-opt -Oz --low-memory-unused --converge --strip-producers "$1" -o "$1"
}

# no_fmt_or_js_sys WHAT [TARGET_DIR]: the client module cargo just built (its names still in) links
# no core::fmt and no float formatting or parsing (core's flt2dec, dec2flt):
# the device side writes text with text! (integers only) and takes a
# number's digits from JS (number_text). Checked where std is rebuilt: route
# stable's prebuilt std formats its panics. Nor js-sys, on every route: its
# closure shims would stay in the module's table (core/src/js.rs).
no_fmt_or_js_sys() {
  local wasm=${2:-target}/wasm32-unknown-unknown/wasm/localdp_wasm_client.wasm found
  if grep -a -q '6js_sys' "$wasm"; then
    echo "build: the client module of $1 links js-sys; declare the JS built-in in core/src/js.rs instead" >&2
    exit 1
  fi
  [ ${#build_std[@]} -gt 0 ] || return 0
  found=$({ grep -a -o -E '4core3fmt|3fmt9Formatter|7flt2dec|7dec2flt' "$wasm" || true; } | sort -u | tr '\n' ' ')
  if [ -n "$found" ]; then
    echo "build: the client module of $1 links core::fmt or float formatting ($found); twiggy paths on its names says from where" >&2
    exit 1
  fi
}

# module NODE_DIR WEB_DIR NAME CRATE [cargo args]: one wasm module's Node and web
# bindings; the two share one wasm, optimized once.
module() {
  local node=$1 web=$2 name=$3 crate=$4
  shift 4
  bindings nodejs "$node" "$name" "$crate" "$@"
  bindings web "$web" "$name" "$crate" "$@"
  cmp -s "$out/$node/${name}_bg.wasm" "$out/$web/${name}_bg.wasm" || { echo "build: node and web wasm differ" >&2; exit 1; }
  optimize "$out/$web/${name}_bg.wasm"
  node scripts/short-names.mjs "$out/$web/${name}_bg.wasm" "$out"/{"$node","$web"}/bindings.js
  cp "$out/$web/${name}_bg.wasm" "$out/$web/${name}_bg.wasm.d.ts" "$out/$node/"
}

# size FILE...: their bytes raw and gzip -9'd one by one, summed.
size() {
  local raw=0 gz=0 f
  for f in "$@"; do
    raw=$((raw + $(wc -c < "$f")))
    gz=$((gz + $(gzip -9c "$f" | wc -c)))
  done
  echo "$raw bytes raw, $gz bytes gzipped"
}
# The families, each a cargo feature of the client module and a module of
# its own that localdp/client/web loads for a config of that family alone
# (js/client/web/families.js); grr is the frequency family with GRR alone,
# for the page of a GRR metric (5.4 KB gzipped less than frequency's).
families=(grr frequency numeric rappor heavy distribution key_value marginals)
# What a page of the client loads from localdp/client/web: the entry's JS
# (with the bindings of the module of every family, whose wasm it fetches
# only on init()), and for FAMILY that family's bindings and wasm, or else
# the module of every family.
client_page() {
  local web=$out/client/web
  echo "$web"/{localdp.js,messages.mjs,bindings.js}
  if [ $# -gt 0 ]; then echo "$web/families/$1"/{bindings.js,localdp_client_bg.wasm}; else echo "$web/localdp_client_bg.wasm"; fi
}
# What a page loads from localdp/client/web/FAMILY, the family's own entry.
family_page() {
  echo "$out/client/web/families/$1"/{localdp.js,messages.mjs,bindings.js,localdp_client_bg.wasm}
}
client_sizes() {
  echo "client module (every family), localdp_client_bg.wasm: $(size "$out"/client/web/localdp_client_bg.wasm)"
  # shellcheck disable=SC2046
  echo "what localdp/client/web loads after init() (every family): $(size $(client_page))"
  local family
  for family in "${families[@]}"; do
    # shellcheck disable=SC2046
    echo "a $family metric: localdp/client/web (Client.open) loads $(size $(client_page "$family")); localdp/client/web/$family $(size $(family_page "$family"))"
  done
}

# The full module (client and Aggregator): `localdp`, `localdp/web`.
module node web localdp wasm/full
# The client module (randomization, memos, the ledger: localdp-core alone):
# `localdp/client`, `localdp/client/web`.
module client/node client/web localdp_client wasm/client
no_fmt_or_js_sys "every family"
# Each family's client module for the web, an entry of its own
# (`localdp/client/web/FAMILY`: js/family.js over its bindings), which
# `localdp/client/web` imports for a config of that family.
# GRR's module has no wasm-bindgen (wasm/client/src/raw.rs): its bindings
# are js/raw.mjs, written by hand, and it is built with raw_flags.
for family in "${families[@]}"; do
  dir=$out/client/web/families/$family
  if [ "$family" = grr ]; then
    mkdir -p "$dir"
    cargo build --quiet --profile wasm --target wasm32-unknown-unknown -p localdp-wasm-client \
      --no-default-features --features "heap,$family" "${raw_flags[@]}"
    no_fmt_or_js_sys "$family" target/raw
    cp target/raw/wasm32-unknown-unknown/wasm/localdp_wasm_client.wasm "$dir/localdp_client_bg.wasm"
    cp js/raw.mjs "$dir/bindings.js"
    # The other modules' declarations, but for the exports init() resolves to (src/raw.rs's).
    node -e '
      const fs = require("fs");
      const [from, to] = process.argv.slice(1);
      const exports = "export interface InitOutput {\n    readonly memory: WebAssembly.Memory;\n    readonly [name: string]: WebAssembly.ExportValue;\n}";
      const text = fs.readFileSync(from, "utf8").replace(/export interface InitOutput \{[^}]*\}/, () => exports);
      if (!text.includes(exports)) throw new Error("build: no InitOutput in " + from);
      fs.writeFileSync(to, text);' "$out/client/web/bindings.d.ts" "$dir/bindings.d.ts"
    web_client "$dir"
    optimize "$dir/localdp_client_bg.wasm"
    # js/raw.mjs gives the module the CSPRNG and a number's text, nothing else.
    node -e '
      const imports = WebAssembly.Module.imports(new WebAssembly.Module(require("fs").readFileSync(process.argv[1])));
      const names = imports.map((i) => `${i.module}.${i.name}`).sort().join(" ");
      if (names !== "l.d l.r") throw new Error(`build: the GRR module imports ${names}; js/raw.mjs gives l.d and l.r`);' "$dir/localdp_client_bg.wasm"
  else
    bindings web "client/web/families/$family" localdp_client wasm/client --no-default-features --features "heap,$family"
    no_fmt_or_js_sys "$family"
    optimize "$dir/localdp_client_bg.wasm"
    node scripts/short-names.mjs "$dir/localdp_client_bg.wasm" "$dir/bindings.js"
  fi
  cp js/family.js "$dir/localdp.js"
  cp js/web/localdp.d.ts "$dir/"
done
node scripts/types.mjs "$out"/{,client/}{node,web}/bindings.d.ts "$out"/client/web/families/*/bindings.d.ts
# Entry points: the same wrappers over either module's bindings, and each
# module's Node ESM and bundler entries.
cp -r js/node js/web js/bundler "$out/"
cp js/node/localdp.js js/node/localdp.d.ts js/node/index.d.mts js/node/file-storage.cjs js/node/file-storage.d.cts "$out"/client/node/
cp js/web/* "$out"/client/web/
cp -r js/client/. "$out"/client/
# What a page loads without a bundler, minified (the sources in js/ and the
# Node entries stay as written).
node scripts/minify.mjs "$out"/{,client/}web/{localdp.js,messages.mjs,bindings.js} \
  "$out"/client/web/families/*/{localdp.js,messages.mjs,bindings.js} "$out"/client/web/families.js
# ...into which client.mjs and storage.mjs are bundled (their types stay).
rm "$out"/{,client/}web/{client,storage}.mjs "$out"/client/web/families/*/{client,storage}.mjs

echo "full module, localdp_bg.wasm: $(size "$out"/web/localdp_bg.wasm)"
client_sizes
# The npm README's table of the files localdp/client/web loads, as this
# build made them (the package's own build only).
if [ "$out" = dist ]; then
  rows=""
  # cells FILE...: the files' bytes summed, raw and gzipped, as table cells.
  cells() {
    local total
    total=$(size "$@")
    echo "${total%% bytes raw*} | $(echo "$total" | sed 's/.*, \([0-9]*\) bytes gzipped/\1/')"
  }
  for family in "${families[@]}"; do
    # shellcheck disable=SC2046
    rows+="| a \`$family\` metric | $(cells $(client_page "$family")) | $(cells $(family_page "$family")) |"$'\n'
  done
  # shellcheck disable=SC2046
  rows+="| every family (\`init()\`) | $(cells $(client_page)) | | |"$'\n'
  ROWS=$rows node -e '
    const fs = require("fs");
    const text = fs.readFileSync("js/README.md", "utf8");
    const table = "<!-- sizes: written by scripts/build.sh -->\n| what the page randomizes | `localdp/client/web`, raw | gzipped | `localdp/client/web/FAMILY`, raw | gzipped |\n|---|--:|--:|--:|--:|\n" + process.env.ROWS + "<!-- end of sizes -->";
    fs.writeFileSync("js/README.md", text.replace(/<!-- sizes: written by scripts\/build.sh -->[^]*?<!-- end of sizes -->/, () => table));'
fi
if [ "$WASM_ROUTE" = stable ]; then
  echo "route stable: std was not rebuilt, so these modules carry the prebuilt std's panic machinery, locations and messages (and no optimize_for_size std): larger than the shipped build; see docs/building.md"
fi
mkdir -p target && echo "$WASM_ROUTE" > "target/$(basename "$out").route"
