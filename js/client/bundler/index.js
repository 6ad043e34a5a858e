// Bundler entry of the client module (Vite, Rollup, webpack 5, esbuild): the
// web bindings. Importing it runs nothing (no top-level await: it builds into
// a worker of any format, and a worker's first message is not lost).
// `await Client.open(config)` instantiates the wasm itself; `new Client` needs
// `await init()` (the default export) first, and says so when called before.
// The bundler emits localdp_client_bg.wasm as an asset.
export { default, Client, indexedDBStorage, asyncStorage, chromeStorage } from '../web/localdp.js';
