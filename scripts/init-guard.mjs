// node scripts/init-guard.mjs FILE...: makes wasm-bindgen's web bindings say
// what to call when they are used before the wasm is instantiated. Until
// init() (or initSync()) has run, their `wasm` is a stand-in whose every
// member throws that error, instead of `undefined`, whose members throw
// "Cannot read properties of undefined (reading '__wbindgen_malloc')".
// Fails if the generated code no longer looks as expected (the wasm-bindgen
// version is pinned in Cargo.toml).
import { readFileSync, writeFileSync } from 'node:fs';

const MESSAGE = 'localdp is not initialized: call `await init()` (the default export) first, or create the client with `await Client.open(config)`';
const EDITS = [
  [
    'let wasmModule, wasmInstance, wasm;',
    `/** The wasm's exports until init: each member throws, saying what to call. */
const UNINITIALIZED = new Proxy({}, { get() { throw new Error(${JSON.stringify(MESSAGE)}); } });
let wasmModule, wasmInstance, wasm = UNINITIALIZED;`,
    1,
  ],
  // init() and initSync() return early once instantiated.
  ['if (wasm !== undefined) return wasm;', 'if (wasm !== UNINITIALIZED) return wasm;', 2],
];

for (const file of process.argv.slice(2)) {
  let text = readFileSync(file, 'utf8');
  for (const [from, to, count] of EDITS) {
    const found = text.split(from).length - 1;
    if (found !== count) throw new Error(`${file}: expected ${JSON.stringify(from)} ${count} times, found ${found}`);
    text = text.replaceAll(from, to);
  }
  if (/\bwasm [!=]==? undefined/.test(text)) throw new Error(`${file}: another test of \`wasm\` against undefined`);
  writeFileSync(file, text);
}
