// Bundler entry of the client module (Vite, Rollup, webpack 5, esbuild): the
// web bindings, initialized with top-level await, so a plain import is
// ready to use. The bundler emits localdp_client_bg.wasm as an asset.
import init, { Client, indexedDBStorage, asyncStorage, chromeStorage } from '../web/localdp.js';

await init();

export { Client, indexedDBStorage, asyncStorage, chromeStorage };
