// Bundler entry (Vite, Rollup, webpack 5, esbuild): the web bindings,
// initialized with top-level await, so a plain import is ready to use.
// The bundler emits localdp_bg.wasm as an asset (new URL(..., import.meta.url)).
import init, { Client, Aggregator, protocols, plan, indexedDBStorage, asyncStorage, chromeStorage } from '../web/localdp.js';

await init();

export { Client, Aggregator, protocols, plan, indexedDBStorage, asyncStorage, chromeStorage };
