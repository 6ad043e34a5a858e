// Bundler entry (Vite, Rollup, webpack 5, esbuild): the web bindings. Importing
// it runs nothing (no top-level await: it builds into a worker of any format,
// and a worker's first message is not lost). `await Client.open(config)`
// instantiates the wasm itself; `new Client`, `new Aggregator`, `protocols()`,
// `compose()`, `shuffle()` and `plan()` need `await init()` (the default export) first,
// and say so when called before. The bundler emits localdp_bg.wasm as an
// asset (new URL(..., import.meta.url)).
export { default, Client, Aggregator, protocols, compose, shuffle, plan, indexedDBStorage, asyncStorage, chromeStorage } from '../web/localdp.js';
