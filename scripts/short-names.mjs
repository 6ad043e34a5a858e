// node scripts/short-names.mjs WASM BINDINGS...: gives the (optimized) wasm
// WASM one-letter import, export and module names (wasm-opt
// --minify-imports-and-exports-and-modules) and writes them into the
// wasm-bindgen bindings that load it (Node's and the web's share one wasm)
// and into WASM.d.ts. wasm-bindgen's names carry a 16-digit hash each, which
// gzip cannot shrink: a family's page loads about 1.2 KB less (wasm and JS,
// gzipped). Fails if the generated code no longer looks as expected (the
// wasm-bindgen version is pinned in Cargo.toml): every import is one key of
// the bindings' imports object, and every export the bindings use is read
// as `wasm.NAME`.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

const [wasmPath, ...bindings] = process.argv.slice(2);
const escape = (name) => name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const before = WebAssembly.Module.imports(new WebAssembly.Module(readFileSync(wasmPath)));
const map = JSON.parse(
  execFileSync('node_modules/.bin/wasm-opt', [wasmPath, '--minify-imports-and-exports-and-modules', '-o', wasmPath], { encoding: 'utf8' }),
);
const after = WebAssembly.Module.imports(new WebAssembly.Module(readFileSync(wasmPath)));
const modules = new Map(before.map((imp, i) => [imp.module, after[i].module]));

// (pattern, replacement, how many times it must occur: a number, or 'some'
// for an export that the bindings may not use at all)
const edits = [
  ...[...modules].map(([from, to]) => [new RegExp(`"${escape(from)}":`, 'g'), `"${to}":`, 1]),
  ...map.imports.map(([, from, to]) => [new RegExp(`(^|[\\s{,])${escape(from)}:`, 'gm'), `$1${to}:`, 1]),
  ...map.exports.map(([from, to]) => [new RegExp(`\\bwasm\\.${escape(from)}\\b`, 'g'), `wasm.${to}`, 'some']),
];
for (const file of bindings) {
  let text = readFileSync(file, 'utf8');
  for (const [pattern, to, count] of edits) {
    const found = text.match(pattern)?.length ?? 0;
    if (count !== 'some' && found !== count) throw new Error(`${file}: expected ${pattern} ${count} times, found ${found}`);
    text = text.replace(pattern, to);
  }
  const left = text.match(/\bwasm\.[A-Za-z_$][\w$]{2,}/);
  if (left) throw new Error(`${file}: ${left[0]} is not an export of ${wasmPath}`);
  writeFileSync(file, text);
}
// The raw exports' types, which wasm-bindgen writes beside the wasm.
const types = `${wasmPath.replace(/\.wasm$/, '')}.wasm.d.ts`;
if (existsSync(types)) {
  let text = readFileSync(types, 'utf8');
  for (const [from, to] of map.exports) text = text.replace(new RegExp(`^export const ${escape(from)}:`, 'm'), `export const ${to}:`);
  writeFileSync(types, text);
}
