export { Client, Aggregator, protocols, compose, shuffle, plan, indexedDBStorage, asyncStorage, chromeStorage } from '../web/localdp.js';
// init(): instantiates the wasm (once; later calls return the same promise).
// `Client.open` calls it itself; `new Client`, `new Aggregator`, `protocols()`,
// `compose()`, `shuffle()` and `plan()` need it first.
export { default } from '../web/localdp.js';
export type * from '../web/localdp.js';
